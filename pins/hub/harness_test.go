package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

const (
	commitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	commitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// fixture is a mirror on loopback serving repositories written by the test.
type fixture struct {
	t      testing.TB
	dir    string
	srv    *mirror.Server
	ts     *httptest.Server
	events []Event
	mu     sync.Mutex
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	fx := &fixture{t: t, dir: t.TempDir()}
	fx.srv = &mirror.Server{Source: mirror.DirSource{Dir: filepath.Join(fx.dir, "mirror")}}
	fx.srv.LFSMinSize = 64 << 10
	fx.srv.StallFor = 10 * time.Second
	fx.ts = httptest.NewServer(fx.srv)
	t.Cleanup(fx.ts.Close)
	return fx
}

// content returns deterministic bytes for a file.
func content(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// addRepo writes files into the mirror and returns their pins.
func (fx *fixture) addRepo(repo, commit string, files map[string][]byte) []pins.File {
	fx.t.Helper()
	var out []pins.File
	for p, b := range files {
		fp := filepath.Join(fx.dir, "mirror", filepath.FromSlash(repo), commit, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			fx.t.Fatal(err)
		}
		if err := os.WriteFile(fp, b, 0o644); err != nil {
			fx.t.Fatal(err)
		}
		out = append(out, pinOf(p, b, int64(len(b)) >= 64<<10))
	}
	pp := &pins.Pins{Format: pins.Format, Variant: "t", Files: out}
	pp.Validate() // sorts
	return pp.Files
}

func pinOf(p string, b []byte, lfs bool) pins.File {
	s := sha256.Sum256(b)
	f := pins.File{Path: p, Size: int64(len(b)), SHA256: hex.EncodeToString(s[:]), LFS: lfs}
	if !lfs {
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(b))
		h.Write(b)
		f.GitSHA1 = hex.EncodeToString(h.Sum(nil))
	}
	return f
}

func (fx *fixture) client() *Client {
	c := New(fx.ts.URL, "", 4)
	c.Backoff, c.MaxBackoff, c.Retries = time.Millisecond, 5*time.Millisecond, 3
	return c
}

func (fx *fixture) fetcher(cache string) *Fetcher {
	return &Fetcher{
		Client: fx.client(),
		Cache:  Cache{Dir: cache},
		Download: DownloadOptions{
			// A long idle timeout: on a loaded machine a healthy stream can
			// pause for a while, and a re-issued range would break the
			// byte counts the tests check. Stall tests use stallIdle.
			Workers: 4, ChunkSize: 32 << 10, IdleTimeout: 20 * time.Second, MaxAttempts: 6,
			Event: func(e Event) { fx.mu.Lock(); fx.events = append(fx.events, e); fx.mu.Unlock() },
		},
		FlockWait: time.Second,
	}
}

// stallIdle is the idle timeout of tests whose mirror stalls a stream on
// purpose.
const stallIdle = 300 * time.Millisecond

func (fx *fixture) count(kind EventKind) int {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	n := 0
	for _, e := range fx.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// checkCache asserts every file is in the cache with the right bytes and
// that no partial or corrupt file has a final name.
func checkCache(t *testing.T, cache Cache, repo, commit string, files map[string][]byte) {
	t.Helper()
	for p, want := range files {
		got, err := os.ReadFile(cache.SnapshotPath(repo, commit, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s: content differs", p)
		}
	}
	noIncomplete(t, cache.RepoDir(repo))
}

func noIncomplete(t *testing.T, dir string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "blobs", "*.incomplete"))
	if len(m) > 0 {
		t.Errorf("left partial files: %v", m)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// threeFiles is a repository with two LFS files (one nested) and a small
// git file.
func threeFiles() map[string][]byte {
	return map[string][]byte{
		"model-00001.safetensors": content(1, 300<<10+17),
		"sub/dir/codec.pth":       content(2, 150<<10),
		"config.json":             []byte(`{"model":"test"}`),
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, cancel
}

// writeState writes a resume sidecar as the downloader does.
func writeState(t *testing.T, name string, st *partState) {
	t.Helper()
	sf, err := openStateFile(name)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.close()
	if err := sf.save(st); err != nil {
		t.Fatal(err)
	}
}

// setup serves files as repoA at commitA and returns their pins and a
// fetcher into the fixture's cache.
func (fx *fixture) setup(files map[string][]byte) ([]pins.File, *Fetcher) {
	return fx.addRepo(repoA, commitA, files), fx.fetcher(filepath.Join(fx.dir, "cache"))
}

// fault makes the mirror inject the fault spec s (see mirror.ParseFault).
func (fx *fixture) fault(s string) mirror.Fault {
	fx.t.Helper()
	f, err := mirror.ParseFault(s)
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.srv.SetFaults([]mirror.Fault{f})
	return f
}

// fetchOK fetches pf as repoA at commitA and checks that the cache then
// holds files.
func fetchOK(t *testing.T, f *Fetcher, pf []pins.File, files map[string][]byte) *Result {
	t.Helper()
	return fetchInto(t, f, repoA, commitA, pf, files)
}

// fetchInto fetches pf as repo at commit and checks that the cache then
// holds files.
func fetchInto(t *testing.T, f *Fetcher, repo, commit string, pf []pins.File, files map[string][]byte) *Result {
	t.Helper()
	res, err := f.Fetch(ctxT(t), repo, commit, pf)
	if err != nil {
		t.Fatal(err)
	}
	checkCache(t, f.Cache, repo, commit, files)
	return res
}

// totalSize is the number of bytes in files.
func totalSize(files map[string][]byte) int64 {
	var n int64
	for _, b := range files {
		n += int64(len(b))
	}
	return n
}
