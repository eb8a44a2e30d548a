package servecmd

import (
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
)

// sayServer serves the API over the fake engine and records the inputs.
func sayServer(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	api := fakeAPI(t, enginetest.NewFake(), httpapi.Config{}).Handler()
	var inputs []string
	ts := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	return cmdtest.Execute(NewCmdSay(f, nil), args...)
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
