package pinscmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/hubaccess"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/pins/hub/hubtest"
)

const lockCommit = "cccccccccccccccccccccccccccccccccccccccc"

// lockEnv is a mirror of one repository and incomplete pins naming it.
type lockEnv struct {
	url, dir, pinsPath string
	files              map[string][]byte
}

func newLockEnv(t *testing.T) *lockEnv {
	t.Helper()
	e := &lockEnv{dir: t.TempDir(), files: map[string][]byte{
		"model.safetensors": bytes.Repeat([]byte("w"), 5000),
		"codec.pth":         bytes.Repeat([]byte("c"), 2000),
		"config.json":       []byte(`{"arch":"drama"}`),
		"tokenizer/t.json":  []byte(`{"v":1}`),
	}}
	p := &pins.Pins{Format: pins.Format, Variant: "full", Repo: "fishaudio/drama-3", RepoType: "model",
		Revision: lockCommit, License: "Test Licence 1.0", Engine: "cuda", ExpectedFiles: len(e.files)}
	e.pinsPath = filepath.Join(e.dir, "pins.json")
	if err := p.WriteFile(e.pinsPath); err != nil {
		t.Fatal(err)
	}
	_, e.url = hubtest.Mirror(t, filepath.Join(e.dir, "mirror"), p.Repo, lockCommit, e.files, 1000)
	return e
}

func (e *lockEnv) factory(ios *cmdutil.IOStreams) *cmdutil.Factory {
	f := cmdtest.Factory(ios, "HF_HUB_CACHE", filepath.Join(e.dir, "hfcache"), "HOME", e.dir)
	f.Global.Root = filepath.Join(e.dir, "root")
	return f
}

func TestLockFlags(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	var got *LockOptions
	cmd := NewCmdLock(cmdtest.Factory(ios), func(_ context.Context, o *LockOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--endpoint", "http://m", "--pins", "a.json", "-o", "-"})
	if err := cmd.Execute(); err != nil || got.Endpoint != "http://m" || got.PinsFile != "a.json" || got.Output != "-" {
		t.Fatalf("err %v, options %+v", err, got)
	}
}

func TestRunLock(t *testing.T) {
	e := newLockEnv(t)
	ios, _, out, _ := cmdtest.IOStreams()
	f := e.factory(ios)
	outPath := filepath.Join(e.dir, "locked.json")
	if err := runLock(context.Background(), &LockOptions{F: f, HubFlags: hubaccess.HubFlags{Endpoint: e.url, PinsFile: e.pinsPath}, Output: outPath}); err != nil {
		t.Fatal(err)
	}
	p, err := pins.ReadFile(outPath)
	if err != nil || !p.Complete() || len(p.Files) != len(e.files) {
		t.Fatalf("complete pins: %v %+v", err, p)
	}
	for _, pf := range p.Files {
		s := sha256.Sum256(e.files[pf.Path])
		if pf.SHA256 != hex.EncodeToString(s[:]) || pf.Size != int64(len(e.files[pf.Path])) {
			t.Errorf("%s: filled %+v", pf.Path, pf)
		}
		if !strings.Contains(out.String(), pf.SHA256) {
			t.Errorf("table lacks %s", pf.SHA256)
		}
	}
	// A commit the Hub does not have is an error, not a guess.
	bad, _ := pins.ReadFile(e.pinsPath)
	bad.Revision = strings.Repeat("d", 40)
	bad.WriteFile(e.pinsPath)
	err = runLock(context.Background(), &LockOptions{F: f, HubFlags: hubaccess.HubFlags{Endpoint: e.url, PinsFile: e.pinsPath}, Output: "-"})
	if !errors.Is(err, hub.ErrNotFound) || !strings.Contains(err.Error(), "the Hub address "+e.url+" comes from --endpoint") {
		t.Errorf("unknown commit: want ErrNotFound saying where the address came from, got %v", err)
	}
}

// TestLockDefaultOutputIsTheLockFile: with no --output the complete pins
// go to the variant's lock file in the root.
func TestLockDefaultOutputIsTheLockFile(t *testing.T) {
	e := newLockEnv(t)
	ios, _, _, _ := cmdtest.IOStreams()
	f := e.factory(ios)
	if err := runLock(context.Background(), &LockOptions{F: f, HubFlags: hubaccess.HubFlags{Endpoint: e.url, PinsFile: e.pinsPath}}); err != nil {
		t.Fatal(err)
	}
	if p, err := pins.ReadFile(filepath.Join(f.Global.Root, "full", pins.LockFileName)); err != nil || !p.Complete() {
		t.Fatalf("lock file: %v %+v", err, p)
	}
}

// TestLockTotalsDisagreeIsMismatch: a listing that disagrees with the
// totals the pins carry exits 3 and writes nothing.
func TestLockTotalsDisagreeIsMismatch(t *testing.T) {
	e := newLockEnv(t)
	p, _ := pins.ReadFile(e.pinsPath)
	p.ExpectedFiles++
	p.WriteFile(e.pinsPath)
	ios, _, _, _ := cmdtest.IOStreams()
	outPath := filepath.Join(e.dir, "locked.json")
	err := runLock(context.Background(), &LockOptions{F: e.factory(ios), HubFlags: hubaccess.HubFlags{Endpoint: e.url, PinsFile: e.pinsPath}, Output: outPath})
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(fmt.Sprint(err), "pinned totals") {
		t.Fatalf("want exit 3 naming the totals, got %d: %v", cmdutil.ExitCode(err), err)
	}
	if _, err := pins.ReadFile(outPath); err == nil {
		t.Error("pins that disagree with their totals were written")
	}
}

// TestLockMalformedEndpointIsUsageError: an endpoint without a scheme is
// refused before any request, naming the flag or variable it came from.
func TestLockMalformedEndpointIsUsageError(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--endpoint", "127.0.0.1:8080"}, nil, "--endpoint"},
		{nil, []string{"HF_ENDPOINT", "localhost:9"}, "HF_ENDPOINT"},
	} {
		ios, _, _, _ := cmdtest.IOStreams()
		f := cmdtest.Factory(ios, append(c.env, "HOME", t.TempDir())...)
		f.Global.Root = t.TempDir()
		err := cmdtest.Execute(NewCmdLock(f, nil), c.args...)
		if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%v %v: want a usage error naming %s, got %v", c.args, c.env, c.want, err)
		}
	}
}

// TestLockUnreachableRepeatsTheCommand: a Hub that takes no connection
// ends drama pins lock with the address, where it came from, and the
// user's own command line to run again; not with HF_HUB_OFFLINE, since the
// cache holds no listing to lock from.
func TestLockUnreachableRepeatsTheCommand(t *testing.T) {
	e := newLockEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	ios, _, _, _ := cmdtest.IOStreams()
	f := e.factory(ios)
	root := f.Global.Root
	top := &cobra.Command{Use: "drama", SilenceUsage: true, SilenceErrors: true}
	top.PersistentFlags().StringVar(&f.Global.Root, "root", "", "root")
	pinsCmd := &cobra.Command{Use: "pins"}
	pinsCmd.AddCommand(NewCmdLock(f, nil))
	top.AddCommand(pinsCmd)
	top.SetArgs([]string{"pins", "lock", "--root", root, "--endpoint", dead, "--pins", e.pinsPath, "-o", "-"})
	top.SetOut(&bytes.Buffer{})
	top.SetErr(&bytes.Buffer{})
	err = top.Execute()
	wantAll(t, "message", fmt.Sprint(err), dead, "--endpoint", "\n    drama pins lock --endpoint ", "--root "+root, "--pins "+e.pinsPath)
	if strings.Contains(fmt.Sprint(err), "HF_HUB_OFFLINE") {
		t.Errorf("the cache cannot lock pins, yet the message offers it:\n%v", err)
	}
}
