package servicecmd

import (
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/realclient"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// machine is what a test says of the machine a command runs on.
type machine struct {
	goos  string
	exe   string
	uid   int
	have  map[string]bool // files and commands that exist
	calls []string        // manager commands run
	fail  string          // a manager command (prefix) that fails
}

func (m *machine) apply(o *Options) {
	o.GOOS, o.Exe, o.UID, o.Username = m.goos, m.exe, m.uid, "anna"
	o.LookPath = func(name string) (string, error) {
		if m.have[name] {
			return "/usr/bin/" + name, nil
		}
		return "", exec.ErrNotFound
	}
	stat := o.Stat
	o.Stat = func(p string) (os.FileInfo, error) {
		if m.have[p] {
			return os.Stat("/")
		}
		if strings.HasPrefix(p, "/run/") {
			return nil, fs.ErrNotExist
		}
		return stat(p)
	}
	o.Run = func(_ context.Context, name string, args ...string) ([]byte, error) {
		line := strings.Join(append([]string{name}, args...), " ")
		m.calls = append(m.calls, line)
		if m.fail != "" && strings.HasPrefix(line, m.fail) {
			return []byte("Failed to connect to bus: No medium found\n"), errors.New("exit status 1")
		}
		return []byte("● drama.service - drama serve\n     Active: active (running)\n"), nil
	}
	o.Status = func(context.Context) error { return nil }
}

// run runs `drama service ARGS...` under a root command that has the global
// flags, with env as the environment, on m.
func (m *machine) run(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ios, _, out, errb := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, env...)
	svc := &cobra.Command{Use: "service"}
	svc.AddCommand(
		newInstallCmd(f, serveStandIn(), func(ctx context.Context, o *Options) error { m.apply(o); return runInstall(ctx, o) }),
		newUninstallCmd(f, func(ctx context.Context, o *Options) error { m.apply(o); return runUninstall(ctx, o) }),
		newStatusCmd(f, nil, func(ctx context.Context, o *Options) error { m.apply(o); return runStatus(ctx, o) }))
	root := cmdtest.NewRoot(f, svc)
	root.SetArgs(append([]string{"service"}, args...))
	root.SetOut(out)
	root.SetErr(errb)
	err = root.Execute()
	return out.String(), errb.String(), err
}

// serveStandIn has the kinds of flag drama serve has (strings, paths, a
// repeatable string, a bool, an int, a duration) under drama serve's names;
// cli's TestServiceInstallTakesServeFlags runs install with the real ones.
func serveStandIn() *cobra.Command {
	cmd := &cobra.Command{Use: "serve"}
	fl := cmd.Flags()
	fl.String("engine", "cuda", "")
	fl.String("addr", "127.0.0.1:8793", "")
	fl.Int("max-queue", 64, "")
	fl.String("plugin-dir", "", "")
	fl.String("engine-bin", "", "")
	fl.String("voices", "", "")
	fl.Bool("long-form", false, "")
	fl.Duration("grace", 10*time.Second, "")
	fl.StringArray("allow-origin", nil, "")
	return cmd
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

var flagSet = []string{"--print", "--root", "/srv/drama root", "--variant", "nvfp4", "--grace", "30s", "--max-queue", "8",
	"--allow-origin", "https://a.example", "--allow-origin", "https://b.example", "--long-form", "--engine-bin", "/opt/tensorfold/bin/tensorfold-native"}

var env = []string{"PATH", "/usr/local/bin:/usr/bin:/bin", "HOME", "/home/anna", "DRAMA_PLUGIN_DIR", "/opt/drama/plugins", "HF_TOKEN", "hf_secret"}

func TestRenderedForFlags(t *testing.T) {
	for _, c := range []struct {
		goos, golden string
		args         []string
		uid          int
	}{
		{"linux", "user.service", nil, 1000},
		{"linux", "system.service", []string{"--system"}, 0},
		{"darwin", "user.plist", []string{"--user"}, 501},
		{"darwin", "system.plist", []string{"--system"}, 0},
	} {
		t.Run(c.golden, func(t *testing.T) {
			m := &machine{goos: c.goos, exe: "/usr/local/bin/drama", uid: c.uid}
			e := env
			if c.uid == 0 {
				e = append(e, "SUDO_USER", "anna")
			}
			out, _, err := m.run(t, e, append(append([]string{"install"}, c.args...), flagSet...)...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "hf_secret") {
				t.Fatal("the service file holds HF_TOKEN")
			}
			golden(t, c.golden, out)
		})
	}
}

func TestStopTimeoutLongerThanGrace(t *testing.T) {
	for _, g := range []time.Duration{0, time.Second, 10 * time.Second, 2 * time.Minute} {
		s := Spec{Exe: "/usr/bin/drama", Root: "/r", Grace: g}
		if s.StopTimeout() <= 2*g {
			t.Errorf("grace %s: stop timeout %s", g, s.StopTimeout())
		}
		secs := int(s.StopTimeout() / time.Second)
		if !strings.Contains(s.Unit(), fmt.Sprintf("\nTimeoutStopSec=%ds\n", secs)) || !strings.Contains(s.Plist(), fmt.Sprintf("<integer>%d</integer>", secs)) {
			t.Errorf("grace %s: the unit or plist lacks a stop timeout of %d s", g, secs)
		}
	}
}

func TestPlistIsWellFormed(t *testing.T) {
	s := Spec{Exe: "/usr/local/bin/drama", Args: []string{"serve", "--allow-origin", "https://a.example/?a=1&b=<2>"}, Root: "/r", Grace: time.Second, Env: []string{"PATH=/bin"}}
	d := xml.NewDecoder(strings.NewReader(s.Plist()))
	d.Strict = true
	var strs []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist: %v\n%s", err, s.Plist())
		}
		if cd, ok := tok.(xml.CharData); ok && strings.TrimSpace(string(cd)) != "" {
			strs = append(strs, string(cd))
		}
	}
	if !slices.Contains(strs, "https://a.example/?a=1&b=<2>") {
		t.Fatalf("the argument did not survive escaping: %q", strs)
	}
}

func TestQuoting(t *testing.T) {
	got := execLine([]string{"/opt/my drama/drama", "serve", "--voices", `/v/"x"`, "--allow-origin", "100%", "$HOME"})
	want := `"/opt/my drama/drama" serve --voices "/v/\"x\"" --allow-origin 100%% $$HOME`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// systemdAnalyze finds systemd's unit checker, or skips with one line (fails
// where real checkers are required, as in CI).
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		msg := "systemd-analyze not on PATH (apt-get install systemd): the units are not checked by systemd here"
		if os.Getenv(realclient.RequireEnv) == "require" {
			t.Fatalf("%s; %s=require forbids skipping", msg, realclient.RequireEnv)
		}
		t.Skip(msg)
	}
	return sa
}

// TestUnitVerifies checks the rendered units with systemd's own checker.
func TestUnitVerifies(t *testing.T) {
	sa := systemdAnalyze(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, system := range []bool{true, false} {
		dir := t.TempDir()
		root := filepath.Join(dir, "drama root")
		os.Mkdir(root, 0o755)
		s := Spec{Exe: exe, Args: []string{"serve", "--root", root, "--grace", "20s", "--allow-origin", "https://a.example"},
			Root: root, Addr: "127.0.0.1:8793", Grace: 20 * time.Second, System: system, Env: []string{"PATH=/usr/bin:/bin"}}
		unit := filepath.Join(dir, unitName)
		if err := os.WriteFile(unit, []byte(s.Unit()), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"verify", unit}
		cmd := exec.Command(sa, args...)
		if !system {
			rt := filepath.Join(dir, "runtime")
			os.Mkdir(rt, 0o700)
			cmd = exec.Command(sa, append([]string{"--user"}, args...)...)
			cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt)
		}
		out, err := cmd.CombinedOutput()
		// verify reports bad settings as warnings with exit 0: any output
		// about the unit is a failure
		if err != nil || strings.Contains(string(out), unitName) {
			t.Errorf("systemd-analyze verify (system %v): %v\n%s\n%s", system, err, out, s.Unit())
		}
	}
}

// TestVerifyCatchesABadUnit shows that the check above can fail.
func TestVerifyCatchesABadUnit(t *testing.T) {
	sa := systemdAnalyze(t)
	dir := t.TempDir()
	s := Spec{Exe: "/bin/true", Root: filepath.Join(dir, "a b"), Grace: time.Second, System: true}
	bad := strings.Replace(s.Unit(), pathListQuote(s.Root), s.Root, 1) // unquoted: split at the space
	unit := filepath.Join(dir, unitName)
	os.WriteFile(unit, []byte(bad), 0o644)
	out, _ := exec.Command(sa, "verify", unit).CombinedOutput()
	if !strings.Contains(string(out), unitName) {
		t.Fatalf("systemd-analyze took a root split at its space:\n%s", out)
	}
}

func TestManagerAbsent(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".config")
	e := []string{"HOME", home, "PATH", "/usr/bin"}
	cases := []struct {
		name string
		m    *machine
		args []string
		want string
	}{
		{"no systemctl", &machine{goos: "linux", uid: 1000, have: map[string]bool{}}, nil, "systemctl is not on PATH"},
		{"systemd not running", &machine{goos: "linux", uid: 1000, have: map[string]bool{"systemctl": true}}, nil, "systemd is not running"},
		{"no user manager", &machine{goos: "linux", uid: 1000, have: map[string]bool{"systemctl": true, "/run/systemd/system": true}, fail: "systemctl --user show-environment"}, nil, "no systemd user manager"},
		{"no launchctl", &machine{goos: "darwin", uid: 501, have: map[string]bool{}}, nil, "launchctl is not on PATH"},
		{"windows", &machine{goos: "windows"}, nil, "not windows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.m.exe = "/usr/local/bin/drama"
			_, _, err := c.m.run(t, e, append([]string{"install", "--root", filepath.Join(home, "root")}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("install: want an error saying %q, got %v", c.want, err)
			}
			if c.name != "windows" && !strings.Contains(err.Error(), "nothing was written") {
				t.Errorf("install: the error does not say nothing was written: %v", err)
			}
			if _, err := os.Stat(cfg); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("install wrote under %s", cfg)
			}
			if _, err := os.Stat(filepath.Join(home, "Library")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("install wrote under ~/Library")
			}
			if _, _, err := c.m.run(t, e, "uninstall"); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("uninstall: want %q, got %v", c.want, err)
			}
			if _, _, err := c.m.run(t, e, "status"); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("status: want %q, got %v", c.want, err)
			}
			for _, call := range c.m.calls {
				if !strings.HasSuffix(call, "show-environment") {
					t.Errorf("ran %q without a manager", call)
				}
			}
		})
	}
}

func TestInstallUninstallStatusSystemd(t *testing.T) {
	home := t.TempDir()
	e := []string{"HOME", home, "PATH", "/usr/bin"}
	m := &machine{goos: "linux", uid: 1000, exe: "/usr/local/bin/drama", have: map[string]bool{"systemctl": true, "/run/systemd/system": true}}
	if _, _, err := m.run(t, e, "install", "--root", filepath.Join(home, "root"), "--grace", "5s"); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(home, ".config", "systemd", "user", unitName)
	b, err := os.ReadFile(unit)
	if err != nil || !strings.Contains(string(b), "--grace 5s") {
		t.Fatalf("unit: %v\n%s", err, b)
	}
	want := []string{"systemctl --user show-environment", "systemctl --user daemon-reload", "systemctl --user enable --now drama.service"}
	if strings.Join(m.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("install ran:\n%s", strings.Join(m.calls, "\n"))
	}
	m.calls = nil
	out, _, err := m.run(t, e, "status")
	if err != nil || !strings.Contains(out, "Active: active (running)") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	m.calls = nil
	if _, _, err := m.run(t, e, "uninstall"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(unit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the unit is still there")
	}
	want = []string{"systemctl --user show-environment", "systemctl --user disable --now drama.service", "systemctl --user daemon-reload"}
	if strings.Join(m.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("uninstall ran:\n%s", strings.Join(m.calls, "\n"))
	}
	if _, _, err := m.run(t, e, "uninstall"); err == nil || !strings.Contains(err.Error(), "no drama service installed") {
		t.Fatalf("a second uninstall: %v", err)
	}
}

func TestInstallRelativePathsBecomeAbsolute(t *testing.T) {
	m := &machine{goos: "linux", uid: 1000, exe: "/usr/local/bin/drama"}
	out, _, err := m.run(t, env, "install", "--print", "--root", "rel/root", "--voices", "v", "--plugin-dir", "./p", "--engine", "cuda")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	for _, p := range []string{"--root " + filepath.Join(wd, "rel/root"), "--voices " + filepath.Join(wd, "v"), "--plugin-dir " + filepath.Join(wd, "p"), "--engine cuda"} {
		if !strings.Contains(out, p) {
			t.Errorf("want %q in\n%s", p, out)
		}
	}
}

func TestInstallRefusesAnUnknownServeFlag(t *testing.T) {
	m := &machine{goos: "linux", uid: 1000, exe: "/usr/local/bin/drama"}
	if _, _, err := m.run(t, env, "install", "--print", "--gracee", "3s"); err == nil || !strings.Contains(err.Error(), "gracee") {
		t.Fatalf("want an unknown-flag error, got %v", err)
	}
}
