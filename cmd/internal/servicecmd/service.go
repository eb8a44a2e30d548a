// Package servicecmd implements `drama service`: install drama serve as a
// systemd unit (Linux) or a launchd agent or daemon (macOS), remove it, and
// show its state.
package servicecmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/internal/model"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
)

// Options are the inputs of `drama service`.
type Options struct {
	F      *cmdutil.Factory
	User   bool // --user: the user's own service (default)
	System bool // --system: a system-wide service
	Print  bool // --print: write the unit to stdout, install nothing

	// ServeArgs are drama serve's flags, as the service will pass them.
	ServeArgs []string
	// Grace is drama serve's --grace.
	Grace time.Duration
	// Addr is drama serve's --addr.
	Addr string

	// The machine; tests replace these.
	GOOS     string
	Exe      string                                                                 // the drama binary (default: this one)
	LookPath func(string) (string, error)                                           // exec.LookPath
	Run      func(ctx context.Context, name string, args ...string) ([]byte, error) // runs a manager command
	Stat     func(string) (os.FileInfo, error)                                      // os.Stat
	UID      int                                                                    // os.Getuid()
	Username string                                                                 // the user running drama
	Status   func(ctx context.Context) error                                        // drama status (default: Peers.Status's command)
}

// Peers are the commands drama service works with. The command tree gives
// them, since one command package does not import another.
type Peers struct {
	// Serve returns a drama serve command: install takes its flags and
	// passes them on to the service.
	Serve func() *cobra.Command
	// Status returns a drama status command, run after the manager's
	// view of the service.
	Status func() *cobra.Command
}

// NewCmd returns `drama service` and its subcommands.
func NewCmd(f *cmdutil.Factory, peers Peers) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "service <command>",
		Short: "Run drama serve as a system service (systemd or launchd)",
		Long: strings.TrimSpace(`
Install drama serve as a service of the system's manager: a systemd unit on
Linux, a launchd agent (or, with --system, a daemon) on macOS. The service
starts at boot or login once the network and the root's filesystem are up,
is restarted 5 s after a failure, is stopped by SIGTERM with a timeout longer
than twice --grace, and logs to the journal (systemd) or to
<root>/.drama/run/service.log (launchd).`),
	}
	cmd.AddCommand(newInstallCmd(f, peers.Serve(), nil), newUninstallCmd(f, nil), newStatusCmd(f, peers.Status, nil))
	return cmd
}

func defaults(f *cmdutil.Factory) *Options {
	o := &Options{F: f, GOOS: runtime.GOOS, LookPath: exec.LookPath, Stat: os.Stat, UID: os.Getuid(), Run: runCommand}
	if u, err := user.Current(); err == nil {
		o.Username = u.Username
	}
	return o
}

func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	c := exec.CommandContext(ctx, name, args...)
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return out.Bytes(), err
}

func scopeFlags(cmd *cobra.Command, o *Options) {
	cmd.Flags().BoolVar(&o.User, "user", false, "the user's own service (the default)")
	cmd.Flags().BoolVar(&o.System, "system", false, "a system-wide service (needs root)")
	cmd.MarkFlagsMutuallyExclusive("user", "system")
}

// pathFlags are drama serve's flags that name files: made absolute, as the
// service does not run in this directory.
var pathFlags = map[string]bool{"plugin-dir": true, "engine-bin": true, "voices": true}

func newInstallCmd(f *cmdutil.Factory, serve *cobra.Command, runF func(context.Context, *Options) error) *cobra.Command {
	o := defaults(f)
	cmd := &cobra.Command{
		Use:   "install [--user|--system] [serve flags...]",
		Short: "Install and start drama serve as a service, with drama serve's flags",
		Long: strings.TrimSpace(`
Write a service for drama serve with the flags given (any of drama serve's,
and --root and --variant), and enable and start it: on Linux a systemd unit,
~/.config/systemd/user/drama.service (--user, the default) or
/etc/systemd/system/drama.service (--system); on macOS a launchd agent,
~/Library/LaunchAgents/com.drama-tts.drama.plist, or a daemon in
/Library/LaunchDaemons (--system). Paths among the flags are made absolute,
the root is given as --root, and PATH is kept, so the service finds the
same engine and ffmpeg as this shell.

Without the manager (no systemd running, no launchctl) nothing is written.
--print writes the unit or property list to stdout and installs nothing.`),
		Example: strings.TrimSpace(`
$ drama service install --print --grace 30s
$ drama service install --user --variant nvfp4
$ sudo drama service install --system --root /srv/drama --variant nvfp4`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.serveArgs(cmd, serve.Flags()); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runInstall(cmd.Context(), o)
		},
	}
	scopeFlags(cmd, o)
	cmd.Flags().BoolVar(&o.Print, "print", false, "write the unit to stdout; install nothing")
	cmd.Flags().AddFlagSet(serve.Flags())
	return cmd
}

// serveArgs collects drama serve's flags given to install, in the order
// drama serve lists them, with --root (always) and --variant (when given).
func (o *Options) serveArgs(cmd *cobra.Command, serveFlags *pflag.FlagSet) error {
	root, err := o.F.Root()
	if err != nil {
		return err
	}
	if root, err = filepath.Abs(root); err != nil {
		return err
	}
	args := []string{"serve", "--root", root}
	if fl := cmd.Flags().Lookup("variant"); fl != nil && fl.Changed {
		args = append(args, "--variant", fl.Value.String())
	}
	var ferr error
	serveFlags.VisitAll(func(fl *pflag.Flag) {
		switch fl.Name {
		case "grace":
			o.Grace, _ = time.ParseDuration(fl.Value.String())
		case "addr":
			o.Addr = fl.Value.String()
		}
		if !fl.Changed {
			return
		}
		vals := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			vals = sv.GetSlice()
		}
		for _, v := range vals {
			if pathFlags[fl.Name] || (fl.Name == "engine" && strings.ContainsRune(v, filepath.Separator)) {
				abs, err := filepath.Abs(v)
				if err != nil {
					ferr = err
				}
				v = abs
			}
			if fl.Value.Type() == "bool" {
				if v == "true" {
					args = append(args, "--"+fl.Name)
				} else {
					args = append(args, "--"+fl.Name+"=false")
				}
				continue
			}
			args = append(args, "--"+fl.Name, v)
		}
	})
	o.ServeArgs = args
	return ferr
}

// platform is one service manager.
type platform struct {
	name string
	// check says why the manager cannot be used here.
	check func(ctx context.Context, o *Options) error
	path  func(o *Options) (string, error)
	// render gives the file's content.
	render func(s Spec) string
	// start loads and starts the installed file; stop stops and unloads it.
	start, stop func(ctx context.Context, o *Options, path string) error
	// status prints the manager's view.
	status func(ctx context.Context, o *Options, w io.Writer) error
}

func (o *Options) platform() (*platform, error) {
	switch o.GOOS {
	case "linux":
		return systemd, nil
	case "darwin":
		return launchd, nil
	}
	return nil, fmt.Errorf("drama service knows systemd (Linux) and launchd (macOS), not %s: run drama serve under this system's own service manager", o.GOOS)
}

func (o *Options) spec() (Spec, error) {
	exe := o.Exe
	if exe == "" {
		e, err := os.Executable()
		if err != nil {
			return Spec{}, err
		}
		if e, err = filepath.EvalSymlinks(e); err != nil {
			return Spec{}, err
		}
		exe = e
	}
	root := ""
	for i, a := range o.ServeArgs {
		if a == "--root" && i+1 < len(o.ServeArgs) {
			root = o.ServeArgs[i+1]
		}
	}
	s := Spec{Exe: exe, Args: o.ServeArgs, Root: root, Addr: o.Addr, Grace: o.Grace, System: o.System,
		LogFile: filepath.Join(root, model.StateDirName, "run", "service.log")}
	if s.Addr == "" {
		s.Addr = serverec.DefaultAddr
	}
	if o.System {
		if su := o.F.Getenv("SUDO_USER"); su != "" && o.UID == 0 {
			s.User = su
		} else if o.UID != 0 {
			s.User = o.Username
		}
	}
	if p := o.F.Getenv("PATH"); p != "" {
		s.Env = append(s.Env, "PATH="+p)
	}
	for _, k := range []string{"DRAMA_ENGINE_BIN", "DRAMA_PLUGIN_DIR"} {
		if v := o.F.Getenv(k); v != "" {
			s.Env = append(s.Env, k+"="+v)
		}
	}
	return s, nil
}

func runInstall(ctx context.Context, o *Options) error {
	p, err := o.platform()
	if err != nil {
		return err
	}
	s, err := o.spec()
	if err != nil {
		return err
	}
	text := p.render(s)
	if o.Print {
		_, err := io.WriteString(o.F.IO.Out, text)
		return err
	}
	if err := p.check(ctx, o); err != nil {
		return fmt.Errorf("%w; nothing was written (drama service install --print shows the %s file)", err, p.name)
	}
	path, err := p.path(o)
	if err != nil {
		return err
	}
	if p == launchd { // launchd opens the log but makes no directory for it
		if err := os.MkdirAll(filepath.Dir(s.LogFile), 0o755); err != nil {
			return err
		}
	}
	if err := writeFile(path, []byte(text)); err != nil {
		if errors.Is(err, os.ErrPermission) && o.System {
			return fmt.Errorf("%w: a system service needs root: run drama service install --system under sudo, with the same flags", err)
		}
		return err
	}
	o.F.Infof("wrote %s", path)
	if err := p.start(ctx, o, path); err != nil {
		return fmt.Errorf("%s is written, but starting it failed: %w", path, err)
	}
	o.F.Infof("started drama serve under %s; drama service status shows it", p.name)
	return nil
}

// writeFile writes data beside path, syncs and renames it into place.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o644)
}

func newUninstallCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	o := defaults(f)
	cmd := &cobra.Command{
		Use:   "uninstall [--user|--system]",
		Short: "Stop drama serve's service and remove it",
		Example: strings.TrimSpace(`
$ drama service uninstall --user`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runUninstall(cmd.Context(), o)
		},
	}
	scopeFlags(cmd, o)
	return cmd
}

func runUninstall(ctx context.Context, o *Options) error {
	p, err := o.platform()
	if err != nil {
		return err
	}
	if err := p.check(ctx, o); err != nil {
		return fmt.Errorf("%w; nothing was removed", err)
	}
	path, err := p.path(o)
	if err != nil {
		return err
	}
	if _, err := o.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no drama service installed at %s%s", path, scopeHint(o))
	}
	if err := p.stop(ctx, o, path); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	o.F.Infof("stopped the service and removed %s", path)
	return nil
}

func scopeHint(o *Options) string {
	if o.System {
		return " (a user service? drop --system)"
	}
	return " (a system service? add --system)"
}

func newStatusCmd(f *cmdutil.Factory, status func() *cobra.Command, runF func(context.Context, *Options) error) *cobra.Command {
	o := defaults(f)
	o.Status = func(ctx context.Context) error {
		st := status()
		st.SetArgs(nil)
		st.SetOut(f.IO.Out)
		st.SetErr(f.IO.ErrOut)
		return st.ExecuteContext(ctx)
	}
	cmd := &cobra.Command{
		Use:   "status [--user|--system]",
		Short: "Show the service manager's view of drama serve, then drama status",
		Example: strings.TrimSpace(`
$ drama service status`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runStatus(cmd.Context(), o)
		},
	}
	scopeFlags(cmd, o)
	return cmd
}

func runStatus(ctx context.Context, o *Options) error {
	p, err := o.platform()
	if err != nil {
		return err
	}
	if err := p.check(ctx, o); err != nil {
		return err
	}
	path, err := p.path(o)
	if err != nil {
		return err
	}
	if _, err := o.Stat(path); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(o.F.IO.Out, "no drama service installed at %s%s\n", path, scopeHint(o))
	} else if err := p.status(ctx, o, o.F.IO.Out); err != nil {
		return err
	}
	fmt.Fprintln(o.F.IO.Out)
	return o.Status(ctx)
}

// ---- systemd

const unitName = "drama.service"

var systemd = &platform{
	name:   "systemd",
	render: Spec.Unit,
	check: func(ctx context.Context, o *Options) error {
		if _, err := o.LookPath("systemctl"); err != nil {
			return errors.New("systemctl is not on PATH: drama service needs systemd on Linux; run drama serve under the supervisor this machine has")
		}
		if _, err := o.Stat("/run/systemd/system"); err != nil {
			return errors.New("systemd is not running on this machine (no /run/systemd/system, as in most containers): run drama serve under the supervisor this machine has")
		}
		if !o.System {
			if out, err := o.Run(ctx, "systemctl", "--user", "show-environment"); err != nil {
				return fmt.Errorf("no systemd user manager for this login (systemctl --user: %s): log in through a session that starts one (loginctl enable-linger %s keeps it running), or use --system",
					firstLine(out, err), o.Username)
			}
		}
		return nil
	},
	path: func(o *Options) (string, error) {
		if o.System {
			return filepath.Join("/etc/systemd/system", unitName), nil
		}
		cfg := o.F.Getenv("XDG_CONFIG_HOME")
		if cfg == "" {
			home := o.F.Getenv("HOME")
			if home == "" {
				return "", errors.New("no home directory: set HOME")
			}
			cfg = filepath.Join(home, ".config")
		}
		return filepath.Join(cfg, "systemd", "user", unitName), nil
	},
	start: func(ctx context.Context, o *Options, _ string) error {
		if err := o.systemctl(ctx, "daemon-reload"); err != nil {
			return err
		}
		return o.systemctl(ctx, "enable", "--now", unitName)
	},
	stop: func(ctx context.Context, o *Options, _ string) error {
		if err := o.systemctl(ctx, "disable", "--now", unitName); err != nil {
			return err
		}
		return o.systemctl(ctx, "daemon-reload")
	},
	status: func(ctx context.Context, o *Options, w io.Writer) error {
		out, err := o.Run(ctx, "systemctl", o.scope("status", "--no-pager", "--lines", "20", unitName)...)
		w.Write(out)
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 { // not running: reported above
			return nil
		}
		if err != nil {
			return fmt.Errorf("systemctl status: %w", err)
		}
		return nil
	},
}

func (o *Options) scope(args ...string) []string {
	if o.System {
		return args
	}
	return append([]string{"--user"}, args...)
}

func (o *Options) systemctl(ctx context.Context, args ...string) error {
	out, err := o.Run(ctx, "systemctl", o.scope(args...)...)
	if err != nil {
		return fmt.Errorf("systemctl %s: %s", strings.Join(o.scope(args...), " "), firstLine(out, err))
	}
	return nil
}

func firstLine(out []byte, err error) string {
	s := strings.TrimSpace(string(out))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return err.Error()
	}
	return s
}

// ---- launchd

var launchd = &platform{
	name:   "launchd",
	render: Spec.Plist,
	check: func(ctx context.Context, o *Options) error {
		if _, err := o.LookPath("launchctl"); err != nil {
			return errors.New("launchctl is not on PATH: drama service needs launchd on macOS")
		}
		return nil
	},
	path: func(o *Options) (string, error) {
		if o.System {
			return filepath.Join("/Library/LaunchDaemons", Label+".plist"), nil
		}
		home := o.F.Getenv("HOME")
		if home == "" {
			return "", errors.New("no home directory: set HOME")
		}
		return filepath.Join(home, "Library", "LaunchAgents", Label+".plist"), nil
	},
	start: func(ctx context.Context, o *Options, path string) error {
		if out, err := o.Run(ctx, "launchctl", "bootstrap", o.domain(), path); err != nil {
			return fmt.Errorf("launchctl bootstrap %s %s: %s", o.domain(), path, firstLine(out, err))
		}
		return nil
	},
	stop: func(ctx context.Context, o *Options, path string) error {
		if out, err := o.Run(ctx, "launchctl", "bootout", o.domain()+"/"+Label); err != nil {
			return fmt.Errorf("launchctl bootout %s/%s: %s", o.domain(), Label, firstLine(out, err))
		}
		return nil
	},
	status: func(ctx context.Context, o *Options, w io.Writer) error {
		out, err := o.Run(ctx, "launchctl", "print", o.domain()+"/"+Label)
		w.Write(out)
		if err != nil {
			return fmt.Errorf("launchctl print %s/%s: %s", o.domain(), Label, firstLine(out, err))
		}
		return nil
	},
}

func (o *Options) domain() string {
	if o.System {
		return "system"
	}
	return "gui/" + strconv.Itoa(o.UID)
}
