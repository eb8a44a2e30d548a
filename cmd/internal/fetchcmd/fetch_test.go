package fetchcmd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/hubaccess"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/pins/hub/hubtest"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

const testCommit = "cccccccccccccccccccccccccccccccccccccccc"

func TestFetchFlags(t *testing.T) {
	for _, c := range []struct {
		args  []string
		check func(*FetchOptions) bool
		usage bool
	}{
		{nil, func(o *FetchOptions) bool {
			return o.Workers == 8 && o.ChunkMiB == 16 && !o.AcceptLicense && !o.NoCache
		}, false},
		{[]string{"--workers", "16", "--chunk-size", "64", "--accept-license", "--no-cache", "--endpoint", "http://x", "--pins", "p.json"},
			func(o *FetchOptions) bool {
				return o.Workers == 16 && o.ChunkMiB == 64 && o.AcceptLicense && o.NoCache && o.Endpoint == "http://x" && o.PinsFile == "p.json"
			}, false},
		{[]string{"--idle-timeout", "3s", "--lock-wait", "1s"}, func(o *FetchOptions) bool { return o.IdleTimeout == 3*time.Second && o.LockWait == time.Second }, false},
		{[]string{"--workers", "0"}, nil, true},
		{[]string{"--chunk-size", "0"}, nil, true},
		{[]string{"extra"}, nil, true},
	} {
		ios, _, _, _ := cmdtest.IOStreams()
		var got *FetchOptions
		cmd := NewCmd(cmdtest.Factory(ios), func(_ context.Context, o *FetchOptions) error { got = o; return nil })
		cmd.SetArgs(c.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		if c.usage {
			if err == nil || (cmdutil.ExitCode(err) != cmdutil.ExitUsage && !strings.Contains(err.Error(), "arg")) {
				t.Errorf("%v: want a usage error, got %v", c.args, err)
			}
			continue
		}
		if err != nil || got == nil || !c.check(got) {
			t.Errorf("%v: err %v, options %+v", c.args, err, got)
		}
	}
}

// env is a mirror with one repository and a pins file naming it.
type testEnv struct {
	srv              *mirror.Server
	url              string
	root, cache, dir string
	pinsPath         string
	files            map[string][]byte
}

func newTestEnv(t *testing.T, complete bool) *testEnv {
	t.Helper()
	e := &testEnv{dir: t.TempDir()}
	e.root, e.cache = filepath.Join(e.dir, "root"), filepath.Join(e.dir, "hfcache")
	e.files = map[string][]byte{
		"model-00001-of-00001.safetensors": hubtest.Bytes(1, 3<<20+5),
		"codec.pth":                        hubtest.Bytes(2, 1<<20),
		"config.json":                      []byte(`{"arch":"drama"}`),
		"tokenizer/tokenizer.json":         []byte(`{"v":1}`),
	}
	p := &pins.Pins{Format: pins.Format, Variant: "full", Repo: "fishaudio/drama-3", RepoType: "model",
		Revision: testCommit, License: "Test Licence 1.0", LicenseURL: "https://example.invalid/licence", Engine: "cuda"}
	for name, b := range e.files {
		if complete {
			s := sha256.Sum256(b)
			p.Files = append(p.Files, pins.File{Path: name, Size: int64(len(b)), SHA256: hex.EncodeToString(s[:]), LFS: len(b) > 1000})
		}
	}
	if complete {
		p.ExpectedFiles = len(e.files)
	}
	e.pinsPath = filepath.Join(e.dir, "pins.json")
	if err := p.WriteFile(e.pinsPath); err != nil {
		t.Fatal(err)
	}
	e.srv, e.url = hubtest.Mirror(t, filepath.Join(e.dir, "mirror"), p.Repo, testCommit, e.files, 1000)
	return e
}

func (e *testEnv) factory(ios *cmdutil.IOStreams, extraEnv ...string) *cmdutil.Factory {
	f := cmdtest.Factory(ios, append([]string{"HF_HUB_CACHE", e.cache, "HOME", e.dir}, extraEnv...)...)
	f.Global.Root = e.root
	return f
}

func (e *testEnv) opts(f *cmdutil.Factory) *FetchOptions {
	return &FetchOptions{F: f, HubFlags: hubaccess.HubFlags{Endpoint: e.url, PinsFile: e.pinsPath}, Workers: 4, ChunkMiB: 1,
		IdleTimeout: 5 * time.Second, LockWait: time.Second, AcceptLicense: true}
}

func (e *testEnv) checkVariantDir(t *testing.T, wantLinks bool) {
	t.Helper()
	for name, want := range e.files {
		p := filepath.Join(e.root, "full", filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: content differs or missing: %v", name, err)
		}
		fi, _ := os.Lstat(p)
		if isLink := fi != nil && fi.Mode()&os.ModeSymlink != 0; isLink != wantLinks {
			t.Errorf("%s: symlink %v, want %v", name, isLink, wantLinks)
		}
	}
	lock, err := pins.ReadFile(filepath.Join(e.root, "full", pins.LockFileName))
	if err != nil || !lock.Complete() || len(lock.Files) != len(e.files) {
		t.Errorf("pins.lock.json: %v %+v", err, lock)
	}
}

func TestRunFetchIncompletePins(t *testing.T) {
	e := newTestEnv(t, false)
	ios, _, out, errOut := cmdtest.IOStreams()
	f := e.factory(ios)
	if err := runFetch(context.Background(), e.opts(f)); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	e.checkVariantDir(t, true)
	for _, name := range []string{"codec.pth", "config.json", "tokenizer/tokenizer.json"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("stdout table lacks %s:\n%s", name, out)
		}
	}
	for _, want := range []string{"Test Licence 1.0", "https://example.invalid/licence", "verified: codec.pth"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	acc, err := hubaccess.ReadAcceptances(e.root)
	if err != nil || len(acc) != 1 || acc[0].How != "flag" || acc[0].User == "" {
		t.Errorf("acceptance record: %v %+v", err, acc)
	}
	// The second run downloads nothing and needs no flag.
	before := e.srv.Stats()
	o := e.opts(f)
	o.AcceptLicense = false
	if err := runFetch(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if after := e.srv.Stats(); after.DataRequests != before.DataRequests || after.HeadRequests != before.HeadRequests {
		t.Errorf("second run made data requests: %+v -> %+v", before, after)
	}
}

func TestLicenseNotAccepted(t *testing.T) {
	e := newTestEnv(t, true)
	ios, _, _, errOut := cmdtest.IOStreams()
	o := e.opts(e.factory(ios))
	o.AcceptLicense = false
	err := runFetch(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "--accept-license") {
		t.Fatalf("want a refusal naming --accept-license, got %v", err)
	}
	if !strings.Contains(errOut.String(), "Test Licence 1.0") {
		t.Errorf("licence not shown:\n%s", errOut)
	}
	if st := e.srv.Stats(); st.Resolves != 0 || st.APIRequests != 0 {
		t.Errorf("requests before acceptance: %+v", st)
	}
}

func TestLicensePrompt(t *testing.T) {
	for _, c := range []struct {
		typed string
		ok    bool
	}{{"yes\n", true}, {"no\n", false}, {"", false}} {
		e := newTestEnv(t, true)
		ios, in, _, _ := cmdtest.IOStreams()
		ios.SetStdinTTY(true)
		ios.SetStderrTTY(true)
		in.WriteString(c.typed)
		f := e.factory(ios)
		f.Global.Quiet = true
		o := e.opts(f)
		o.AcceptLicense = false
		err := runFetch(context.Background(), o)
		if (err == nil) != c.ok {
			t.Errorf("typed %q: want ok=%v, got %v", c.typed, c.ok, err)
		}
		if acc, _ := hubaccess.ReadAcceptances(e.root); c.ok && (len(acc) != 1 || acc[0].How != "prompt") {
			t.Errorf("typed %q: record %+v", c.typed, acc)
		}
	}
}

func TestFetchJSONEvents(t *testing.T) {
	e := newTestEnv(t, true)
	ios, _, out, _ := cmdtest.IOStreams()
	f := e.factory(ios)
	f.Global.JSON = true
	if err := runFetch(context.Background(), e.opts(f)); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not NDJSON: %q: %v", sc.Text(), err)
		}
		kinds[ev["event"].(string)]++
	}
	if kinds["verified"] != 4 || kinds["done"] != 1 || kinds["result"] != 1 {
		t.Errorf("events: %v", kinds)
	}
}

func TestFetchNoCache(t *testing.T) {
	e := newTestEnv(t, true)
	ios, _, _, _ := cmdtest.IOStreams()
	o := e.opts(e.factory(ios))
	o.NoCache = true
	if err := runFetch(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	e.checkVariantDir(t, false)
	if _, err := os.Stat(e.cache); err == nil {
		t.Error("--no-cache wrote into the HF cache")
	}
}

func TestOfflineIncompleteRefused(t *testing.T) {
	e := newTestEnv(t, false)
	ios, _, _, _ := cmdtest.IOStreams()
	err := runFetch(context.Background(), e.opts(e.factory(ios, "HF_HUB_OFFLINE", "1")))
	if err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Fatalf("want an offline refusal, got %v", err)
	}
	// The advice locks the user's own pins file, not the built-in pins.
	if want := "run drama pins lock --variant full --pins " + e.pinsPath + " --root " + e.root + " online once"; !strings.Contains(err.Error(), want) {
		t.Errorf("want %q in\n%v", want, err)
	}
}

func TestMismatchExitCode(t *testing.T) {
	e := newTestEnv(t, true)
	p, _ := pins.ReadFile(e.pinsPath)
	p.Files[0].SHA256 = strings.Repeat("1", 64)
	p.WriteFile(e.pinsPath)
	ios, _, _, _ := cmdtest.IOStreams()
	err := runFetch(context.Background(), e.opts(e.factory(ios)))
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch {
		t.Fatalf("want exit 3, got %d: %v", cmdutil.ExitCode(err), err)
	}
}

func TestOfflineVerifiesBySHA256(t *testing.T) {
	e := newTestEnv(t, true)
	ios, _, _, _ := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatal(err)
	}
	before := e.srv.Stats()
	ios, _, _, errOut := cmdtest.IOStreams()
	off := e.factory(ios, "HF_HUB_OFFLINE", "1")
	if err := runFetch(context.Background(), e.opts(off)); err != nil {
		t.Fatalf("offline, complete: %v\n%s", err, errOut)
	}
	if after := e.srv.Stats(); after.Resolves != before.Resolves || after.APIRequests != before.APIRequests {
		t.Error("offline run made requests")
	}
	// Same size, different bytes: present but not verified.
	blob, _ := filepath.EvalSymlinks(filepath.Join(e.root, "full", "codec.pth"))
	b, _ := os.ReadFile(blob)
	b[0] ^= 1
	os.WriteFile(blob, b, 0o644)
	err := runFetch(context.Background(), e.opts(e.factory(ios, "HF_HUB_OFFLINE", "1")))
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(err.Error(), "codec.pth") {
		t.Fatalf("want exit 3 naming codec.pth, got %v", err)
	}
}

// TestOfflineHashesEachFileOnce: offline, a file drama has verified and
// not seen change since is not hashed again, and one it has not verified
// (a cache another tool filled) is hashed once, not a second time after it
// is placed.
func TestOfflineHashesEachFileOnce(t *testing.T) {
	e := newTestEnv(t, true)
	ios, _, _, _ := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatal(err)
	}
	offline := func() string {
		t.Helper()
		ios, _, _, errOut := cmdtest.IOStreams()
		if err := runFetch(context.Background(), e.opts(e.factory(ios, "HF_HUB_OFFLINE", "1"))); err != nil {
			t.Fatalf("offline: %v\n%s", err, errOut)
		}
		return errOut.String()
	}
	if out := offline(); strings.Contains(out, "check: ") || strings.Contains(out, "checking the sha256") {
		t.Errorf("offline after a verified fetch: want nothing hashed, got\n%s", out)
	}
	repoDir := hub.Cache{Dir: e.cache}.RepoDir("fishaudio/drama-3")
	if err := os.Remove(filepath.Join(repoDir, hub.RecordName)); err != nil {
		t.Fatal(err)
	}
	out := offline()
	if got := strings.Count(out, ": in the cache but not verified by drama: hashing it"); got != len(e.files) || strings.Contains(out, "checking the sha256") {
		t.Errorf("offline on blobs drama did not verify: want each of the %d files hashed once (%d check lines) and no second pass, got\n%s", len(e.files), got, out)
	}
}

// TestNVFP4AfterFullDownloadsNoSharedBytes: the second variant links the
// files it shares with the first instead of downloading them.
func TestNVFP4AfterFullDownloadsNoSharedBytes(t *testing.T) {
	e := newTestEnv(t, true) // full: fishaudio/drama-3
	const nvCommit = "dddddddddddddddddddddddddddddddddddddddd"
	own := hubtest.Bytes(3, 2<<20)
	nvFiles := map[string][]byte{"codec.pth": e.files["codec.pth"], "config.json": e.files["config.json"], "model-nvfp4.safetensors": own}
	p := &pins.Pins{Format: pins.Format, Variant: "nvfp4", Repo: "plotarmordev/drama-3-NVFP4-Pruned", RepoType: "model",
		Revision: nvCommit, License: "Test Licence 1.0", Engine: "cuda"}
	for name, b := range nvFiles {
		fp := filepath.Join(e.dir, "mirror", "plotarmordev", "drama-3-NVFP4-Pruned", nvCommit, name)
		os.MkdirAll(filepath.Dir(fp), 0o755)
		os.WriteFile(fp, b, 0o644)
		s := sha256.Sum256(b)
		p.Files = append(p.Files, pins.File{Path: name, Size: int64(len(b)), SHA256: hex.EncodeToString(s[:]), LFS: len(b) > 1000})
	}
	nvPins := filepath.Join(e.dir, "nvfp4.json")
	if err := p.WriteFile(nvPins); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatal(err)
	}
	before := e.srv.Stats().BytesServed
	ios, _, out, _ := cmdtest.IOStreams()
	f := e.factory(ios)
	f.Global.Variant = "nvfp4"
	o := e.opts(f)
	o.PinsFile = nvPins
	if err := runFetch(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if got := e.srv.Stats().BytesServed - before; got != int64(len(own)) {
		t.Errorf("nvfp4 after full: want only its own %d bytes downloaded, got %d", len(own), got)
	}
	if !strings.Contains(out.String(), "codec.pth") || !strings.Contains(out.String(), "shared") {
		t.Errorf("table should show codec.pth as shared:\n%s", out)
	}
	for name, want := range nvFiles {
		if got, err := os.ReadFile(filepath.Join(e.root, "nvfp4", name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("nvfp4/%s: %v", name, err)
		}
	}
}

func TestDisableSymlinksEnv(t *testing.T) {
	e := newTestEnv(t, true)
	ios, _, _, _ := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios, "HF_HUB_DISABLE_SYMLINKS", "1"))); err != nil {
		t.Fatal(err)
	}
	e.checkVariantDir(t, false)
}

func TestRetryLinesAreRateLimited(t *testing.T) {
	ios, _, _, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	r := newReporter(f, &pins.Pins{})
	clock := time.Unix(0, 0)
	r.now = func() time.Time { return clock }
	for i := range 25 {
		r.event(hub.Event{Kind: hub.EventRetry, Path: "a.safetensors", Error: "503"})
		if i == 19 {
			clock = clock.Add(cmdutil.LineInterval)
		}
	}
	lines := strings.Count(errOut.String(), "retry: a.safetensors")
	if lines != 2 || !strings.Contains(errOut.String(), "and 19 more retries") {
		t.Errorf("want 2 retry lines, the second counting 19 hidden; got:\n%s", errOut)
	}
}

// TestPinsFileVariantNamesTheDirectory: a --pins file's variant decides
// where its files go (the folder drama verify checks for it), and a
// --variant that names another one is refused before any request.
func TestPinsFileVariantNamesTheDirectory(t *testing.T) {
	e := newTestEnv(t, true)
	ios, _, _, errOut := cmdtest.IOStreams()
	f := e.factory(ios)
	f.Global.Variant = "nvfp4"
	o := e.opts(f)
	o.VariantSet = true
	if err := runFetch(context.Background(), o); err == nil || !strings.Contains(err.Error(), "is for variant full, not nvfp4") {
		t.Fatalf("want the other variant refused, got %v", err)
	}
	if st := e.srv.Stats(); st.Resolves+st.APIRequests != 0 {
		t.Errorf("refusal after %d requests", st.Resolves+st.APIRequests)
	}
	o.VariantSet = false // the default variant does not override the file's
	if err := runFetch(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	e.checkVariantDir(t, true)
	if _, err := os.Stat(filepath.Join(e.root, "nvfp4")); !os.IsNotExist(err) {
		t.Errorf("nothing may land in <root>/nvfp4: %v", err)
	}
}

// TestRelativeRootAndCache: a relative --root and HF_HUB_CACHE give links
// that resolve from anywhere, not links relative to the wrong folder.
func TestRelativeRootAndCache(t *testing.T) {
	e := newTestEnv(t, true)
	t.Chdir(e.dir)
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "HF_HUB_CACHE", "hfcache", "HOME", e.dir)
	f.Global.Root = "root"
	if err := runFetch(context.Background(), e.opts(f)); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	e.checkVariantDir(t, true)
	if _, err := os.Stat(filepath.Join(e.cache, "models--fishaudio--drama-3", "snapshots", testCommit, "config.json")); err != nil {
		t.Errorf("the cache is not where HF_HUB_CACHE said: %v", err)
	}
}

// TestMalformedEndpointIsUsageError: an endpoint without a scheme is
// refused before any request, naming the flag or variable it came from.
func TestMalformedEndpointIsUsageError(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--endpoint", "127.0.0.1:8080", "--accept-license"}, nil, "--endpoint"},
		{[]string{"--accept-license"}, []string{"HF_ENDPOINT", "localhost:9"}, "HF_ENDPOINT"},
	} {
		ios, _, _, _ := cmdtest.IOStreams()
		f := cmdtest.Factory(ios, append(c.env, "HOME", t.TempDir())...)
		f.Global.Root = t.TempDir()
		err := cmdtest.Execute(NewCmd(f, nil), c.args...)
		if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%v %v: want a usage error naming %s, got %v", c.args, c.env, c.want, err)
		}
	}
}

// TestUnreachableEndpointMessage: a Hub that refuses connections ends the
// fetch at once with one line per retry and a message that names the
// address, where it came from and what to do, repeating the command.
func TestUnreachableEndpointMessage(t *testing.T) {
	// Complete pins reach the Hub through the fetch; incomplete ones first
	// through the listing that completes them.
	for _, complete := range []bool{true, false} {
		e := newTestEnv(t, complete)
		dead := "http://" + closedAddr(t)
		ios, _, _, errOut := cmdtest.IOStreams()
		f := e.factory(ios)
		// A global flag, as drama's root command has them.
		top := &cobra.Command{Use: "drama", SilenceUsage: true, SilenceErrors: true}
		top.PersistentFlags().StringVar(&f.Global.Root, "root", "", "root")
		top.AddCommand(NewCmd(f, nil))
		top.SetArgs([]string{"fetch", "--root", e.root, "--endpoint", dead, "--pins", e.pinsPath, "--accept-license", "--workers", "2"})
		top.SetOut(&bytes.Buffer{})
		top.SetErr(&bytes.Buffer{})
		err := top.Execute()
		if err == nil {
			t.Fatal("want an error")
		}
		for _, want := range []string{dead, "connection refused", "attempts over", "--endpoint", "HF_ENDPOINT",
			"\n    drama fetch --accept-license ", "--root " + e.root, "--endpoint " + dead, "--pins " + e.pinsPath, "--accept-license", "--workers 2"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("complete %v: message lacks %q:\n%v", complete, want, err)
			}
		}
		// The cache alone serves complete pins; pins without digests need
		// the listing, so offering HF_HUB_OFFLINE=1 would only fail again.
		if offline := strings.Contains(err.Error(), "HF_HUB_OFFLINE=1 drama fetch --accept-license "); offline != complete {
			t.Errorf("complete %v: HF_HUB_OFFLINE=1 offered: %v:\n%v", complete, offline, err)
		}
		if got := strings.Count(errOut.String(), "): connection refused\n"); got != 5 ||
			!strings.Contains(errOut.String(), "retry: listing of fishaudio/drama-3@ccccccc: retrying in ") ||
			!strings.Contains(errOut.String(), "(1 of 5): connection refused") {
			t.Errorf("complete %v: want 5 retry lines, got %d:\n%s", complete, got, errOut)
		}
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestFetchRepairsWhatVerifyFound: a blob corrupted in place with its size
// kept fails drama verify; drama fetch then hashes it (its record no longer
// vouches for it), downloads it again, and verify passes.
func TestFetchRepairsWhatVerifyFound(t *testing.T) {
	e := newTestEnv(t, true)
	ios, _, _, _ := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatal(err)
	}
	p, err := pins.ReadFile(e.pinsPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.root, "full")
	verify := func() *pins.Report {
		rep, err := pins.Verify(context.Background(), dir, p, pins.VerifyOptions{Level: pins.LevelSHA256, NoRecord: true})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	blob, _ := filepath.EvalSymlinks(filepath.Join(dir, "codec.pth"))
	b, _ := os.ReadFile(blob)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(blob, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if verify().OK() {
		t.Fatal("verify missed the corrupt blob")
	}
	before := e.srv.Stats().BytesServed
	ios, _, _, errOut := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "check: codec.pth (1.0 MiB): in the cache but not verified by drama") ||
		!strings.Contains(errOut.String(), "check: codec.pth: mismatch") {
		t.Errorf("want the check and its failure told, got:\n%s", errOut)
	}
	if got := e.srv.Stats().BytesServed - before; got != int64(len(b)) {
		t.Errorf("want codec.pth (%d bytes) downloaded again, got %d bytes", len(b), got)
	}
	if rep := verify(); !rep.OK() {
		t.Errorf("verify after fetch: %+v", rep.Files)
	}
}

// TestFetchWaitsForAnotherFetchOfTheRoot: while another process holds the
// root's flock, drama fetch waits --lock-wait, then says who takes that
// flock, which pid holds it and the flag that waits longer; nothing is
// fetched.
func TestFetchWaitsForAnotherFetchOfTheRoot(t *testing.T) {
	e := newTestEnv(t, true)
	release, err := hub.Flock(context.Background(), filepath.Join(e.root, pins.StateDirName, "fetch.lock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ios, _, _, _ := cmdtest.IOStreams()
	opts := e.opts(e.factory(ios))
	opts.LockWait = 100 * time.Millisecond
	err = runFetch(context.Background(), opts)
	for _, want := range []string{"another drama fetch or drama rm of this root holds it", "is held by pid ", "--lock-wait"} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
	if st := e.srv.Stats(); st.DataRequests != 0 {
		t.Errorf("fetched %d ranges while another fetch held the root", st.DataRequests)
	}
}

// TestPinsNamingFilesUseTheLock: pins that name some files without their
// digests are completed from the Hub once; later fetches take the digests
// from the lock file that fetch wrote, so they work offline and ask the Hub
// nothing.
func TestPinsNamingFilesUseTheLock(t *testing.T) {
	e := newTestEnv(t, false)
	p, err := pins.ReadFile(e.pinsPath)
	if err != nil {
		t.Fatal(err)
	}
	p.Files = []pins.File{{Path: "config.json"}, {Path: "codec.pth"}}
	if err := p.WriteFile(e.pinsPath); err != nil {
		t.Fatal(err)
	}
	ios, _, _, errOut := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	before := e.srv.Stats()
	ios, _, _, errOut = cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios, "HF_HUB_OFFLINE", "1"))); err != nil {
		t.Fatalf("offline, pins naming files the lock holds: %v\n%s", err, errOut)
	}
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatal(err)
	}
	if after := e.srv.Stats(); after.Resolves != before.Resolves || after.APIRequests != before.APIRequests || after.DataRequests != before.DataRequests {
		t.Errorf("fetches after the first asked the Hub: %+v -> %+v", before, after)
	}
	// a file the lock does not hold: completed from the Hub again
	p.Files = append(p.Files, pins.File{Path: "tokenizer/tokenizer.json"})
	if err := p.WriteFile(e.pinsPath); err != nil {
		t.Fatal(err)
	}
	if err := runFetch(context.Background(), e.opts(e.factory(ios, "HF_HUB_OFFLINE", "1"))); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Fatalf("offline with a file the lock lacks: %v, want the offline refusal", err)
	}
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatal(err)
	}
	lock, err := pins.ReadFile(filepath.Join(e.root, "full", pins.LockFileName))
	if err != nil || !lock.Complete() || len(lock.Files) != 3 {
		t.Fatalf("the lock after the third file: %v %+v", err, lock)
	}
}
