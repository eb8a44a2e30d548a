package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/realclient"
	"github.com/drama-tts/drama/engine/enginetest"
)

const (
	e2eOpsKey   = "ops-0123456789abcdef0123"
	e2eAppKey   = "app-0123456789abcdef0123"
	e2eEnvKey   = "env-0123456789abcdef0123"
	e2eFreshKey = "new-0123456789abcdef0123"
)

// writeKeyFile writes a key file of mode 0600 and returns its path.
func writeKeyFile(t testing.TB, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// keyedCall sends method path to s with the headers (name, value pairs)
// and returns the status, the headers and the body.
func keyedCall(t *testing.T, s *server, method, path string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestServeAPIKeys runs drama serve with DRAMA_API_KEY and --api-key-file
// and plays a client without the key, with a wrong one and with one short
// of scope: 401 in OpenAI's error shape with WWW-Authenticate: Bearer, 403
// naming the scope; the probes open; the key file re-read on SIGHUP, a bad
// file on reload keeping the keys in force; no key in the log.
func TestServeAPIKeys(t *testing.T) {
	file := writeKeyFile(t, "# the operators and the app\n"+e2eOpsKey+" ops admin\n"+e2eAppKey+" app speak\n")
	s := startServeEnv(t, []string{"DRAMA_API_KEY=" + e2eEnvKey}, "--api-key-file", file)
	for _, c := range []struct {
		name    string
		method  string
		path    string
		headers []string
		status  int
		code    string
		words   string
	}{
		{"no key", "GET", "/v1/models", nil, 401, "invalid_api_key", "needs an API key"},
		{"wrong key", "GET", "/v1/models", []string{"Authorization", "Bearer " + e2eOpsKey + "x"}, 401, "invalid_api_key", "not one this server takes"},
		{"wrong X-Api-Key", "POST", "/v1/audio/speech", []string{"X-Api-Key", "nope"}, 401, "invalid_api_key", ""},
		{"speak key on /metrics", "GET", "/metrics", []string{"Authorization", "Bearer " + e2eAppKey}, 403, "insufficient_scope", "needs scope admin"},
		{"speak key deleting", "DELETE", "/v1/voices/x", []string{"X-Api-Key", e2eAppKey}, 403, "insufficient_scope", "needs scope voices"},
		{"ops key", "GET", "/v1/voices", []string{"Authorization", "Bearer " + e2eOpsKey}, 200, "", ""},
		{"ops key on /metrics", "GET", "/metrics", []string{"Authorization", "Bearer " + e2eOpsKey}, 200, "", ""},
		{"environment's key", "GET", "/metrics", []string{"X-Api-Key", e2eEnvKey}, 200, "", ""},
		{"speak key", "GET", "/v1/models", []string{"Authorization", "Bearer " + e2eAppKey}, 200, "", ""},
		{"health", "GET", "/health", nil, 200, "", ""},
		{"ready", "GET", "/ready", nil, 200, "", ""},
		{"the page's shell", "GET", "/", nil, 200, "", ""},
	} {
		status, h, body := keyedCall(t, s, c.method, c.path, c.headers...)
		if status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, status, body, c.status)
			continue
		}
		if c.code == "" {
			continue
		}
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != c.code || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, c.words) {
			t.Errorf("%s: %s, want OpenAI's error shape with code %s saying %q", c.name, body, c.code, c.words)
		}
		if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q, want Bearer", c.name, h.Get("WWW-Authenticate"))
		}
	}

	// SIGHUP re-reads the file: the new key works, the old file's keys are
	// gone, the environment's key stays
	if err := os.WriteFile(file, []byte(e2eFreshKey+" rotated admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !enginetest.Within(10*time.Second, func() bool {
		status, _, _ := keyedCall(t, s, "GET", "/v1/models", "X-Api-Key", e2eFreshKey)
		return status == 200
	}) {
		t.Fatalf("the rotated key is not taken 10 s after SIGHUP\n%s", s.stderr)
	}
	for key, want := range map[string]int{e2eOpsKey: 401, e2eAppKey: 401, e2eEnvKey: 200} {
		if status, _, _ := keyedCall(t, s, "GET", "/v1/models", "X-Api-Key", key); status != want {
			t.Errorf("after the reload, %s: %d, want %d", key[:3], status, want)
		}
	}
	// a bad file on reload keeps the keys in force and says why
	if err := os.WriteFile(file, []byte("short rotated admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !enginetest.Within(10*time.Second, func() bool { return strings.Contains(s.stderr.String(), "was not reloaded") }) {
		t.Fatalf("no word of the refused reload 10 s after SIGHUP\n%s", s.stderr)
	}
	if !strings.Contains(s.stderr.String(), file+":1: the key is 5 characters") {
		t.Errorf("the refused reload does not name the file and line:\n%s", s.stderr)
	}
	if status, _, _ := keyedCall(t, s, "GET", "/v1/models", "X-Api-Key", e2eFreshKey); status != 200 {
		t.Errorf("after a refused reload the key in force gets %d, want 200", status)
	}
	s.stop(t)
	log := s.stderr.String()
	for _, key := range []string{e2eOpsKey, e2eAppKey, e2eEnvKey, e2eFreshKey, "short"} {
		if strings.Contains(log, key) {
			t.Errorf("the log holds the key %s:\n%s", key, log)
		}
	}
	for _, name := range []string{"ops", "app", "env", "rotated"} {
		if !strings.Contains(log, `"key":"`+name+`"`) {
			t.Errorf("the access log does not name the key %s:\n%s", name, log)
		}
	}
}

// TestServeAllowRemoteNeedsAKey: beyond loopback with no key drama serve
// refuses to start, naming both ways to give a key and --no-auth.
func TestServeAllowRemoteNeedsAKey(t *testing.T) {
	bin := binaries(t)
	cmd := exec.Command(filepath.Join(bin, "drama"), "serve", "--root", t.TempDir(), "--addr", "0.0.0.0:0", "--allow-remote")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DRAMA_API_KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, out)
	}
	for _, want := range []string{"DRAMA_API_KEY", "--api-key-file", "--no-auth"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not name %s: %s", want, out)
		}
	}
}

// TestOpenAISDKWithKeys runs OpenAI's Node SDK with apiKey against drama
// serve with keys: the right key speaks, a wrong one is the SDK's
// AuthenticationError (401), and inline references with a speak key its
// PermissionDeniedError (403).
func TestOpenAISDKWithKeys(t *testing.T) {
	node := realclient.Node(t, "openai")
	file := writeKeyFile(t, e2eOpsKey+" ops admin\n"+e2eAppKey+" app speak\n")
	s := startServeEnv(t, nil, "--api-key-file", file)
	res := node.Run(context.Background(), 2*time.Minute, nil, "scripts/conformance/openai-keys.mjs", s.url+"/v1", "drama-3-full", e2eOpsKey, e2eAppKey)
	t.Log("\n" + strings.TrimSpace(res.Stdout))
	if res.Err != nil {
		t.Fatalf("%v\n%s\ndrama serve:\n%s", res.Err, res.Stderr, s.stderr)
	}
}
