package hub

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

const repoA = "org/model"

func TestFetchClean(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	res := fetchOK(t, f, pf, files)
	for _, r := range res.Files {
		if r.How != HowDownloaded {
			t.Errorf("%s: want downloaded, got %s", r.Path, r.How)
		}
	}
	st := fx.srv.Stats()
	if st.HeadRequests != 3 {
		t.Errorf("HEADs: want one per file (3), got %d", st.HeadRequests)
	}
	total := totalSize(files)
	if st.BytesServed != total {
		t.Errorf("bytes served: want %d, got %d", total, st.BytesServed)
	}
	// A second run asks nothing, not even the API.
	res, err := f.Fetch(ctxT(t), repoA, commitA, pf)
	if err != nil || fx.srv.Stats().Resolves != st.Resolves || fx.srv.Stats().DataRequests != st.DataRequests || fx.srv.Stats().APIRequests != st.APIRequests {
		t.Fatalf("second run: err %v, stats %+v", err, fx.srv.Stats())
	}
	if res.Files[0].How != HowPresent {
		t.Errorf("second run: want present, got %s", res.Files[0].How)
	}
}

// TestFetchChangesNoSetting: a Fetcher's fields are settings that Fetch
// only reads: a relative cache folder stays relative, the client gets no
// retry hook, and two fetches may share one Fetcher at once.
func TestFetchChangesNoSetting(t *testing.T) {
	fx := newFixture(t)
	filesA, filesB := threeFiles(), map[string][]byte{"b.bin": content(9, 70<<10)}
	pfA, pfB := fx.addRepo(repoA, commitA, filesA), fx.addRepo("org/other", commitB, filesB)
	t.Chdir(fx.dir)
	f := fx.fetcher("cache")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, job := range []struct {
		repo, commit string
		files        []pins.File
	}{{repoA, commitA, pfA}, {"org/other", commitB, pfB}} {
		wg.Go(func() { _, errs[i] = f.Fetch(ctxT(t), job.repo, job.commit, job.files) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("fetches sharing a Fetcher: %v, %v", errs[0], errs[1])
	}
	if f.Cache.Dir != "cache" || f.Client.OnRetry != nil {
		t.Errorf("Fetch changed its settings: cache %q, client retry hook set %v", f.Cache.Dir, f.Client.OnRetry != nil)
	}
	abs := Cache{Dir: filepath.Join(fx.dir, "cache")}
	checkCache(t, abs, repoA, commitA, filesA)
	checkCache(t, abs, "org/other", commitB, filesB)
}

// TestFaultMatrix: every fault ends with correct files and no corrupt file
// under a final name.
func TestFaultMatrix(t *testing.T) {
	for _, fs := range []string{"drop", "full200", "badrange", "416", "429", "503x3", "stall", "flip", "expire", "short",
		"drop@3x2", "flip@5", "503@2x4"} {
		t.Run(fs, func(t *testing.T) {
			fx, fault := fetchUnderFault(t, fs, nil)
			if got := fx.srv.Stats().Faults[fault.Kind]; got != fault.Times {
				t.Errorf("faults fired: want %d, got %d", fault.Times, got)
			}
			if fault.Kind == mirror.FaultFlip && fx.count(EventRestart) != 1 {
				t.Errorf("flip: want one restart, got %d", fx.count(EventRestart))
			}
		})
	}
}

// TestPersistentFaults: a server that keeps failing gives a clear error and
// leaves no file under its final name.
func TestPersistentFaults(t *testing.T) {
	for _, c := range []struct {
		fault string
		want  error
	}{
		{"badrange x1000", ErrBadResponse},
		{"flipx1000", ErrMismatch},
		{"503x1000", nil},
	} {
		t.Run(c.fault, func(t *testing.T) {
			fx := newFixture(t)
			files := threeFiles()
			pf, f := fx.setup(files)
			fx.fault(strings.ReplaceAll(c.fault, " ", ""))
			_, err := f.Fetch(ctxT(t), repoA, commitA, pf)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
			for _, p := range pf {
				if _, err := os.Stat(f.Cache.BlobPath(repoA, BlobName(p))); err == nil && p.LFS {
					if got, _ := os.ReadFile(f.Cache.BlobPath(repoA, BlobName(p))); string(got) != string(files[p.Path]) {
						t.Errorf("%s: a corrupt file got its final name", p.Path)
					}
				}
			}
		})
	}
}

func TestExpiringURLs(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	fx.srv.URLTTL = 30 * time.Millisecond
	fx.srv.BytesPerSec = 4 << 20 // 300 KiB takes ~75 ms per stream
	f.Download.Workers = 1
	fetchOK(t, f, pf, files)
	if st := fx.srv.Stats(); st.HeadRequests <= 3 {
		t.Errorf("want fresh HEADs after expiry, got %d HEADs", st.HeadRequests)
	}
}

func TestWorkersReducedOnErrors(t *testing.T) {
	fx := newFixture(t)
	pf, f := fx.setup(threeFiles())
	fx.srv.SetFaults([]mirror.Fault{{Kind: mirror.Fault5xx, Times: 4}})
	f.Download.Workers = 1 // serial, so the failures are consecutive
	f.Download.MaxAttempts = 10
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	f2 := fx.fetcher(filepath.Join(fx.dir, "cache2"))
	f2.Download.Workers = 4
	f2.Download.MaxAttempts = 10
	fx.srv.SetFaults([]mirror.Fault{{Kind: mirror.Fault5xx, Times: 6}})
	if _, err := f2.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	if fx.count(EventWorkers) == 0 {
		t.Error("want the worker count lowered after repeated errors")
	}
	// once the errors stop, successes raise it again, and that is reported too
	fx.mu.Lock()
	var counts []int
	for _, e := range fx.events {
		if e.Kind == EventWorkers {
			counts = append(counts, e.Workers)
		}
	}
	fx.mu.Unlock()
	if n := len(counts); n < 2 || counts[n-1] <= counts[n-2] {
		t.Errorf("want a raise reported after the lowering, got worker counts %v", counts)
	}
}

func TestResumeAfterCancel(t *testing.T) {
	fx := newFixture(t)
	files := map[string][]byte{"big.safetensors": content(7, 2<<20)}
	pf, f := fx.setup(files)
	fx.srv.BytesPerSec = 8 << 20
	ctx, cancel := contextWithCancel(t)
	var got atomic.Int64
	f.Download.Progress = func(_ string, n int64) {
		if got.Add(n) > 1<<20 {
			cancel()
		}
	}
	if _, err := f.Fetch(ctx, repoA, commitA, pf); err == nil {
		t.Fatal("want the cancelled fetch to fail")
	}
	noFinal(t, f.Cache, repoA, pf[0].SHA256)
	served := fx.srv.Stats().BytesServed
	f.Download.Progress = nil
	fetchOK(t, f, pf, files)
	again := fx.srv.Stats().BytesServed - int64(len(files["big.safetensors"]))
	if limit := int64(f.Download.Workers) * f.Download.ChunkSize; again > limit {
		t.Errorf("downloaded again %d bytes (first run served %d), want at most workers x chunk = %d", again, served, limit)
	}
}

func noFinal(t *testing.T, c Cache, repo, name string) {
	t.Helper()
	if _, err := os.Stat(c.BlobPath(repo, name)); err == nil {
		t.Fatal("an unfinished file has its final name")
	}
}

func TestCompletePartialIsVerifiedNotRequested(t *testing.T) {
	fx := newFixture(t)
	files := map[string][]byte{"w.safetensors": content(9, 200<<10)}
	pf, f := fx.setup(files)
	// A run killed after the last chunk landed but before the rename.
	blob := f.Cache.BlobPath(repoA, pf[0].SHA256)
	os.MkdirAll(filepath.Dir(blob), 0o755)
	os.WriteFile(blob+".drama.incomplete", files["w.safetensors"], 0o644)
	n := numChunks(pf[0].Size, f.Download.ChunkSize)
	st := partState{Version: stateVersion, Path: pf[0].Path, Size: pf[0].Size, Chunk: f.Download.ChunkSize, Done: make([]byte, (n+7)/8)}
	for i := range n {
		setBit(st.Done, i)
	}
	writeState(t, blob+".drama.incomplete.state", &st)
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	if s := fx.srv.Stats(); s.DataRequests != 0 || s.HeadRequests != 0 {
		t.Errorf("want no request for a complete partial, got %+v", s)
	}
	checkCache(t, f.Cache, repoA, commitA, files)
}

func TestCorruptPartialRestarts(t *testing.T) {
	fx := newFixture(t)
	files := map[string][]byte{"w.safetensors": content(9, 200<<10)}
	pf, f := fx.setup(files)
	blob := f.Cache.BlobPath(repoA, pf[0].SHA256)
	os.MkdirAll(filepath.Dir(blob), 0o755)
	bad := append([]byte(nil), files["w.safetensors"]...)
	bad[1000] ^= 0xff
	os.WriteFile(blob+".drama.incomplete", bad, 0o644)
	n := numChunks(pf[0].Size, f.Download.ChunkSize)
	st := partState{Version: stateVersion, Path: pf[0].Path, Size: pf[0].Size, Chunk: f.Download.ChunkSize, Done: make([]byte, (n+7)/8)}
	for i := range n {
		setBit(st.Done, i)
	}
	writeState(t, blob+".drama.incomplete.state", &st)
	fetchOK(t, f, pf, files)
	if fx.count(EventRestart) != 1 {
		t.Errorf("want one restart, got %d", fx.count(EventRestart))
	}
}

func TestPinMismatchRefused(t *testing.T) {
	fx := newFixture(t)
	pf, f := fx.setup(threeFiles())
	pf[1].SHA256 = strings.Repeat("0", 64) // the LFS file, by sorted path
	_, err := f.Fetch(ctxT(t), repoA, commitA, pf)
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "want "+strings.Repeat("0", 64)) {
		t.Fatalf("want an etag mismatch naming the pin, got %v", err)
	}
	// the LFS file is refused at its HEAD, before any byte, and nothing
	// gets the name the wrong pin gives it
	noFinal(t, f.Cache, repoA, pf[1].SHA256)
	if m, _ := filepath.Glob(filepath.Join(f.Cache.RepoDir(repoA), "blobs", pf[1].SHA256+"*")); len(m) != 0 {
		t.Errorf("the refused file left %v", m)
	}
}

func TestTokenOnlyToEndpoint(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	fx.srv.Token = "hf_secret"
	f.Client.Token = "hf_secret"
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	// the mirror counts requests to its signed /cdn URLs that carry
	// Authorization: none may
	if n := fx.srv.Stats().CDNAuthorized; n != 0 {
		t.Errorf("the token went to the CDN on %d requests", n)
	}
	checkCache(t, f.Cache, repoA, commitA, files)
}

func TestAuthErrors(t *testing.T) {
	fx := newFixture(t)
	pf, f := fx.setup(threeFiles())
	fx.srv.Token = "hf_secret"
	_, err := f.Fetch(ctxT(t), repoA, commitA, pf)
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("no token: want ErrUnauthorized with advice, got %v", err)
	}
	fx.srv.Gated = true
	f.Client.Token, f.Client.TokenSource = "hf_wrong", "HF_TOKEN"
	_, err = f.Fetch(ctxT(t), repoA, commitA, pf)
	if !errors.Is(err, ErrGated) || !strings.Contains(err.Error(), "accept its terms at "+fx.ts.URL+"/"+repoA) || strings.Contains(err.Error(), "hf_wrong") {
		t.Errorf("gated: want ErrGated with advice and no token in it, got %v", err)
	}
	fx.srv.Token = ""
	_, err = f.Fetch(ctxT(t), repoA, commitB, pf)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "the endpoint") || strings.Contains(err.Error(), "--endpoint") {
		t.Errorf("unknown commit: want ErrNotFound naming the endpoint and no flag (the command knows where it came from), got %v", err)
	}
	if !strings.HasPrefix(err.Error(), "hub: fetch: ") || strings.Count(err.Error(), "hub: ") != 1 {
		t.Errorf("unknown commit: want the package named once, first, got %v", err)
	}
}

func TestOffline(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	f.Offline = true
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); !errors.Is(err, ErrOffline) {
		t.Fatalf("offline, empty cache: want ErrOffline, got %v", err)
	}
	f.Offline = false
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	before := fx.srv.Stats()
	f.Offline = true
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatalf("offline, full cache: %v", err)
	}
	if after := fx.srv.Stats(); after.Resolves != before.Resolves || after.APIRequests != before.APIRequests {
		t.Error("offline run made requests")
	}
}

func TestNoSpaceBeforeFirstByte(t *testing.T) {
	fx := newFixture(t)
	pf, f := fx.setup(threeFiles())
	pf[0].Size = 1 << 60 // more than any disk
	_, err := f.Fetch(ctxT(t), repoA, commitA, pf)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("want ErrNoSpace, got %v", err)
	}
	if fx.srv.Stats().DataRequests != 0 {
		t.Error("bytes were asked for before the space check")
	}
}

func TestSharedBlobsAcrossRepos(t *testing.T) {
	fx := newFixture(t)
	shared := content(3, 256<<10)
	filesA := map[string][]byte{"codec.pth": shared, "a.safetensors": content(4, 100<<10), "config.json": []byte("{}")}
	filesB := map[string][]byte{"codec.pth": shared, "b.safetensors": content(5, 100<<10), "config.json": []byte("{}")}
	pa := fx.addRepo("org/full", commitA, filesA)
	pb := fx.addRepo("org/nvfp4", commitB, filesB)
	f := fx.fetcher(filepath.Join(fx.dir, "cache"))
	if _, err := f.Fetch(ctxT(t), "org/full", commitA, pa); err != nil {
		t.Fatal(err)
	}
	before := fx.srv.Stats().BytesServed
	res := fetchInto(t, f, "org/nvfp4", commitB, pb, filesB)
	if got := fx.srv.Stats().BytesServed - before; got != 100<<10 {
		t.Errorf("second repo: want only b.safetensors (%d bytes) downloaded, got %d", 100<<10, got)
	}
	for _, r := range res.Files {
		if r.Path == "codec.pth" && r.How != HowShared {
			t.Errorf("codec.pth: want shared, got %s", r.How)
		}
	}
	a, _ := os.Stat(f.Cache.BlobPath("org/full", pinOf("codec.pth", shared, true).SHA256))
	b, _ := os.Stat(f.Cache.BlobPath("org/nvfp4", pinOf("codec.pth", shared, true).SHA256))
	if !os.SameFile(a, b) {
		t.Error("shared blob is not a hard link")
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	for _, e := range fx.events {
		if e.Kind == EventShared && (e.Error != "" || e.Copied) {
			t.Errorf("a hard-linked blob's event must carry no error and no copy mark: %+v", e)
		}
	}
}

func TestFlockNamesHolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	release, err := Flock(ctxT(t), p, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Flock(ctxT(t), p, 150*time.Millisecond)
	if !errors.Is(err, ErrFlockHeld) || !strings.Contains(err.Error(), "is held by pid ") || !strings.HasPrefix(err.Error(), "hub: ") || strings.Contains(err.Error(), "fetch") {
		t.Fatalf("want ErrFlockHeld, prefixed hub:, naming a pid and no command, got %v", err)
	}
	release()
	r2, err := Flock(ctxT(t), p, time.Second)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	r2()
}

func TestDiskFullIsFatalAndKeepsPartials(t *testing.T) {
	err := diskError("/c/blobs/x.drama.incomplete", syscall.ENOSPC)
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) || !fatal(err) {
		t.Fatalf("ENOSPC: want fatal ErrNoSpace, got %v", err)
	}
	if !strings.Contains(err.Error(), "partial files stay") || !strings.Contains(err.Error(), "x.drama.incomplete") {
		t.Errorf("message should name the file and say the partials stay: %v", err)
	}
	if other := diskError("/p", syscall.EIO); errors.Is(other, ErrNoSpace) || !fatal(other) {
		t.Errorf("EIO: want fatal without ErrNoSpace, got %v", other)
	}
}

// TestWaitsForHFBlobFlock: while another process holds huggingface_hub's
// flock on a blob, drama waits; if the blob appears meanwhile it is not
// downloaded.
func TestWaitsForHFBlobFlock(t *testing.T) {
	fx := newFixture(t)
	files := map[string][]byte{"w.safetensors": content(8, 100<<10)}
	pf := fx.addRepo(repoA, commitA, files)
	cache := Cache{Dir: filepath.Join(fx.dir, "cache")}
	flockPath := filepath.Join(cache.Dir, ".locks", "models--org--model", pf[0].SHA256+".lock")
	release, err := Flock(ctxT(t), flockPath, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f := fx.fetcher(cache.Dir)
	f.FlockWait = 100 * time.Millisecond
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); !errors.Is(err, ErrFlockHeld) || !strings.HasPrefix(err.Error(), "hub: fetch: w.safetensors: ") || strings.Count(err.Error(), "hub: ") != 1 {
		t.Fatalf("want ErrFlockHeld naming the file and the package once while the blob's flock is held, got %v", err)
	}
	// The other process finishes the blob and lets go.
	os.MkdirAll(filepath.Dir(cache.BlobPath(repoA, pf[0].SHA256)), 0o755)
	os.WriteFile(cache.BlobPath(repoA, pf[0].SHA256), files["w.safetensors"], 0o644)
	release()
	res, err := f.Fetch(ctxT(t), repoA, commitA, pf)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files[0].How != HowPresent || fx.srv.Stats().DataRequests != 0 {
		t.Errorf("want the blob used as present, got %s with %d data requests", res.Files[0].How, fx.srv.Stats().DataRequests)
	}
}

func TestDelayHonoursServer(t *testing.T) {
	c := New("http://h", "", 1)
	c.Backoff, c.MaxBackoff = time.Millisecond, time.Second
	if d := c.delay(0, &StatusError{Status: 429, RetryAfter: 55 * time.Second}); d != 55*time.Second {
		t.Errorf("RateLimit t=55: want 55s, got %v", d)
	}
	for attempt := range 12 {
		if d := c.delay(attempt, errors.New("x")); d <= 0 || d > time.Second {
			t.Errorf("attempt %d: backoff %v outside (0, MaxBackoff]", attempt, d)
		}
	}
}

// TestStragglerIsSplit: a stream served at a crawl gets its remaining
// range split among idle workers instead of holding the file back.
func TestStragglerIsSplit(t *testing.T) {
	fx := newFixture(t)
	files := map[string][]byte{"w.safetensors": content(12, 1<<20)}
	pf, f := fx.setup(files)
	fx.srv.SlowBytesPerSec = 32 << 10 // the slow chunk alone would take 8 s
	fx.srv.SetFaults([]mirror.Fault{{Kind: mirror.FaultSlow, Times: 1}})
	f.Download.ChunkSize = 256 << 10
	f.Download.SplitAfter, f.Download.SplitMin = 20*time.Millisecond, 8<<10
	f.Download.IdleTimeout = 5 * time.Second
	fetchOK(t, f, pf, files)
	if fx.count(EventSplit) == 0 {
		t.Error("want the straggler split")
	}
}

// fetchUnderFault fetches three files from a mirror injecting the fault fs
// (tune may adjust the server and fetcher first) and checks that every file
// reached the cache whole.
func fetchUnderFault(t *testing.T, fs string, tune func(*fixture, *Fetcher)) (*fixture, mirror.Fault) {
	t.Helper()
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	fault := fx.fault(fs)
	if fault.Kind == mirror.FaultStall {
		f.Download.IdleTimeout = stallIdle
	}
	if tune != nil {
		tune(fx, f)
	}
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	checkCache(t, f.Cache, repoA, commitA, files)
	return fx, fault
}

// TestFaultMatrixWithSplits runs the faults with splitting on every span,
// so that split ranges meet every kind of failure.
func TestFaultMatrixWithSplits(t *testing.T) {
	for _, fs := range []string{"drop@1x3", "full200@2", "badrange@1", "416@3", "503x3", "stall@2", "flip@3", "expire@1x2", "short@2", "slow@0x2"} {
		t.Run(fs, func(t *testing.T) {
			fx, _ := fetchUnderFault(t, fs, func(fx *fixture, f *Fetcher) {
				fx.srv.BytesPerSec = 1 << 20
				f.Download.SplitAfter, f.Download.SplitMin = time.Millisecond, 2<<10
			})
			t.Logf("%d splits", fx.count(EventSplit))
		})
	}
}

// TestSharedBlobReplacesTruncatedOne: a wrong-size blob under the final
// name (an interrupted copy) is replaced whole by the other repository's
// good blob, not kept because the name exists.
func TestSharedBlobReplacesTruncatedOne(t *testing.T) {
	fx := newFixture(t)
	shared := content(3, 256<<10)
	pa := fx.addRepo("org/full", commitA, map[string][]byte{"codec.pth": shared})
	filesB := map[string][]byte{"codec.pth": shared}
	pb := fx.addRepo("org/nvfp4", commitB, filesB)
	f := fx.fetcher(filepath.Join(fx.dir, "cache"))
	if _, err := f.Fetch(ctxT(t), "org/full", commitA, pa); err != nil {
		t.Fatal(err)
	}
	bad := f.Cache.BlobPath("org/nvfp4", BlobName(pb[0]))
	os.MkdirAll(filepath.Dir(bad), 0o755)
	if err := os.WriteFile(bad, shared[:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	before := fx.srv.Stats().BytesServed
	res := fetchInto(t, f, "org/nvfp4", commitB, pb, filesB)
	if res.Files[0].How != HowShared || fx.srv.Stats().BytesServed != before {
		t.Errorf("want codec.pth shared without a download, got %s and %d bytes served", res.Files[0].How, fx.srv.Stats().BytesServed-before)
	}
}

// TestSameContentTwoPaths: two pinned paths with the same bytes share one
// blob; it is downloaded once and both paths link to it, with no wait on
// the fetch's own blob lock.
func TestSameContentTwoPaths(t *testing.T) {
	fx := newFixture(t)
	same := content(11, 200<<10)
	files := map[string][]byte{"a/weights.safetensors": same, "b/weights.safetensors": same, "config.json": []byte("{}"), "copy.json": []byte("{}")}
	pf, f := fx.setup(files)
	fetchOK(t, f, pf, files)
	if got, want := fx.srv.Stats().BytesServed, int64(len(same)+2); got != want {
		t.Errorf("bytes served: want each blob once (%d), got %d", want, got)
	}
	// A second run finds everything.
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

// TestCorruptBlobOfRightSizeIsFetchedAgain: a blob of the right size that
// drama's record does not vouch for is hashed before use; one that does not
// match is downloaded again, whether another tool left it or it changed
// after drama verified it.
func TestCorruptBlobOfRightSizeIsFetchedAgain(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	var big, small pins.File
	for _, p := range pf {
		if p.Path == "model-00001.safetensors" {
			big = p
		}
		if p.Path == "config.json" {
			small = p
		}
	}
	corrupt := func(p pins.File) {
		b := append([]byte(nil), files[p.Path]...)
		b[len(b)/2] ^= 0xff
		path := f.Cache.BlobPath(repoA, BlobName(p))
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Another tool left a corrupt blob of the right size.
	corrupt(big)
	fetchOK(t, f, pf, files)
	served := fx.srv.Stats().BytesServed
	total := totalSize(files)
	if served != total {
		t.Errorf("want the corrupt blob downloaded again (%d bytes in all), got %d", total, served)
	}
	// A blob drama verified, changed since (same size).
	corrupt(small)
	corrupt(big)
	fetchOK(t, f, pf, files)
	if got, want := fx.srv.Stats().BytesServed-served, big.Size+small.Size; got != want {
		t.Errorf("second run: want both changed blobs downloaded again (%d bytes), got %d", want, got)
	}
	// Unchanged since drama verified it: nothing is read or asked.
	before := fx.srv.Stats()
	n := fx.count(EventCheck)
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatal(err)
	}
	if fx.srv.Stats().DataRequests != before.DataRequests || fx.count(EventCheck) != n {
		t.Errorf("third run: want no request and no hash, got %d requests and %d checks", fx.srv.Stats().DataRequests-before.DataRequests, fx.count(EventCheck)-n)
	}
}

// TestRangeIgnored: a server that answers every ranged request with 200
// and the whole file (HTTP allows it) still gives a verified fetch, and
// each stream takes the rest of its file from such a body instead of
// asking again per chunk.
func TestRangeIgnored(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	fx.fault("full200x100000")
	fetchOK(t, f, pf, files)
	total := totalSize(files)
	st := fx.srv.Stats()
	if st.Faults[mirror.FaultFull200] == 0 {
		t.Fatal("the fault never fired")
	}
	if max := int64(f.Download.Workers) * total; st.BytesServed > max {
		t.Errorf("bytes served: want at most one whole file per stream (%d), got %d", max, st.BytesServed)
	}
	if fx.count(EventRetry) != 0 {
		t.Errorf("a 200 for a range is an answer, not a failure: got %d retries", fx.count(EventRetry))
	}
}

// setDiskFault installs the full-disk seam for one test.
func setDiskFault(t *testing.T, fn func(path string, off, n int64) error) {
	t.Helper()
	diskFault = fn
	t.Cleanup(func() { diskFault = nil })
}

// stateTmps lists sidecar temporaries left in a cache.
func stateTmps(t *testing.T, cache string) []string {
	t.Helper()
	var out []string
	filepath.Walk(cache, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestDiskFullAfterPreallocation: once the partial files are preallocated,
// a disk that fills up (another process) costs nothing: every later write,
// the resume sidecar's included, lands in space already held.
func TestDiskFullAfterPreallocation(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	f.Download.Workers = 1
	var full atomic.Bool
	setDiskFault(t, func(path string, off, n int64) error {
		if strings.HasSuffix(path, ".drama.incomplete") {
			full.Store(true) // the data has started: the disk is now full
		}
		if fi, err := os.Stat(path); full.Load() && (err != nil || off+n > fi.Size()) {
			return syscall.ENOSPC
		}
		return nil
	})
	if _, err := f.Fetch(ctxT(t), repoA, commitA, pf); err != nil {
		t.Fatalf("want the fetch to finish in the space it reserved, got %v", err)
	}
	checkCache(t, f.Cache, repoA, commitA, files)
	if tmps := stateTmps(t, f.Cache.Dir); len(tmps) > 0 {
		t.Errorf("left temporaries: %v", tmps)
	}
}

// TestResumeAfterDiskFull: when a write fails with ENOSPC mid-fetch, the
// fetch stops with ErrNoSpace and leaves no empty temporaries; once space is
// back, the resume asks only for what the sidecar does not already hold.
func TestResumeAfterDiskFull(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	f.Download.Workers = 1
	var saves atomic.Int64
	setDiskFault(t, func(path string, off, n int64) error {
		if strings.Contains(path, ".state") && saves.Add(1) > 6 {
			return syscall.ENOSPC
		}
		return nil
	})
	_, err := f.Fetch(ctxT(t), repoA, commitA, pf)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("want ErrNoSpace, got %v", err)
	}
	if tmps := stateTmps(t, f.Cache.Dir); len(tmps) > 0 {
		t.Errorf("left temporaries: %v", tmps)
	}
	diskFault = nil
	served := fx.srv.Stats().BytesServed
	fx.mu.Lock()
	fx.events = nil
	fx.mu.Unlock()
	fetchOK(t, f, pf, files)
	var total, onDisk int64 // of the files still to download
	fx.mu.Lock()
	for _, e := range fx.events {
		if e.Kind == EventPlan {
			total += e.Size
			onDisk += e.Bytes
		}
	}
	fx.mu.Unlock()
	if onDisk == 0 {
		t.Error("the resume found nothing on disk: the partial was not kept")
	}
	if got := fx.srv.Stats().BytesServed - served; got != total-onDisk {
		t.Errorf("resume: want %d bytes (all but the %d on disk), got %d", total-onDisk, onDisk, got)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestUnreachableEndpoint: a server that refuses connections stops a fetch
// after one request's retries, each told as one line, with an error that
// names the server, the reason and how long it was tried.
func TestUnreachableEndpoint(t *testing.T) {
	fx := newFixture(t)
	pf, f := fx.setup(threeFiles())
	f.Client.Endpoint = "http://" + closedPort(t)
	_, err := f.Fetch(ctxT(t), repoA, commitA, pf)
	var ne *NetError
	if !errors.Is(err, ErrUnreachable) || !errors.As(err, &ne) {
		t.Fatalf("want a NetError, got %v", err)
	}
	if ne.Host != f.Client.Endpoint || ne.Attempts != f.Client.Retries+1 || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("want %s, %d attempts, connection refused; got %v", f.Client.Endpoint, f.Client.Retries+1, err)
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	retries := 0
	line := regexp.MustCompile(`^retrying in [0-9.]+m?s \(\d of \d\): connection refused$`)
	for _, e := range fx.events {
		if e.Kind == EventRetry {
			retries++
			if !line.MatchString(e.Error) {
				t.Errorf("retry line %q", e.Error)
			}
		}
		if e.Kind == EventPlan || e.Kind == EventStart {
			t.Errorf("a file was planned before the server answered: %+v", e)
		}
	}
	if retries != f.Client.Retries {
		t.Errorf("want one retry event per retry (%d), got %d", f.Client.Retries, retries)
	}
	if m, _ := filepath.Glob(filepath.Join(f.Cache.RepoDir(repoA), "blobs", "*")); len(m) > 0 {
		t.Errorf("left files: %v", m)
	}
}

func TestCheckEndpoint(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"https://huggingface.co", true},
		{"http://127.0.0.1:8080", true},
		{"http://[::1]:80/prefix", true},
		{"127.0.0.1:8080", false},
		{"huggingface.co", false},
		{"ftp://x", false},
		{"http://", false},
		{"http://h:99999", false},
		{"http://h/?a=1", false},
	} {
		if err := CheckEndpoint(c.in); (err == nil) != c.ok {
			t.Errorf("%q: want ok %v, got %v", c.in, c.ok, err)
		}
	}
}

// TestNetReason: a failure to get any answer is told in a few words, not
// as Go's raw error.
func TestNetReason(t *testing.T) {
	dial := func(err error) error {
		return &url.Error{Op: "Head", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{dial(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}), "connection refused"},
		{&url.Error{Op: "Head", URL: "http://hub.invalid", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "hub.invalid", IsNotFound: true}}}, "no such host hub.invalid"},
		{dial(&os.SyscallError{Syscall: "connect", Err: syscall.ENETUNREACH}), "network unreachable"},
		{&url.Error{Op: "Get", URL: "http://x", Err: context.DeadlineExceeded}, "timed out"},
	} {
		if !isNetwork(c.err) {
			t.Errorf("%v: not seen as a network failure", c.err)
		}
		if got := netReason(c.err); got != c.want {
			t.Errorf("%v: want %q, got %q", c.err, c.want, got)
		}
	}
}
