package mirrorcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/pins/hub/hubtest"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

const secCommit = "5ec5ec5ec5ec5ec5ec5ec5ec5ec5ec5ec5ec5ec5"

// secret is what lies outside the served folder.
var secret = []byte("SECRET: a file outside the mirror's folder\n")

// linkFixture lays out base/mirror (the served DIR) holding org/m at
// secCommit with plain files and links of every kind, and base/outside
// holding the secret; it returns DIR.
func linkFixture(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "mirror")
	commit := filepath.Join(dir, "org", "m", secCommit)
	outside := filepath.Join(base, "outside")
	for p, b := range map[string][]byte{
		filepath.Join(commit, "config.json"):           []byte(`{"ok":true}`),
		filepath.Join(commit, "nested", "file.txt"):    []byte("nested\n"),
		filepath.Join(dir, "org", "m", "refs", "main"): []byte(secCommit),
		filepath.Join(outside, "secret.txt"):           secret,
		filepath.Join(outside, "model.safetensors"):    secret,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"abs.txt":               filepath.Join(outside, "secret.txt"),
		"rel.txt":               "../../../../outside/secret.txt",
		"weights.safetensors":   "../../../../outside/model.safetensors", // LFS by name: a redirect to the CDN
		"dir-abs":               outside,
		"dir-rel":               "../../../../outside",
		"inside.txt":            "config.json",
		"inside-dir":            "nested",
		"nested/up.txt":         "../config.json",
		"nested/loop":           "..",
		"nested/abs-inside.txt": filepath.Join(commit, "config.json"), // absolute: refused even pointing inside
	} {
		if err := os.Symlink(target, filepath.Join(commit, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func getBody(t *testing.T, c *http.Client, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func newGet(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A file or a folder link that leads out of DIR (absolute or by ..) is
// neither served by resolve, raw or the CDN, nor listed; links that stay
// inside are served.
func TestMirrorServesNothingOutsideDir(t *testing.T) {
	endpoint := startMirror(t, ServeOptions{Dir: linkFixture(t), URLTTL: time.Hour})
	c := &http.Client{Timeout: 30 * time.Second}
	for _, p := range []string{"abs.txt", "rel.txt", "weights.safetensors", "dir-abs/secret.txt", "dir-rel/secret.txt", "dir-abs/model.safetensors", "nested/abs-inside.txt"} {
		for _, route := range []string{"resolve", "raw"} {
			url := endpoint + "/org/m/" + route + "/main/" + p
			st, body := getBody(t, c, newGet(t, url))
			if st != http.StatusNotFound || bytes.Contains(body, []byte("SECRET")) || !strings.Contains(string(body), "EntryNotFound") && !strings.Contains(string(body), "served folder") {
				t.Errorf("GET %s: %d %q, want 404 and not the file outside", url, st, body)
			}
			if strings.Contains(p, ".txt") && !strings.Contains(string(body), "absolute or leads out of the served folder") {
				t.Errorf("GET %s: body %q should say the link leads out of the served folder", url, body)
			}
		}
	}
	// .. in the repository, the revision or the path, escaped past the
	// router's cleaning, reaches nothing outside either
	for _, u := range []string{
		"/org/m/resolve/main/..%2F..%2F..%2F..%2Foutside%2Fsecret.txt",
		"/org/m/raw/main/..%2F..%2F..%2F..%2Foutside%2Fsecret.txt",
		"/org/m/resolve/..%2F..%2F..%2F..%2Foutside/secret.txt",
		"/..%2F..%2Foutside/x/resolve/main/secret.txt",
		"/org/..%2F..%2Foutside/resolve/main/secret.txt",
	} {
		st, body := getBody(t, c, newGet(t, endpoint+u))
		if st != http.StatusNotFound || bytes.Contains(body, []byte("SECRET")) {
			t.Errorf("GET %s: %d %q, want 404", u, st, short(body))
		}
	}
	var tree []struct {
		Path string `json:"path"`
	}
	st, body := getBody(t, c, newGet(t, endpoint+"/api/models/org/m/tree/main?recursive=true"))
	if st != 200 || json.Unmarshal(body, &tree) != nil {
		t.Fatalf("tree: %d %s", st, body)
	}
	listed := map[string]bool{}
	for _, e := range tree {
		listed[e.Path] = true
	}
	for _, p := range []string{"abs.txt", "rel.txt", "weights.safetensors", "dir-abs", "dir-rel", "dir-abs/secret.txt", "dir-rel/secret.txt", "nested/abs-inside.txt", "nested/loop"} {
		if listed[p] {
			t.Errorf("tree lists %s, which leads out of the served folder: %s", p, body)
		}
	}
	for _, p := range []string{"config.json", "inside.txt", "inside-dir/file.txt", "nested/file.txt", "nested/up.txt"} {
		if !listed[p] {
			t.Errorf("tree does not list %s, a link that stays inside: %s", p, body)
		}
	}
	st, body = getBody(t, c, newGet(t, endpoint+"/api/models/org/m"))
	if st != 200 || bytes.Contains(body, []byte("abs.txt")) || bytes.Contains(body, []byte("rel.txt")) || bytes.Contains(body, []byte("dir-")) {
		t.Errorf("model info lists links out of the folder: %d %s", st, body)
	}
	for p, want := range map[string]string{"inside.txt": `{"ok":true}`, "inside-dir/file.txt": "nested\n", "nested/up.txt": `{"ok":true}`} {
		if st, body := getBody(t, c, newGet(t, endpoint+"/org/m/resolve/main/"+p)); st != 200 || string(body) != want {
			t.Errorf("GET %s, a link inside: %d %q, want %q", p, st, body, want)
		}
	}
}

// A Host header that names neither the listening address, nor a loopback
// name, nor an --allow-host name gets 421, on the main listener and the
// CDN listener: a page whose DNS name now points at 127.0.0.1 reads
// nothing.
func TestMirrorRefusesOtherHosts(t *testing.T) {
	dir := linkFixture(t)
	big := filepath.Join(dir, "org", "m", secCommit, "model.safetensors")
	if err := os.WriteFile(big, hubtest.Bytes(7, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := startMirror(t, ServeOptions{Dir: dir, URLTTL: time.Hour, AllowHosts: []string{"mirror.lan"}})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(endpoint, "http://"))
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(endpoint + "/org/m/resolve/main/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cdnURL := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || cdnURL == "" {
		t.Fatalf("resolve of an LFS file: %d, Location %q", resp.StatusCode, cdnURL)
	}
	for _, url := range []string{endpoint + "/org/m/resolve/main/config.json", endpoint + "/api/models/org/m/tree/main", cdnURL} {
		for _, host := range []string{"evil.example", "evil.example:" + port, "10.9.8.7:" + port, "127.0.0.2:" + port} {
			req := newGet(t, url)
			req.Host = host
			st, body := getBody(t, noRedirect, req)
			if st != http.StatusMisdirectedRequest || !strings.Contains(string(body), "--allow-host") {
				t.Errorf("GET %s with Host %q: %d %q, want 421 naming --allow-host", url, host, st, short(body))
			}
		}
		for _, host := range []string{"", "localhost", "LOCALHOST:" + port, "mirror.lan", "mirror.lan:" + port} {
			req := newGet(t, url)
			if host != "" {
				req.Host = host
			}
			if st, body := getBody(t, noRedirect, req); st != http.StatusOK {
				t.Errorf("GET %s with Host %q: %d %q, want 200", url, host, st, short(body))
			}
		}
	}
}

// Connections opened and left idle beyond --max-conns give way to new
// clients, which are still answered; a keep-alive connection idle longer
// than the idle timeout is closed.
func TestMirrorIdleConnectionsDoNotLockOut(t *testing.T) {
	const maxConns = 4
	endpoint := startMirror(t, ServeOptions{Dir: linkFixture(t), URLTTL: time.Hour, MaxConns: maxConns, IdleTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(endpoint, "http://")
	var idle []net.Conn
	for range 3 * maxConns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		idle = append(idle, conn)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	if st, body := getBody(t, c, newGet(t, endpoint+"/org/m/resolve/main/config.json")); st != 200 || string(body) != `{"ok":true}` {
		t.Fatalf("a new client with %d idle connections open: %d %q", len(idle), st, body)
	}
	// the first idle connections were closed to stay within the bound
	closed, deadline := 0, time.Now().Add(10*time.Second)
	for _, conn := range idle[:2*maxConns] {
		conn.SetReadDeadline(deadline)
		if _, err := conn.Read(make([]byte, 1)); !isTimeout(err) {
			closed++
		}
	}
	if closed < maxConns {
		t.Errorf("%d of the %d oldest idle connections closed, want at least %d: the mirror holds idle connections beyond --max-conns %d", closed, 2*maxConns, maxConns, maxConns)
	}

	// a keep-alive connection left idle past IdleTimeout is closed
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(conn, "GET /org/m/resolve/main/config.json HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil || !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200")) {
		t.Fatalf("keep-alive request: %q %v", buf[:n], err)
	}
	for err == nil {
		_, err = conn.Read(buf)
	}
	if isTimeout(err) {
		t.Errorf("an idle keep-alive connection was still open 20 s after its reply, IdleTimeout 300ms")
	}
}

// short is the start of a body, for a message.
func short(b []byte) []byte { return b[:min(len(b), 200)] }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Short idle and header timeouts do not cut a download whose bytes keep
// flowing, however long it takes: no timeout bounds a response.
func TestMirrorSlowDownloadNotCut(t *testing.T) {
	dir := linkFixture(t)
	data := hubtest.Bytes(9, 96<<10)
	if err := os.WriteFile(filepath.Join(dir, "org", "m", secCommit, "model.safetensors"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := startMirror(t, ServeOptions{Dir: dir, URLTTL: time.Hour, BytesPerSec: 64 << 10,
		IdleTimeout: 200 * time.Millisecond, ReadHeaderTimeout: 200 * time.Millisecond, MaxConns: 2})
	c := &http.Client{Timeout: time.Minute}
	st, body := getBody(t, c, newGet(t, endpoint+"/org/m/resolve/main/model.safetensors"))
	if st != 200 || !bytes.Equal(body, data) {
		t.Errorf("a download of 96 KiB at 64 KiB/s: %d, %d bytes, want all %d", st, len(body), len(data))
	}
}

// addrAs is a listener that reports another address than its own.
type addrAs struct {
	net.Listener
	addr net.Addr
}

func (l addrAs) Addr() net.Addr { return l.addr }

// A mirror listening beyond loopback without --token says so on stderr;
// on loopback, or with --token, it does not.
func TestMirrorWarnsExposedWithoutToken(t *testing.T) {
	wide := &net.TCPAddr{IP: net.IPv4zero, Port: 8080}
	for _, tc := range []struct {
		name  string
		addr  net.Addr
		token string
		warn  bool
	}{{"wildcard, no token", wide, "", true}, {"wildcard, token", wide, "t0ken", false}, {"loopback, no token", nil, "", false}} {
		ios, _, _, errOut := cmdtest.IOStreams()
		f := cmdtest.Factory(ios)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cdnLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var l net.Listener = ln
		if tc.addr != nil {
			l = addrAs{ln, tc.addr}
		}
		ctx, cancel := context.WithCancel(context.Background())
		opts := &ServeOptions{Ready: func(string) { cancel() }}
		s := &mirror.Server{Source: mirror.DirSource{Dir: t.TempDir()}, Token: tc.token, CDNURL: "http://" + cdnLn.Addr().String()}
		if err := serve(ctx, f, s, l, cdnLn, "DIR", opts); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := strings.Contains(errOut.String(), "without --token")
		if got != tc.warn {
			t.Errorf("%s: warned %v, want %v; stderr:\n%s", tc.name, got, tc.warn, errOut)
		}
		if tc.warn && (!strings.Contains(errOut.String(), "0.0.0.0:8080") || !strings.Contains(errOut.String(), "--token TOKEN")) {
			t.Errorf("%s: the warning should name the address and --token: %s", tc.name, errOut)
		}
	}
}
