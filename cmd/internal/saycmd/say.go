// Package saycmd holds drama say, the client of drama serve.
package saycmd

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/internal/httpsafe"
	"github.com/drama-tts/drama/internal/model"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
)

// Options are the inputs of `drama say`.
type Options struct {
	F            *cmdutil.Factory
	Text         string
	Voice        string
	Instructions string
	Output       string
	Server       string
	Force        bool
	// Live speaks standard input as it comes through /v1/tts/live;
	// Format is then wav or pcm.
	Live       bool
	Format     string
	HTTPClient *http.Client
}

// maxSayStdin is the most drama say reads from standard input: the API
// takes 4096 characters.
const maxSayStdin = 64 << 10

// NewCmd returns `drama say`.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "say TEXT",
		Short: "Speak a text through a running drama serve and save it as WAV",
		Long: strings.TrimSpace(`
Send TEXT to a running drama serve, stream the audio into a WAV file, and
print the time to the first audio and the real-time factor. A stream that
ends without its terminating chunk is reported as an error and no file is
left behind. TEXT "-" reads the text from standard input.

--live speaks standard input as it comes (TEXT is "-"): the text goes to
drama serve's /v1/tts/live in pieces as it is read (an LLM's output piped
in), each sentence is spoken as soon as it is complete, and the audio is
written as it arrives: into the WAV file, or with -o - to standard output
(WAV, or raw PCM with --format pcm: 16-bit little-endian, 44,100 Hz, mono)
for a player such as aplay or ffplay.

--server takes drama serve's address as http://HOST:PORT, HOST:PORT, or
an OpenAI-style base URL ending in /v1. An existing output file is kept
unless --force is given.

` + cmdutil.APIKeyHelp + `
The key needs scope speak.`),
		Example: strings.TrimSpace(`
$ drama say "Hello there." -o hello.wav
$ echo "Read from a pipe." | drama say - -o pipe.wav --force
$ drama say "[whispering] I'm fine." --server 127.0.0.1:8793 -o whisper.wav --force
$ printf 'First words. Then more.\n' | drama say --live - -o live.wav --force
$ printf 'Spoken as it comes.\n' | drama say --live - -o - --format pcm > live.pcm`),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Text = args[0]
			if opts.Live || opts.Format != "wav" {
				if err := checkLiveFlags(opts); err != nil {
					return err
				}
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return runSayLive(cmd.Context(), opts)
			}
			if opts.Text == "-" {
				b, err := io.ReadAll(io.LimitReader(f.IO.In, maxSayStdin+1))
				if err != nil {
					return fmt.Errorf("read standard input: %w", err)
				}
				if len(b) > maxSayStdin {
					return cmdutil.FlagErrorf("standard input: want at most %d bytes of text", maxSayStdin)
				}
				opts.Text = strings.TrimSpace(string(b))
			}
			if strings.TrimSpace(opts.Text) == "" {
				return cmdutil.FlagErrorf("TEXT is empty")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Voice, "voice", "", "voice id (GET /v1/voices lists them)")
	cmd.Flags().StringVar(&opts.Instructions, "instructions", "", "a direction spoken in brackets, e.g. \"whispering, nervous\"")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "speech.wav", "WAV file to write (with --live, - writes to standard output)")
	cmd.Flags().BoolVar(&opts.Live, "live", false, "speak standard input as it comes, sentence by sentence (TEXT -)")
	cmd.Flags().StringVar(&opts.Format, "format", "wav", "with --live: wav, or pcm (raw 16-bit 44,100 Hz mono)")
	cmd.Flags().StringVar(&opts.Server, "server", "http://"+serverec.DefaultAddr, "drama serve's URL (HOST:PORT and a base URL ending in /v1 work too)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite an existing output file")
	return cmd
}

// speechURL turns --server into the speech route's URL: a missing scheme
// is http, and an OpenAI-style base URL's /v1 is not doubled.
func speechURL(server string) (string, error) {
	s := strings.TrimSpace(server)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", cmdutil.FlagErrorf("--server %q: want http://HOST:PORT, HOST:PORT or a base URL ending in /v1, e.g. http://%s", server, serverec.DefaultAddr)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path = p + "/v1/audio/speech"
	return u.String(), nil
}

func run(ctx context.Context, opts *Options) error {
	endpoint, err := speechURL(opts.Server)
	if err != nil {
		return err
	}
	if !opts.Force {
		if _, err := os.Stat(opts.Output); err == nil {
			return cmdutil.FlagErrorf("output %s exists: remove it, choose another -o, or pass --force", opts.Output)
		}
	}
	body, _ := json.Marshal(map[string]any{"input": opts.Text, "voice": opts.Voice, "instructions": opts.Instructions,
		"response_format": "wav", "stream": true})
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint, bytes.NewReader(body))
	if err != nil {
		return cmdutil.FlagErrorf("--server %q: %v", opts.Server, err)
	}
	req.Header.Set("Content-Type", "application/json")
	key := opts.F.APIKey()
	cmdutil.SetAPIKey(req, key)
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{CheckRedirect: httpsafe.CheckRedirect}
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("reach drama serve at %s: %w (is it running? start it with `drama serve`)", opts.Server, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiFailure(resp, key != "")
	}
	res, err := saveStream(resp, opts.Output, start)
	if err != nil {
		return err
	}
	return report(opts.F, opts.Output, res)
}

// apiFailure describes drama serve's refusal, with what to do about a
// missing or insufficient API key; keySet says whether one was sent.
func apiFailure(resp *http.Response, keySet bool) error {
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := fmt.Sprintf("drama serve answered %s", resp.Status)
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		msg = fmt.Sprintf("drama serve answered %d: %s", resp.StatusCode, e.Error.Message)
	}
	if advice := cmdutil.AuthAdvice(resp.StatusCode, cmdutil.ChallengeScope(resp.Header.Get("WWW-Authenticate"), "speak"), keySet); advice != "" {
		msg += "; " + advice
	}
	return errors.New(msg)
}

type sayResult struct {
	firstAudio time.Duration
	total      time.Duration
	pcmBytes   int64
	reason     string
}

// saveStream writes the streamed WAV to a temporary file, fixes its sizes,
// syncs and renames it (atomicfile.Write). A stream cut short leaves nothing
// behind.
func saveStream(resp *http.Response, out string, start time.Time) (*sayResult, error) {
	res := &sayResult{}
	err := atomicfile.Write(out, 0o644, func(tmp *os.File) error {
		buf := make([]byte, 32<<10)
		var n int64
		for {
			k, rerr := resp.Body.Read(buf)
			if k > 0 {
				if res.firstAudio == 0 {
					res.firstAudio = time.Since(start)
				}
				if _, err := tmp.Write(buf[:k]); err != nil {
					return err
				}
				n += int64(k)
			}
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				return fmt.Errorf("the audio stream broke off after %d bytes (%v): the speech is incomplete, nothing was saved", n, rerr)
			}
		}
		res.total = time.Since(start)
		res.reason = resp.Trailer.Get("X-Finish-Reason")
		if n < 44 {
			return fmt.Errorf("drama serve sent %d bytes, not a WAV", n)
		}
		res.pcmBytes = n - 44
		return fixWAVSizes(tmp, res.pcmBytes)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// fixWAVSizes replaces a stream's 0xFFFFFFFF sizes with the real ones.
func fixWAVSizes(f *os.File, data int64) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(36+data))
	if _, err := f.WriteAt(b[:], 4); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(b[:], uint32(data))
	_, err := f.WriteAt(b[:], 40)
	return err
}

func report(f *cmdutil.Factory, out string, r *sayResult) error {
	audio := time.Duration(r.pcmBytes/2) * time.Second / model.SampleRate
	rtf := 0.0
	if audio > 0 {
		rtf = r.total.Seconds() / audio.Seconds()
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, map[string]any{"file": out, "first_audio_seconds": r.firstAudio.Seconds(),
			"audio_seconds": audio.Seconds(), "real_time_factor": rtf, "finish_reason": r.reason})
	}
	f.Infof("wrote %s: %.2f s of audio, first audio after %.3f s, real-time factor %.3f, finish reason %s",
		out, audio.Seconds(), r.firstAudio.Seconds(), rtf, r.reason)
	return nil
}
