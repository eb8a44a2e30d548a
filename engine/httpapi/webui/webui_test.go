package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

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
	resp, err := http.Post(srv.URL+"/ui/clip-check", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c Checked
	json.NewDecoder(resp.Body).Decode(&c)
	return resp.StatusCode, c
}

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
