package enginecmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cli"
	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/enginecmd"
	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/build/buildtest"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

func drama(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, append([]string{"HOME", t.TempDir()}, env...)...)
	code = cli.Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

func install(t *testing.T, fx *buildtest.Fixture, s *pins.Sources, root string, extra ...string) (int, string, string) {
	t.Helper()
	args := append([]string{"engine", "install", "--root", root, "--sources", buildtest.WriteSources(t, s), "--source", fx.Mirror,
		"--zig", fx.Zig, "--nvcc", fx.NVCC}, extra...)
	return drama(t, nil, args...)
}

// serveCheck is drama serve's check of the engine binary: the binary it
// finds for the variant, against the record it reads for it.
func serveCheck(t *testing.T, root, variant string) (string, error) {
	t.Helper()
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Variant = variant
	bin, err := cmdutil.EngineBinary(f, "", "cuda", root)
	if err != nil {
		return "", err
	}
	sum, err := cmdutil.EngineRecordFor(root, bin)
	if err != nil {
		return bin, err
	}
	return bin, native.CheckBinary(bin, sum)
}

func TestEngineInstallServeShowVerify(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	fx := buildtest.New(t)
	root := t.TempDir()
	code, out, errOut := install(t, fx, fx.Sources(t, fx.Good), root)
	if code != 0 {
		t.Fatalf("install: exit %d\n%s", code, errOut)
	}
	for _, step := range []string{"toolchain", "fetch drama-tensorfold", "files", "series", "fetch TensorFold", "patch", "build", "install"} {
		if !strings.Contains(errOut, "engine full: "+step+": ") {
			t.Errorf("no progress line for step %s:\n%s", step, errOut)
		}
	}
	if !strings.Contains(errOut, "6 digests completed from the checkout at "+fx.Good) {
		t.Errorf("completed digests not reported:\n%s", errOut)
	}
	bin := filepath.Join(build.Dir(root, "full"), "tensorfold-native")
	if want := "tensorfold-native\t" + buildtest.SHA256(t, bin) + "\t" + bin + "\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if got, err := serveCheck(t, root, "full"); err != nil || got != bin {
		t.Fatalf("serve's check of the installed engine: %q %v", got, err)
	}

	code, out, errOut = drama(t, nil, "engine", "show", "--root", root, "--json")
	var list []enginecmd.Installed
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("show: %d %s %s", code, out, errOut)
	}
	if in := list[0]; in.Variant != "full" || in.Record.Head != fx.PatchedHead || in.Binaries[0].State != build.StateOK {
		t.Errorf("show: %+v", in)
	}
	if code, _, errOut := drama(t, nil, "engine", "verify", "--root", root); code != 0 {
		t.Fatalf("verify of a fresh install: %d %s", code, errOut)
	}

	// A binary changed after the install: verify exits 3 with the fix,
	// show says changed, and serve refuses it.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho another engine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = drama(t, nil, "engine", "verify", "--root", root)
	if code != cmdutil.ExitMismatch || !strings.Contains(errOut, bin+": changed") || !strings.Contains(errOut, "run `drama engine install --variant full` to rebuild it") {
		t.Errorf("verify of a changed binary: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "full\ttensorfold-native\tchanged\tsha256: want ") {
		t.Errorf("verify table: %q", out)
	}
	if _, out, _ := drama(t, nil, "engine", "show", "--root", root); !strings.Contains(out, "\tchanged\t") {
		t.Errorf("show of a changed binary: %q", out)
	}
	if _, err := serveCheck(t, root, "full"); !errors.Is(err, native.ErrChecksum) {
		t.Errorf("serve's check of a changed binary: %v, want a checksum mismatch", err)
	}

	// Installing again rebuilds nothing and restores the binary.
	code, _, errOut = install(t, fx, fx.Sources(t, fx.Good), root)
	if code != 0 || !strings.Contains(errOut, "engine full: build: skipped") {
		t.Fatalf("reinstall: %d\n%s", code, errOut)
	}
	if _, err := serveCheck(t, root, "full"); err != nil {
		t.Errorf("serve's check after the reinstall: %v", err)
	}

	// The digests completed by the first install are held to from then on.
	lockPath := filepath.Join(build.Dir(root, "full"), build.LockName)
	lock, err := pins.ReadSourcesFile(lockPath)
	if err != nil || !lock.Complete() || len(lock.Recipe.Files) != 8 {
		t.Fatalf("sources lock: %+v %v", lock, err)
	}
	if !strings.Contains(errOut, "digests the pins leave empty are taken from "+lockPath) {
		t.Errorf("reinstall does not say it used the lock:\n%s", errOut)
	}
	for i, f := range lock.Recipe.Files {
		if f.Path == "LICENSE" {
			lock.Recipe.Files[i].SHA256 = strings.Repeat("0", 64)
		}
	}
	data, _ := lock.Marshal()
	os.WriteFile(lockPath, data, 0o644)
	code, _, errOut = install(t, fx, fx.Sources(t, fx.Good), root)
	if code != cmdutil.ExitMismatch || !strings.Contains(errOut, "LICENSE: sha256: want "+strings.Repeat("0", 64)) {
		t.Errorf("install against a lock that disagrees with the checkout: exit %d\n%s", code, errOut)
	}
}

func TestEngineInstallRefusals(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	fx := buildtest.New(t)
	wrongZig := buildtest.FakeZig(t, t.TempDir(), "0.16.0")
	changed := fx.Sources(t, fx.Good)
	changed.Recipe.Files[0].SHA256 = strings.Repeat("0", 64)
	cases := []struct {
		name  string
		s     *pins.Sources
		extra []string
		code  int
		want  []string
	}{
		{"wrong zig", fx.Sources(t, fx.Good), []string{"--zig", wrongZig}, 1, []string{"zig at " + wrongZig + ": want version 0.17.0, got 0.16.0", "--zig /opt/zig-0.17.0/zig"}},
		{"missing nvcc", fx.Sources(t, fx.Good), []string{"--nvcc", "/nonexistent/nvcc"}, 1, []string{"nvcc: not found at /nonexistent/nvcc", "--nvcc /usr/local/cuda/bin/nvcc"}},
		{"changed pinned file", changed, nil, 3, []string{"pinned file", "LICENSE: sha256: want " + strings.Repeat("0", 64)}},
		{"failing build", fx.Sources(t, fx.Broken), nil, 1, []string{"build failed: exit status 1", "build.log, ending:", "1 error detected"}},
		{"wrong head after patches", fx.Sources(t, fx.Good), []string{"--patch", fx.OperatorPatch + "=" + fx.OperatorSHA256, "--head", fx.Base}, 3,
			[]string{"HEAD after your patches: want " + fx.Base + ", got " + fx.OperatorHead, "pass --head " + fx.OperatorHead}},
		{"patch without head", fx.Sources(t, fx.Good), []string{"--patch", fx.OperatorPatch + "=" + fx.OperatorSHA256}, 2, []string{"--patch needs --head"}},
		{"patch without sha256", fx.Sources(t, fx.Good), []string{"--patch", fx.OperatorPatch, "--head", fx.OperatorHead}, 2, []string{"want FILE=SHA256"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			code, _, errOut := install(t, fx, c.s, root, c.extra...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not say %q:\n%s", w, errOut)
				}
			}
			if _, err := serveCheck(t, root, "full"); err == nil {
				t.Error("serve would accept an engine after a refused install")
			}
		})
	}
}

// TestEngineInstallAdviceRepeatsTheUsersFlags: where a refusal of the
// build says what to pass, the command names its flag and gives the
// user's own command line with that flag changed and every other flag as
// given.
func TestEngineInstallAdviceRepeatsTheUsersFlags(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	fx := buildtest.New(t)
	wrongZig := buildtest.FakeZig(t, t.TempDir(), "0.16.0")
	oldNVCC := buildtest.FakeNVCC(t, t.TempDir(), "12.8")
	elsewhere := fx.Sources(t, fx.Good)
	elsewhere.Recipe.Commit = strings.Repeat("ab", 20)
	changed := fx.Sources(t, fx.Good)
	changed.Recipe.Files[0].SHA256 = strings.Repeat("0", 64)
	patch := fx.OperatorPatch + "=" + fx.OperatorSHA256
	cases := []struct {
		name    string
		s       *pins.Sources
		zig     string
		nvcc    string
		extra   []string
		code    int
		says    string
		changed map[string]string // flag: the value the advice gives it; "" when it gives no command line
	}{
		{"wrong zig", fx.Sources(t, fx.Good), wrongZig, fx.NVCC, nil, 1,
			"install Zig 0.17.0, then name it: run `", map[string]string{"--zig": "/opt/zig-0.17.0/zig"}},
		{"wrong nvcc", fx.Sources(t, fx.Good), fx.Zig, oldNVCC, nil, 1,
			"install CUDA 13, then name it: run `", map[string]string{"--nvcc": "/usr/local/cuda/bin/nvcc"}},
		{"commit not in the mirror", elsewhere, fx.Zig, fx.NVCC, nil, 1,
			"point --source at a mirror: run `", map[string]string{"--source": "MIRROR"}},
		{"HEAD after the patches", fx.Sources(t, fx.Good), fx.Zig, fx.NVCC, []string{"--patch", patch, "--head", fx.Base}, cmdutil.ExitMismatch,
			"pass --head " + fx.OperatorHead + ": run `", map[string]string{"--head": fx.OperatorHead}},
		{"changed pinned file", changed, fx.Zig, fx.NVCC, nil, cmdutil.ExitMismatch,
			"(the mirror given to --source is " + fx.Mirror + "; the pins given to --sources are ", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			sources := buildtest.WriteSources(t, c.s)
			args := append([]string{"--root", root, "engine", "install", "--sources", sources, "--source", fx.Mirror,
				"--zig", c.zig, "--nvcc", c.nvcc, "--lock-wait", "7s"}, c.extra...)
			code, _, errOut := drama(t, nil, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s", code, c.code, errOut)
			}
			i := strings.Index(errOut, c.says)
			if i < 0 {
				t.Fatalf("stderr does not say %q:\n%s", c.says, errOut)
			}
			if c.changed == nil {
				if !strings.Contains(errOut, sources+")") {
					t.Errorf("stderr does not name the pins file %s:\n%s", sources, errOut)
				}
				return
			}
			line, _, ok := strings.Cut(errOut[i+len(c.says):], "`")
			if !ok {
				t.Fatalf("no command line after %q:\n%s", c.says, errOut)
			}
			want := map[string]string{"--root": root, "--sources": sources, "--source": fx.Mirror, "--zig": c.zig, "--nvcc": c.nvcc, "--lock-wait": "7s"}
			for j := 0; j+1 < len(c.extra); j += 2 {
				want[c.extra[j]] = c.extra[j+1]
			}
			for flag, v := range c.changed {
				want[flag] = v
			}
			words := strings.Fields(line)
			if len(words) < 3 || strings.Join(words[:3], " ") != "drama engine install" || len(words)%2 != 1 {
				t.Fatalf("advice %q is not a drama engine install command line of flags and values", line)
			}
			got := map[string]string{}
			for j := 3; j+1 < len(words); j += 2 {
				if _, twice := got[words[j]]; twice {
					t.Errorf("advice %q gives %s twice", line, words[j])
				}
				got[words[j]] = words[j+1]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("advice %q:\n got flags %v\nwant flags %v", line, got, want)
			}
		})
	}
}

func TestEngineInstallWithoutMetalPutsEverythingElseInPlace(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	fx := buildtest.New(t)
	bin := t.TempDir()
	xcrun := "#!/bin/sh\necho 'xcrun: error: unable to find utility \"metal\", not a developer tool or in PATH' >&2\nexit 72\n"
	if err := os.WriteFile(filepath.Join(bin, "xcrun"), []byte(xcrun), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	s := fx.Sources(t, fx.Good)
	s.Variant, s.Engine, s.Toolchain = "macos", "metal", pins.Toolchain{Zig: "0.17.0", Metal: true}
	root := t.TempDir()
	code, _, errOut := install(t, fx, s, root)
	if code != cmdutil.ExitMismatch || !strings.Contains(errOut, "no usable Metal compiler") || !strings.Contains(errOut, `unable to find utility "metal"`) ||
		!strings.Contains(errOut, "DEVELOPER_DIR") {
		t.Fatalf("exit %d, want 3 naming the Metal compiler:\n%s", code, errOut)
	}
	head, err := exec.Command("git", "-C", filepath.Join(build.WorkDir(root, "macos"), "TensorFold"), "rev-parse", "HEAD").Output()
	if err != nil || strings.TrimSpace(string(head)) != fx.PatchedHead {
		t.Errorf("engine checkout not patched before the stop: %q %v", head, err)
	}
	if _, err := os.Stat(filepath.Join(build.Dir(root, "macos"), build.RecordName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record written without a build: %v", err)
	}
}

func TestEngineShowAndVerifyWithNothingInstalled(t *testing.T) {
	root := t.TempDir()
	for _, sub := range []string{"show", "verify"} {
		code, _, errOut := drama(t, nil, "engine", sub, "--root", root)
		if code != 1 || !strings.Contains(errOut, "no engine installed in "+filepath.Join(root, "engine")+": run `drama engine install --variant full`") {
			t.Errorf("%s: exit %d\n%s", sub, code, errOut)
		}
	}
}

// TestEngineShowOfABadRecordSaysReinstall: a record that cannot be read
// is a mismatch (exit 3) whose advice, the install that writes a good one,
// repeats the user's --root.
func TestEngineShowOfABadRecordSaysReinstall(t *testing.T) {
	root := t.TempDir()
	dir := build.Dir(root, "full")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, build.RecordName), []byte("nonsense"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"show", "verify"} {
		code, _, errOut := drama(t, nil, "engine", sub, "--root", root)
		if code != cmdutil.ExitMismatch || !strings.Contains(errOut, "run `drama engine install --variant full --root "+root+"` again") {
			t.Errorf("%s: exit %d\n%s", sub, code, errOut)
		}
	}
}

// TestHelpExamplesWork runs every example of drama engine's help that needs
// no network and no GPU with a built drama, in a directory holding the
// files the examples name; the others are parsed.
func TestHelpExamplesWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds drama")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	fx := buildtest.New(t)
	exe := filepath.Join(t.TempDir(), "drama")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/drama-tts/drama/cmd/drama").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := t.TempDir()
	data, _ := fx.Sources(t, fx.Good).Marshal()
	os.WriteFile(filepath.Join(work, "engine-sources.json"), data, 0o644)
	os.Symlink(fx.Mirror, filepath.Join(work, "mirror"))
	patch, _ := os.ReadFile(fx.OperatorPatch)
	os.WriteFile(filepath.Join(work, "voice-cache.patch"), patch, 0o644)
	os.WriteFile(filepath.Join(work, "voice-cache.head"), []byte(fx.OperatorHead+"\n"), 0o644)
	root := t.TempDir()
	env := append(os.Environ(), "DRAMA_HOME="+root, "ZIG="+fx.Zig, "NVCC="+fx.NVCC)

	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	groups := map[string]string{
		"install": enginecmd.NewCmdInstall(f, nil).Example,
		"show":    enginecmd.NewCmdShow(f, nil).Example,
		"verify":  enginecmd.NewCmdVerify(f, nil).Example,
	}
	ran := 0
	for _, sub := range []string{"install", "show", "verify"} {
		for _, line := range strings.Split(groups[sub], "\n") {
			line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
			if !strings.HasPrefix(line, "drama ") {
				t.Fatalf("example %q does not start with drama", line)
			}
			if strings.Contains(line, "/srv/mirror") || line == "drama engine install --variant full" {
				// GitHub or a site's mirror and real compilers: parsed only.
				cmd := enginecmd.NewCmdInstall(f, func(context.Context, *enginecmd.InstallOptions) error { return nil })
				cmd.Flags().String("variant", "", "")
				cmd.SetArgs(strings.Fields(line)[3:])
				if err := cmd.Execute(); err != nil {
					t.Errorf("example %q: %v", line, err)
				}
				continue
			}
			cmd := exec.Command("sh", "-c", exe+strings.TrimPrefix(line, "drama"))
			cmd.Dir, cmd.Env = work, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("example %q: %v\n%s", line, err, out)
			}
			ran++
		}
	}
	if ran != 5 {
		t.Errorf("ran %d examples, want 5", ran)
	}
	rec, err := build.ReadRecord(build.Dir(root, "full"))
	if err != nil || rec.Head != fx.OperatorHead {
		t.Errorf("the patch example's record: %+v %v", rec, err)
	}
}

func TestEngineInstallSaysALongStepIsStillRunning(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	fx := buildtest.New(t)
	pause := filepath.Join(t.TempDir(), "paused")
	t.Setenv(buildtest.PauseEnv, pause)
	old := enginecmd.Heartbeat
	enginecmd.Heartbeat = 10 * time.Millisecond
	defer func() { enginecmd.Heartbeat = old }()
	root := t.TempDir()
	ios, _, _, _ := cmdtest.IOStreams()
	errOut := &enginetest.Buffer{} // the heartbeat writes from its own goroutine
	ios.ErrOut = errOut
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// interrupt once the build has paused and the heartbeat has said so
		enginetest.Within(60*time.Second, func() bool {
			_, err := os.Stat(pause)
			return err == nil && strings.Contains(errOut.String(), "engine full: build: still running (")
		})
		cancel()
	}()
	f := cmdtest.Factory(ios, "HOME", t.TempDir())
	code := cli.Run(ctx, f, []string{"engine", "install", "--root", root, "--sources", buildtest.WriteSources(t, fx.Sources(t, fx.Good)),
		"--source", fx.Mirror, "--zig", fx.Zig, "--nvcc", fx.NVCC})
	if code != cmdutil.ExitInterrupted {
		t.Errorf("exit %d, want 130\n%s", code, errOut)
	}
	if want := "engine full: build: still running ("; !strings.Contains(errOut.String(), want) ||
		!strings.Contains(errOut.String(), "log "+filepath.Join(build.WorkDir(root, "full"), "build.log")) {
		t.Errorf("no %q line naming the log:\n%s", want, errOut)
	}
}

func TestEngineInstallWaitsForAnotherInstallThenSaysWhoHoldsIt(t *testing.T) {
	fx := buildtest.New(t)
	root := t.TempDir()
	unlock, err := hub.Flock(context.Background(), filepath.Join(root, pins.StateDirName, "engine-full.lock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, _, errOut := install(t, fx, fx.Sources(t, fx.Good), root, "--lock-wait", "200ms")
	if code != 1 || !strings.Contains(errOut, "is held by pid "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(errOut, "another drama engine install of full holds it") || !strings.Contains(errOut, "--lock-wait") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
}
