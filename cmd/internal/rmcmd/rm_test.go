package rmcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/pins/hub/hubtest"
)

const commitPruned = "1111111111111111111111111111111111111111"

type buf interface{ String() string }

func fixture(t *testing.T) (*hubtest.Layout, *cmdutil.Factory, *cmdutil.IOStreams) {
	x := hubtest.New(t)
	shared := map[string]string{"model.safetensors": strings.Repeat("n", 2048), "codec.pth": "codec"}
	x.Install("nvfp4", "o/pruned", commitPruned, false, shared)
	x.Install("macos", "o/pruned", commitPruned, false, shared)
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "HF_HUB_CACHE", x.Cache.Dir)
	f.Global.Root = x.Root
	return x, f, ios
}

func TestRmFlags(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	var got *Options
	cmd := NewCmd(f, func(_ context.Context, o *Options) error { got = o; return nil })
	if err := cmdtest.Execute(cmd, "nvfp4", "--dry-run"); err != nil {
		t.Fatal(err)
	}
	if got.Variant != "nvfp4" || !got.DryRun {
		t.Fatalf("got %+v", got)
	}
	if err := cmdtest.Execute(NewCmd(f, nil)); err == nil {
		t.Fatal("rm without a variant ran")
	}
}

func TestRmUnknownVariantIsAUsageErrorListingTheInstalled(t *testing.T) {
	_, f, _ := fixture(t)
	err := run(context.Background(), &Options{F: f, Variant: "full"})
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "installed are macos, nvfp4") {
		t.Fatalf("err = %v (exit %d)", err, cmdutil.ExitCode(err))
	}
}

func TestRmKeepsWhatAnotherVariantUsesPiped(t *testing.T) {
	x, f, ios := fixture(t)
	if err := run(context.Background(), &Options{F: f, Variant: "nvfp4"}); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(buf).String()
	blob := x.Cache.BlobPath("o/pruned", hub.BlobName(hubtest.File("model.safetensors", strings.Repeat("n", 2048))))
	if !strings.Contains(out, "kept\tblob\t"+blob+"\t2.0 KiB used by variant macos\n") ||
		!strings.HasSuffix(out, "removed\tvariant\t"+filepath.Join(x.Root, "nvfp4")+"\t3 files\n") || strings.Contains(out, "ACTION") {
		t.Fatalf("piped:\n%s", out)
	}
	if !strings.Contains(ios.ErrOut.(buf).String(), "nvfp4 freed 0 B; kept 2 blobs (2.0 KiB)") {
		t.Fatalf("stderr %q", ios.ErrOut.(buf).String())
	}
	if _, err := os.Stat(filepath.Join(x.Root, "nvfp4")); !os.IsNotExist(err) {
		t.Fatalf("nvfp4 is still there: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(x.Root, "macos", "model.safetensors"))
	if err != nil || len(b) != 2048 {
		t.Fatalf("macos lost its weights: %v", err)
	}
}

func TestRmLastVariantFreesItTTY(t *testing.T) {
	x, f, ios := fixture(t)
	ios.SetStdoutTTY(true)
	for _, v := range []string{"macos", "nvfp4"} {
		if err := run(context.Background(), &Options{F: f, Variant: v}); err != nil {
			t.Fatal(err)
		}
	}
	out := ios.Out.(buf).String()
	if !strings.Contains(out, "ACTION   KIND") || strings.Contains(out, "\t") || !strings.Contains(out, "removed  blob") {
		t.Fatalf("tty:\n%s", out)
	}
	if !strings.Contains(ios.ErrOut.(buf).String(), "nvfp4 freed 2.0 KiB") {
		t.Fatalf("stderr %q", ios.ErrOut.(buf).String())
	}
	if _, err := os.Stat(x.Cache.RepoDir("o/pruned")); !os.IsNotExist(err) {
		t.Fatalf("the repository folder is left: %v", err)
	}
}

func TestRmDryRunJSONRemovesNothing(t *testing.T) {
	x, f, ios := fixture(t)
	// Another root on the same cache uses the commit too.
	if err := x.Cache.WriteRef("o/pruned", hub.RootRef(t.TempDir()), commitPruned); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), &Options{F: f, Variant: "macos"}); err != nil {
		t.Fatal(err)
	}
	ios.Out.(interface{ Reset() }).Reset()
	f.Global.JSON = true
	if err := run(context.Background(), &Options{F: f, Variant: "nvfp4", DryRun: true}); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal([]byte(ios.Out.(buf).String()), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || rep.FreedBytes != 0 || len(rep.Blobs) != 0 || len(rep.Kept) != 2 || !strings.Contains(rep.Kept[0].Why, "ref drama-root-") || len(rep.Files) != 3 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(x.Root, "nvfp4", "codec.pth")); err != nil {
		t.Fatalf("dry run removed: %v", err)
	}
}

func TestRmRefusesAServedVariant(t *testing.T) {
	x, f, _ := fixture(t)
	if _, err := serverec.Write(x.Root, serverec.Record{PID: os.Getpid(), Addr: "127.0.0.1:8793", Variant: "nvfp4", Root: x.Root, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), &Options{F: f, Variant: "nvfp4"})
	if err == nil || !strings.Contains(err.Error(), "stop it first") || !strings.Contains(err.Error(), "127.0.0.1:8793") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(x.Root, "nvfp4")); err != nil {
		t.Fatal(err)
	}
}

func TestRmWaitsForAFetchOnTheCacheRepository(t *testing.T) {
	x, f, _ := fixture(t)
	lock := filepath.Join(x.Cache.Dir, ".locks", "models--o--pruned", "drama-fetch.lock")
	unlock, err := hub.Flock(context.Background(), lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	// flock is per open file: a second open in this process conflicts too.
	err = run(context.Background(), &Options{F: f, Variant: "nvfp4", LockWait: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "a drama fetch of the same repository") || !strings.Contains(err.Error(), "--lock-wait") {
		t.Fatalf("err = %v, want the cache's flock named, who takes it and the flag that waits longer", err)
	}
	if _, err := os.Stat(filepath.Join(x.Root, "nvfp4", "codec.pth")); err != nil {
		t.Fatalf("removed while the lock was held: %v", err)
	}
}

// TestRmWaitsForAFetchOfTheRoot: a fetch of the same root holding its
// flock past --lock-wait stops the removal before anything goes, with the
// flock named, who takes it and the flag that waits longer.
func TestRmWaitsForAFetchOfTheRoot(t *testing.T) {
	x, f, _ := fixture(t)
	release, err := cmdutil.FlockRoot(context.Background(), x.Root, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	err = run(context.Background(), &Options{F: f, Variant: "nvfp4", LockWait: 200 * time.Millisecond})
	for _, want := range []string{filepath.Join(x.Root, ".drama", "fetch.lock"), "another drama fetch or drama rm of this root holds it", "--lock-wait"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(x.Root, "nvfp4", "codec.pth")); err != nil {
		t.Fatalf("removed while the flock was held: %v", err)
	}
}
