package encodecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/clone"
	"github.com/drama-tts/drama/internal/httpsafe"
)

// serverClient sends a clone to drama serve; a redirect off the server's
// origin carries no key.
var serverClient = &http.Client{CheckRedirect: httpsafe.CheckRedirect}

// serverTimeout bounds a clone on a server: encoding takes about 5 s a
// reference on a GPU, and the server may queue it.
const serverTimeout = 10 * time.Minute

// cloneOnServer sends the prepared references with their transcripts and
// the consent to a running drama serve (POST /v1/voices), which encodes
// them, checks the codes and saves the voice in its own root.
func cloneOnServer(ctx context.Context, opts *Options, id string, refs []clone.Reference) error {
	body, ctype, err := cloneForm(opts, id, refs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, serverTimeout)
	defer cancel()
	url := strings.TrimRight(opts.Server, "/") + "/v1/voices"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return cmdutil.FlagErrorf("--server: %v", err)
	}
	req.Header.Set("Content-Type", ctype)
	key := opts.F.APIKey()
	cmdutil.SetAPIKey(req, key)
	resp, err := serverClient.Do(req)
	if err != nil {
		return cmdutil.EngineError(fmt.Errorf("clone on %s: %w", opts.Server, err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return cmdutil.EngineError(fmt.Errorf("clone on %s: %w", opts.Server, err))
	}
	if advice := cmdutil.AuthAdvice(resp.StatusCode, cmdutil.ChallengeScope(resp.Header.Get("WWW-Authenticate"), "voices"), key != ""); advice != "" {
		return fmt.Errorf("clone on %s: %s: %s; %s", opts.Server, resp.Status, serverMessage(data), advice)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return cmdutil.EngineError(fmt.Errorf("clone on %s: %s: %s", opts.Server, resp.Status, serverMessage(data)))
	}
	return printServerResult(opts, data)
}

func cloneForm(opts *Options, id string, refs []clone.Reference) (io.Reader, string, error) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fields := [][2]string{{"id", id}, {"name", strings.TrimSpace(opts.Name)}, {"source", opts.Source},
		{"consent_who", strings.TrimSpace(opts.Who)}, {"consent_statement", strings.TrimSpace(opts.Statement)}}
	for _, kv := range fields {
		if err := w.WriteField(kv[0], kv[1]); err != nil {
			return nil, "", err
		}
	}
	for i, r := range refs {
		part, err := w.CreateFormFile("clip", clone.ClipID(i)+".wav")
		if err != nil {
			return nil, "", err
		}
		if _, err := part.Write(r.WAV); err != nil {
			return nil, "", err
		}
		if err := w.WriteField("transcript", r.Text); err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return &b, w.FormDataContentType(), nil
}

// serverMessage returns the message of an OpenAI-style error body, or the
// body itself.
func serverMessage(data []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

// serverVoice is the voice a server reports after a clone.
type serverVoice struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Origin     string  `json:"origin"`
	Source     string  `json:"source,omitempty"`
	References int     `json:"references"`
	Frames     int     `json:"frames"`
	Seconds    float64 `json:"seconds"`
}

func printServerResult(opts *Options, data []byte) error {
	f := opts.F
	var v serverVoice
	if err := json.Unmarshal(data, &v); err != nil || v.ID == "" {
		return cmdutil.EngineError(fmt.Errorf("clone on %s: the reply is not a voice: %s", opts.Server, serverMessage(data)))
	}
	f.Infof("the server saved voice %s (%d references, %.1f s)", v.ID, v.References, v.Seconds)
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, v)
	}
	t := cmdutil.NewTable(f.IO, "id", "name", "source", "references", "frames", "server")
	t.AddRow(v.ID, v.Name, v.Source, fmt.Sprint(v.References), fmt.Sprint(v.Frames), opts.Server)
	return t.Render()
}
