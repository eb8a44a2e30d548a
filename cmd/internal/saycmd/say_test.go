package saycmd

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/httpapitest"
)

// sayServer serves the API over the fake engine and records the inputs.
func sayServer(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	api := httpapitest.Fake(t, enginetest.NewFake(), httpapi.Config{}).Handler()
	var inputs []string
	ts := httpapitest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct{ Input string }
		json.Unmarshal(body, &req)
		inputs = append(inputs, r.URL.Path+" "+req.Input)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		api.ServeHTTP(w, r)
	}))
	return ts, &inputs
}

func runSayArgs(t *testing.T, stdin string, args ...string) error {
	t.Helper()
	ios, in, _, _ := cmdtest.IOStreams()
	in.WriteString(stdin)
	f := cmdtest.Factory(ios)
	return cmdtest.Execute(NewCmd(f, nil), args...)
}

func TestSayServerForms(t *testing.T) {
	ts, inputs := sayServer(t)
	hostPort := strings.TrimPrefix(ts.URL, "http://")
	dir := t.TempDir()
	for i, server := range []string{ts.URL, hostPort, ts.URL + "/v1", ts.URL + "/v1/", hostPort + "/v1"} {
		out := filepath.Join(dir, "s"+string(rune('a'+i))+".wav")
		if err := runSayArgs(t, "", "Hello.", "--server", server, "-o", out); err != nil {
			t.Errorf("--server %s: %v", server, err)
		}
	}
	for _, got := range *inputs {
		if got != "/v1/audio/speech Hello." {
			t.Errorf("request %q, want /v1/audio/speech", got)
		}
	}
	if err := runSayArgs(t, "", "Hello.", "--server", "ftp://x", "-o", filepath.Join(dir, "x.wav")); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Errorf("ftp server: %v", err)
	}
}

func TestSayReadsStandardInput(t *testing.T) {
	ts, inputs := sayServer(t)
	out := filepath.Join(t.TempDir(), "pipe.wav")
	if err := runSayArgs(t, "Read from a pipe.\n", "-", "--server", ts.URL, "-o", out); err != nil {
		t.Fatal(err)
	}
	if len(*inputs) != 1 || (*inputs)[0] != "/v1/audio/speech Read from a pipe." {
		t.Fatalf("inputs %q", *inputs)
	}
	if err := runSayArgs(t, "  \n", "-", "--server", ts.URL, "-o", out+"2"); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Fatalf("empty standard input: %v", err)
	}
}

func TestSayKeepsAnExistingFileWithoutForce(t *testing.T) {
	ts, inputs := sayServer(t)
	out := filepath.Join(t.TempDir(), "hello.wav")
	os.WriteFile(out, []byte("mine"), 0o644)
	err := runSayArgs(t, "", "Hello.", "--server", ts.URL, "-o", out)
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "exists: remove it, choose another -o, or pass --force") {
		t.Fatalf("err = %v", err)
	}
	if data, _ := os.ReadFile(out); string(data) != "mine" || len(*inputs) != 0 {
		t.Fatal("the file must be kept and nothing sent")
	}
	if err := runSayArgs(t, "", "Hello.", "--server", ts.URL, "-o", out, "--force"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(out); string(data[:4]) != "RIFF" {
		t.Fatal("--force overwrites")
	}
}

// requireKey answers 401 as drama serve with API keys does to a request
// without "Authorization: Bearer key", and 403 to one with forbidden.
func requireKey(key, forbidden string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer " + key:
			next.ServeHTTP(w, r)
		case "Bearer " + forbidden:
			w.Header().Set("WWW-Authenticate", `Bearer realm="drama serve", error="insufficient_scope", scope="speak"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"message":"the key lacks scope speak","type":"permission_error"}}`))
		default:
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"a valid API key is required","type":"invalid_request_error","code":"invalid_api_key"}}`))
		}
	})
}

func TestSaySendsAPIKey(t *testing.T) {
	api := httpapitest.Fake(t, enginetest.NewFake(), httpapi.Config{}).Handler()
	ts := httpapitest.Serve(t, requireKey("dk-good", "dk-voices-only", api))
	dir := t.TempDir()
	say := func(key string) error {
		ios, _, _, _ := cmdtest.IOStreams()
		f := cmdtest.Factory(ios, cmdutil.APIKeyEnv, key)
		return cmdtest.Execute(NewCmd(f, nil), "Hello.", "--server", ts.URL, "-o", filepath.Join(dir, key+".wav"))
	}
	if err := say("dk-good"); err != nil {
		t.Fatalf("DRAMA_API_KEY set: %v", err)
	}
	for key, want := range map[string]string{
		"":               "requires an API key: set DRAMA_API_KEY to one of its keys with scope speak",
		"dk-wrong":       "does not accept the key in DRAMA_API_KEY",
		"dk-voices-only": "lacks the scope this request needs: set DRAMA_API_KEY to a key with scope speak",
	} {
		err := say(key)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DRAMA_API_KEY=%q: want an error saying %q, got %v", key, want, err)
		}
	}
}

// drama serve behind a proxy that redirects the speech request to another
// port of the same host: the key stays with the origin it was given for.
func TestSayKeyNotSentToOtherPort(t *testing.T) {
	var leaked []string
	other := httpapitest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			leaked = append(leaked, a)
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	ts := httpapitest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, cmdutil.APIKeyEnv, "dk-secret")
	_ = cmdtest.Execute(NewCmd(f, nil), "Hello.", "--server", ts.URL, "-o", filepath.Join(t.TempDir(), "x.wav"))
	if len(leaked) != 0 {
		t.Errorf("the other port got %q", leaked)
	}
}

func TestSaySavesAWAVWithRealSizes(t *testing.T) {
	ts := httpapitest.Serve(t, httpapitest.Fake(t, enginetest.NewFake(), httpapi.Config{}).Handler())
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	outFile := filepath.Join(t.TempDir(), "hello.wav")
	if err := run(context.Background(), &Options{F: f, Text: "Hello there.", Voice: "narrator", Output: outFile, Server: ts.URL}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(data[40:]) != uint32(len(data)-44) || binary.LittleEndian.Uint32(data[4:]) != uint32(len(data)-8) {
		t.Fatal("the saved WAV must carry its real sizes")
	}
	if out.Len() != 0 || !strings.Contains(errOut.String(), "real-time factor") || !strings.Contains(errOut.String(), "finish reason stop") {
		t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
	}
}

func TestSayRefusesATruncatedStream(t *testing.T) {
	fake := enginetest.NewFake()
	fake.FailAfterFirstChunk = true
	ts := httpapitest.Serve(t, httpapitest.Fake(t, fake, httpapi.Config{}).Handler())
	ios, _, _, _ := cmdtest.IOStreams()
	dir := t.TempDir()
	err := run(context.Background(), &Options{F: cmdtest.Factory(ios), Text: strings.Repeat("long words ", 50), Output: filepath.Join(dir, "x.wav"), Server: ts.URL})
	if err == nil || !strings.Contains(err.Error(), "broke off") {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a truncated stream left files: %v", ents)
	}
	err = run(context.Background(), &Options{F: cmdtest.Factory(ios), Text: "x", Voice: "nobody", Output: filepath.Join(dir, "y.wav"), Server: ts.URL})
	if err == nil || !strings.Contains(err.Error(), "unknown voice") {
		t.Fatalf("API error: %v", err)
	}
}
