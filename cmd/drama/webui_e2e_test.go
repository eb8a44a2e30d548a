package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/realclient"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

// startServeRoot runs drama serve on the stand-in with root as its root and
// env added, and waits until it is ready.
func startServeRoot(t *testing.T, root string, env []string, extra ...string) *server {
	t.Helper()
	return launchServe(t, "", root, env, extra...)
}

// artifactDir is $DRAMA_ARTIFACTS/<test> when set (kept), else a
// directory of the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("DRAMA_ARTIFACTS"); d != "" {
		dir := filepath.Join(d, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// speechClips cuts three utterances of the speech fixture, each with the
// silence around it, into clips take1.wav to take3.wav.
func speechClips(t *testing.T) []string {
	t.Helper()
	a, err := (clip.Decoder{}).Decode(context.Background(), "../../voices/clip/testdata/speech.wav")
	if err != nil {
		t.Fatal(err)
	}
	x := a.Mono()
	dir := t.TempDir()
	var clips []string
	for i, span := range [][2]float64{{0.5, 5.85}, {5.85, 10.45}, {10.45, 15.33}} {
		p := filepath.Join(dir, fmt.Sprintf("take%d.wav", i+1))
		cut := x[int(span[0]*float64(a.Rate)):int(span[1]*float64(a.Rate))]
		if err := os.WriteFile(p, clip.EncodeWAV(clip.Resample(cut, a.Rate, clip.SampleRate), clip.SampleRate), 0o644); err != nil {
			t.Fatal(err)
		}
		clips = append(clips, p)
	}
	return clips
}

// TestWebPageInChromium drives the page at / in Debian's chromium against
// drama serve on the paced stand-in: audio heard before the synthesis
// ends, a failed synthesis shown as an error, a clone made, spoken and
// deleted, a recording made, no console error, nothing loaded from
// elsewhere, and a screenshot kept.
func TestWebPageInChromium(t *testing.T) { webPageInChromium(t, "") }

// TestWebPageInChromiumWithKey drives the page as TestWebPageInChromium
// does, against a drama serve that asks for API keys: the page asks for
// the key, refuses a wrong one, keeps the right one for the tab alone and
// sends it with every request, and every tab works with it.
func TestWebPageInChromiumWithKey(t *testing.T) { webPageInChromium(t, "page-0123456789abcdef0123") }

func webPageInChromium(t *testing.T, key string) {
	browser := realclient.Playwright(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "full"), 0o755)
	os.WriteFile(filepath.Join(root, "full", "codec.pth"), []byte("stand-in codec"), 0o644)
	// the synthesis takes as long as its audio lasts, so playback that
	// waited for the whole reply would show nothing played before the end
	// the last clip goes without its words, for the transcription server
	ts := transcribetest.New()
	defer ts.Close()
	extra := []string{"--transcribe-url", ts.URL}
	env := []string{"DRAMA_WEBUI_TRANSCRIPT=Words of take3.wav."}
	if key != "" {
		extra = append(extra, "--api-key-file", writeKeyFile(t, key+" page admin\n"))
		env = append(env, "DRAMA_WEBUI_KEY="+key)
	}
	s := startServeRoot(t, root, []string{"TENSORFOLD_STANDIN_RTF=1"}, extra...)

	clips := speechClips(t)

	art := artifactDir(t)
	res := browser.Run(context.Background(), 3*time.Minute, env, "scripts/conformance/webui.mjs", append([]string{s.url, art}, clips...)...)
	t.Logf("page: %s", strings.TrimSpace(res.Stdout))
	if res.Err != nil {
		t.Fatalf("%v\n%s\nserver:\n%s", res.Err, res.Stdout, s.stderr)
	}
	var found struct {
		PlayedBeforeEnd float64 `json:"played_before_end_s"`
		Screenshot      string  `json:"screenshot"`
		FinishReason    string  `json:"finish_reason"`
		KeyedRequests   int     `json:"keyed_requests"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &found); err != nil {
		t.Fatalf("page findings: %v: %q", err, res.Stdout)
	}
	if found.PlayedBeforeEnd <= 0 || found.FinishReason != "stop" || (key != "") != (found.KeyedRequests > 0) {
		t.Fatalf("findings: %+v", found)
	}
	if r := ts.Requests(); len(r) != 1 || r[0].Filename != "take3.wav" {
		t.Fatalf("transcriptions: %+v, want take3.wav alone", r)
	}
	if st, err := os.Stat(found.Screenshot); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("screenshot: %s", found.Screenshot)
	// the page's clone is gone from the server too
	req, _ := http.NewRequest("GET", s.url+"/v1/voices", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(body), "page-test") {
		t.Fatalf("the deleted clone is still listed: %d %s", resp.StatusCode, body)
	}
}

// TestWebPageServed checks what the page is served with: the exact path,
// HEAD, the assets, a policy that forbids loading from elsewhere, and a
// page of another origin refused as for every route.
func TestWebPageServed(t *testing.T) {
	s := startServe(t)
	for _, c := range []struct {
		method, path, ctype string
		code                int
	}{
		{"GET", "/", "text/html; charset=utf-8", 200},
		{"HEAD", "/", "text/html; charset=utf-8", 200},
		{"GET", "/ui/app.js", "text/javascript; charset=utf-8", 200},
		{"GET", "/ui/style.css", "text/css; charset=utf-8", 200},
		{"GET", "/ui/nothing.js", "application/json", 404},
	} {
		req, _ := http.NewRequest(c.method, s.url+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != c.ctype {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.code, c.ctype)
		}
		if c.code == 200 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s %s: no Content-Security-Policy", c.method, c.path)
		}
	}
	req, _ := http.NewRequest("GET", s.url+"/", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a page of another site got %d for /, want 403", resp.StatusCode)
	}
}

// TestServeCloneTranscribes sends clips without their words to POST
// /v1/voices: with --transcribe-url they are transcribed there, without
// it the clone is refused, naming the flag.
func TestServeCloneTranscribes(t *testing.T) {
	clips := speechClips(t)
	form := func() (io.Reader, string) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.WriteField("name", "Heard")
		mw.WriteField("source", "synthetic")
		for _, c := range clips {
			w, _ := mw.CreateFormFile("clip", filepath.Base(c))
			data, _ := os.ReadFile(c)
			w.Write(data)
		}
		mw.Close()
		return &b, mw.FormDataContentType()
	}
	for _, withServer := range []bool{false, true} {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "full"), 0o755)
		os.WriteFile(filepath.Join(root, "full", "codec.pth"), []byte("stand-in codec"), 0o644)
		ts := transcribetest.New()
		var extra []string
		if withServer {
			extra = []string{"--transcribe-url", ts.URL}
		}
		s := startServeRoot(t, root, nil, extra...)
		body, ct := form()
		resp, err := http.Post(s.url+"/v1/voices", ct, body)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !withServer {
			if resp.StatusCode != 400 || !strings.Contains(string(msg), "no transcript") || !strings.Contains(string(msg), "--transcribe-url") {
				t.Fatalf("without a transcription server: %d %s", resp.StatusCode, msg)
			}
			s.stop(t)
			ts.Close()
			continue
		}
		if resp.StatusCode != 201 {
			t.Fatalf("with a transcription server: %d %s\n%s", resp.StatusCode, msg, s.stderr)
		}
		v, err := voices.ReadFile(filepath.Join(root, "voices", "heard.json"), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range v.References {
			if want := fmt.Sprintf("Words of take%d.wav.", i+1); r.Text != want {
				t.Errorf("reference %d: %q, want %q", i, r.Text, want)
			}
		}
		s.stop(t)
		ts.Close()
	}
}
