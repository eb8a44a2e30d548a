package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi/upload/uploadtest"
	"github.com/drama-tts/drama/voices/clip"
	"github.com/drama-tts/drama/voices/transcribe"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

func server(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	New(Config{UploadDir: t.TempDir()}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestAssetsLoadNothingFromElsewhere holds the page to its own server:
// every script, style and link it names is one of its embedded assets.
func TestAssetsLoadNothingFromElsewhere(t *testing.T) {
	ref := regexp.MustCompile(`(?:src|href)="([^"]*)"`)
	page, _ := assets.ReadFile("assets/index.html")
	for _, m := range ref.FindAllStringSubmatch(string(page), -1) {
		u := m[1]
		switch {
		case u == "data:,":
		case strings.HasPrefix(u, "/ui/"):
			if _, err := fs.Stat(assets, "assets/"+strings.TrimPrefix(u, "/ui/")); err != nil {
				t.Errorf("index.html names %s, which is not embedded", u)
			}
		default:
			t.Errorf("index.html names %s: only embedded assets may be loaded", u)
		}
	}
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() {
			return nil
		}
		b, _ := assets.ReadFile(p)
		for _, bad := range []string{"http://", "https://", "@import", "url("} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s holds %q: the page loads nothing from elsewhere", p, bad)
			}
		}
		return nil
	})
}

func TestPageRoutes(t *testing.T) {
	srv := server(t)
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/", 200}, {"HEAD", "/", 200}, {"GET", "/ui/app.js", 200}, {"GET", "/ui/style.css", 200},
		{"GET", "/ui/index.html", 301}, {"GET", "/ui/missing.js", 404}, {"GET", "/other", 404}, {"POST", "/", 405},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.code)
		}
		if c.code == 200 && resp.Header.Get("Content-Security-Policy") != CSP {
			t.Errorf("%s %s: Content-Security-Policy %q", c.method, c.path, resp.Header.Get("Content-Security-Policy"))
		}
	}
}

func speech(t *testing.T, from, to float64) []byte {
	t.Helper()
	a, err := (clip.Decoder{}).Decode(context.Background(), "../../../voices/clip/testdata/speech.wav")
	if err != nil {
		t.Fatal(err)
	}
	x := a.Mono()[int(from*float64(a.Rate)):int(to*float64(a.Rate))]
	return clip.EncodeWAV(clip.Resample(x, a.Rate, clip.SampleRate), clip.SampleRate)
}

func check(t *testing.T, srv *httptest.Server, clips map[string][]byte, order ...string) (int, Checked) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, name := range order {
		w, _ := mw.CreateFormFile("clip", name)
		w.Write(clips[name])
	}
	mw.Close()
	resp, err := checkClient.Post(srv.URL+"/ui/clip-check", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c Checked
	json.NewDecoder(resp.Body).Decode(&c)
	return resp.StatusCode, c
}

// checkClient gives up on a check after a generous while, so that a check
// left waiting fails its test rather than hanging it.
var checkClient = &http.Client{Timeout: 30 * time.Second}

func TestClipCheck(t *testing.T) {
	srv := server(t)
	clips := map[string][]byte{
		"a.wav":   speech(t, 0.5, 5.85),
		"b.wav":   speech(t, 5.85, 10.45),
		"c.wav":   speech(t, 10.45, 15.33),
		"cut.wav": speech(t, 0.0, 2.925), // ends inside a word
		"bad.wav": []byte("RIFF....WAVEjunk"),
	}
	code, c := check(t, srv, clips, "a.wav", "b.wav", "c.wav")
	if code != 200 || c.Error != "" || len(c.Warnings) != 0 || len(c.Clips) != 3 || c.Clips[0].Seconds < 5 {
		t.Fatalf("good clips: %d %+v", code, c)
	}
	_, c = check(t, srv, clips, "cut.wav")
	if !hasWarning(c, clip.WarnEndsInSpeech) || !strings.Contains(c.Error, "too_short") {
		t.Fatalf("a short clip cut in a word: %+v", c)
	}
	_, c = check(t, srv, clips, "a.wav", "bad.wav")
	if !strings.HasPrefix(c.Error, "clip 2 (bad.wav): ") || strings.Contains(c.Error, os.TempDir()) {
		t.Fatalf("a broken clip: %+v", c)
	}
	if code, _ := check(t, srv, clips); code != 400 {
		t.Fatalf("no clips: %d", code)
	}
}

func hasWarning(c Checked, code string) bool {
	for _, w := range c.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

func TestClipCheckTranscribes(t *testing.T) {
	ts := transcribetest.New()
	defer ts.Close()
	tr := &transcribe.Client{URL: ts.URL}
	mux := http.NewServeMux()
	New(Config{UploadDir: t.TempDir(), Transcribe: tr.File}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for i, name := range []string{"a.wav", "b.wav", "c.wav"} {
		w, _ := mw.CreateFormFile("clip", name)
		w.Write(speech(t, []float64{0.5, 5.85, 10.45}[i], []float64{5.85, 10.45, 15.33}[i]))
		mw.WriteField("transcript", []string{"", "Typed words.", " "}[i])
	}
	mw.Close()
	resp, err := http.Post(srv.URL+"/ui/clip-check", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	var c Checked
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if !c.Transcription || len(c.Clips) != 3 || c.Clips[0].Transcript != "Words of a.wav." || c.Clips[1].Transcript != "" || c.Clips[2].Transcript != "Words of c.wav." {
		t.Fatalf("%+v", c)
	}
	if n := len(ts.Requests()); n != 2 {
		t.Fatalf("%d transcriptions, want 2 (the typed clip is not sent)", n)
	}
	ts.Text = func(string, []byte) (string, int) { return "", 500 }
	_, c = check(t, srv, map[string][]byte{"a.wav": speech(t, 0.5, 5.85)}, "a.wav")
	if c.Clips[0].Transcript != "" || !strings.Contains(c.Clips[0].TranscriptError, "500") {
		t.Fatalf("a failing server: %+v", c.Clips[0])
	}
}

func TestClipCheckLimits(t *testing.T) {
	mux := http.NewServeMux()
	New(Config{UploadDir: t.TempDir(), MaxClipBytes: 1000, MaxRequestBytes: 5000}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	code, c := check(t, srv, map[string][]byte{"big.wav": make([]byte, 1001)}, "big.wav")
	if code != 200 || !strings.Contains(c.Error, "clip 1 (big.wav): over 1000 bytes") {
		t.Fatalf("a clip over the limit: %d %+v", code, c)
	}
	resp, err := http.Post(srv.URL+"/ui/clip-check", "multipart/form-data; boundary=x", bytes.NewReader(make([]byte, 5001)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a request over the limit: %d", resp.StatusCode)
	}
}

// form is a check's multipart body of one clip.
func form(t *testing.T, name string, data []byte) (string, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, _ := mw.CreateFormFile("clip", name)
	w.Write(data)
	mw.Close()
	return mw.FormDataContentType(), body.Bytes()
}

// TestClipCheckSlowUploadDoesNotHoldTheSlot plays a slow-loris uploader
// against the page's clip check: while its clip trickles in a byte at a
// time, a normal check gets the check slot at once (here with no wait for
// it at all) and is answered; the slow one is answered 408 naming
// --upload-timeout before its body is sent, and no file is left.
func TestClipCheckSlowUploadDoesNotHoldTheSlot(t *testing.T) {
	uploads := t.TempDir()
	mux := http.NewServeMux()
	New(Config{UploadDir: uploads, UploadTimeout: 2 * time.Second, StallTimeout: 30 * time.Second, Wait: -1}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	good := speech(t, 0.5, 5.85)
	ct, body := form(t, "slow.wav", good[:4000])
	slow := uploadtest.Slow(t.Context(), srv.Listener.Addr().String(), "/ui/clip-check", ct, body, 10*time.Millisecond)
	enginetest.WaitFor(t, func() bool { ents, _ := os.ReadDir(uploads); return len(ents) == 1 })
	if code, c := check(t, srv, map[string][]byte{"a.wav": good}, "a.wav"); code != 200 || len(c.Clips) != 1 || c.Clips[0].Seconds < 5 {
		t.Fatalf("a normal check while a slow upload trickles in: %d %+v", code, c)
	}
	r := <-slow
	if r.Status != http.StatusRequestTimeout || !strings.Contains(r.Body, `"code":"upload_timeout"`) || !strings.Contains(r.Body, "--upload-timeout") || r.Sent == len(body) {
		t.Fatalf("the slow upload: %d %s (%d of %d bytes sent) %v, want a 408 naming --upload-timeout before it is all sent", r.Status, r.Body, r.Sent, len(body), r.Err)
	}
	enginetest.WaitFor(t, func() bool { ents, _ := os.ReadDir(uploads); return len(ents) == 0 })
}

// TestClipCheckWaitIsBounded: while a check runs (here held in its
// transcription), another waits for it at most Config.Wait and is then
// answered 429 with Retry-After; once the first is done, checks run again.
func TestClipCheckWaitIsBounded(t *testing.T) {
	uploads := t.TempDir()
	inside, release := make(chan struct{}, 1), make(chan struct{})
	hold := func(ctx context.Context, path, name string) (string, error) {
		select {
		case inside <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "Words.", nil
	}
	mux := http.NewServeMux()
	New(Config{UploadDir: uploads, Wait: 200 * time.Millisecond, Transcribe: hold}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	clips := map[string][]byte{"a.wav": speech(t, 0.5, 5.85)}
	ct, body := form(t, "a.wav", clips["a.wav"]) // no transcript: the check transcribes it
	first := make(chan int, 1)
	go func() {
		resp, err := checkClient.Post(srv.URL+"/ui/clip-check", ct, bytes.NewReader(body))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-inside
	resp, err := checkClient.Post(srv.URL+"/ui/clip-check", ct, bytes.NewReader(body))
	if err != nil {
		close(release)
		t.Fatalf("a check while one runs: %v, want a 429 once the wait is over", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(msg), `"code":"check_busy"`) {
		t.Errorf("a check while one runs: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), msg)
	}
	close(release)
	if code := <-first; code != 200 {
		t.Fatalf("the first check: %d", code)
	}
	if code, c := check(t, srv, clips, "a.wav"); code != 200 || len(c.Clips) != 1 {
		t.Fatalf("a check once the first is done: %d %+v", code, c)
	}
	enginetest.WaitFor(t, func() bool { ents, _ := os.ReadDir(uploads); return len(ents) == 0 })
}
