package servecmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi/apikey"
	"github.com/drama-tts/drama/engine/httpapi/httpapitest"
	"github.com/drama-tts/drama/engine/serve"
)

const (
	opsKey   = "ops-0123456789abcdef0123"
	appKey   = "app-0123456789abcdef0123"
	otherKey = "new-0123456789abcdef0123"
)

// keyFile writes a key file of mode 0600 and returns its path.
func keyFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// parseServe runs a drama serve command line with env (name, value pairs)
// as the environment, and returns the options or the error.
func parseServe(args string, env ...string) (*Options, error) {
	ios, _, _, _ := cmdtest.IOStreams()
	var got *Options
	err := cmdtest.Execute(NewCmd(cmdtest.Factory(ios, env...), func(_ context.Context, o *Options) error { got = o; return nil }), strings.Fields(args)...)
	return got, err
}

// TestAllowRemoteNeedsAKeyOrNoAuth: beyond loopback without a key drama
// serve refuses to start, naming both ways to give one and --no-auth;
// --no-auth beside a key is a usage error.
func TestAllowRemoteNeedsAKeyOrNoAuth(t *testing.T) {
	file := keyFile(t, opsKey+" ops admin\n")
	_, err := parseServe("--addr 0.0.0.0:8793 --allow-remote")
	if err == nil || cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Fatalf("--allow-remote without a key: %v (exit %d), want a usage error", err, cmdutil.ExitCode(err))
	}
	for _, want := range []string{"DRAMA_API_KEY=KEY", "--api-key-file FILE", "--no-auth"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %s: %v", want, err)
		}
	}
	for _, c := range []struct {
		args string
		env  []string
		keys int
	}{
		{"--addr 0.0.0.0:8793 --allow-remote --no-auth", nil, 0},
		{"--addr 0.0.0.0:8793 --allow-remote --api-key-file " + file, nil, 1},
		{"--addr 0.0.0.0:8793 --allow-remote", []string{apikey.EnvKey, otherKey}, 1},
		{"--api-key-file " + file, []string{apikey.EnvKey, otherKey}, 2},
		{"", nil, 0},
	} {
		o, err := parseServe(c.args, c.env...)
		if err != nil || o.keys.Len() != c.keys {
			t.Errorf("%q %v: %v, %d keys, want %d", c.args, c.env, err, o.keys.Len(), c.keys)
		}
	}
	for args, env := range map[string][]string{
		"--no-auth --api-key-file " + file: nil,
		"--no-auth":                        {apikey.EnvKey, otherKey},
	} {
		_, err := parseServe(args, env...)
		if err == nil || cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "--no-auth serves without API keys") {
			t.Errorf("%q %v: %v, want a usage error", args, env, err)
		}
	}
}

// TestKeyFileRefusals: a malformed key file, a short key, one every user
// may read, and a short DRAMA_API_KEY stop drama serve before it starts,
// naming the file and line.
func TestKeyFileRefusals(t *testing.T) {
	open := keyFile(t, opsKey+" ops admin\n")
	os.Chmod(open, 0o644)
	for _, c := range []struct {
		text string
		env  []string
		want string
	}{
		{"# keys\n" + opsKey + " ops root\n", nil, ":2: unknown scope \"root\""},
		{"short ops\n", nil, ":1: the key is 5 characters; a key needs at least 16"},
		{opsKey + " ops\n" + opsKey + " again\n", nil, ":2: the same key as "},
		{"", nil, ": no keys"},
		{appKey + " app\n", []string{apikey.EnvKey, "tiny"}, "DRAMA_API_KEY: the key is 4 characters"},
	} {
		p := keyFile(t, c.text)
		_, err := parseServe("--api-key-file "+p, c.env...)
		if err == nil || cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error holding %q", c.text, err, c.want)
		}
	}
	_, err := parseServe("--api-key-file " + open)
	if err == nil || !strings.Contains(err.Error(), "chmod 600 "+open) {
		t.Errorf("a key file every user reads: %v", err)
	}
}

// TestAccessLogNamesTheKeyNeverTheKey: drama serve's access log carries the
// name of the key a request was let in with, and neither the key nor the
// Authorization header, whether the key was right, wrong or short of scope;
// inline references are logged as the sha256 of their codes, not as the
// default voice.
func TestAccessLogNamesTheKeyNeverTheKey(t *testing.T) {
	file := keyFile(t, opsKey+" ops admin\n"+appKey+" app speak\n")
	opts := serveOptions(t, "", "--api-key-file "+file)
	var buf enginetest.Buffer // the access line is written after the reply: read it while it grows
	l := &logs{base: slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})}
	l.logger = l.from(sourceDrama)
	fake, sup := supervisedFake(0)
	s := newServer(t, opts, l, t.TempDir(), engine.Install{}, []serve.Engine{{Name: "engine-0", Sup: sup}}, "")
	if err := s.Pool.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	s.API.SetCapabilities(fake.Desc.Capabilities)
	ts := httpapitest.Serve(t, s.HTTP.Handler)
	send := func(method, path, key, body string) int {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	row := strings.TrimSuffix(strings.Repeat("7,", 20), ",")
	refs := `[{"text":"Words of the reference.","vq_codes":[` + strings.TrimSuffix(strings.Repeat("["+row+"],", 10), ",") + `]}]`
	codes := make([][]int, 10)
	for i := range codes {
		codes[i] = make([]int, 20)
		for j := range codes[i] {
			codes[i][j] = 7
		}
	}
	for _, c := range []struct {
		method, path, key, body string
		want                    int
	}{
		{"GET", "/v1/models", opsKey, "", 200},
		{"GET", "/metrics", appKey, "", 403},
		{"GET", "/v1/models", "wrong-" + opsKey, "", 401},
		{"POST", "/v1/audio/speech", opsKey, `{"input":"Own voice.","stream":false,"references":` + refs + `}`, 200},
	} {
		if got := send(c.method, c.path, c.key, c.body); got != c.want {
			t.Fatalf("%s %s: %d, want %d", c.method, c.path, got, c.want)
		}
	}
	enginetest.WaitFor(t, func() bool { return strings.Count(buf.String(), `"msg":"request"`) >= 4 })
	log := buf.String()
	for _, secret := range []string{opsKey, appKey, opsKey[:12], "Bearer"} {
		if strings.Contains(log, secret) {
			t.Fatalf("the log holds %q:\n%s", secret, log)
		}
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	var access []string
	for _, l := range lines {
		if strings.Contains(l, `"msg":"request"`) {
			access = append(access, l)
		}
	}
	if len(access) != 4 {
		t.Fatalf("%d access lines, want 4:\n%s", len(access), log)
	}
	for i, want := range []string{`"key":"ops"`, `"key":"app"`, "", `"key":"ops"`} {
		if want == "" {
			if strings.Contains(access[i], `"key"`) {
				t.Errorf("a refused key is named: %s", access[i])
			}
		} else if !strings.Contains(access[i], want) {
			t.Errorf("access line %d lacks %s: %s", i, want, access[i])
		}
	}
	sum := codesSHA256(codes)
	if !strings.Contains(access[3], `"voice":"inline"`) || !strings.Contains(access[3], `"references_sha256":["`+sum+`"]`) {
		t.Errorf("inline references are not logged by their codes' sha256 %s: %s", sum, access[3])
	}
}

// codesSHA256 is a voice file's codes_sha256, computed here on its own:
// the codes codebook-major, each a little-endian uint16.
func codesSHA256(codes [][]int) string {
	h := sha256.New()
	for _, row := range codes {
		for _, v := range row {
			h.Write([]byte{byte(v), byte(v >> 8)})
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
