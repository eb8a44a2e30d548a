// Package pluginscmd implements `drama plugins`.
package pluginscmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/host"
)

// Options are the inputs of `drama plugins`.
type Options struct {
	F         *cmdutil.Factory
	PluginDir string
	// Executable returns the drama binary's path; tests replace it.
	Executable func() (string, error)
	// Timeout bounds starting and describing one plugin.
	Timeout time.Duration
}

// NewCmd returns `drama plugins`. runF, if not nil, replaces the run (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f, Executable: os.Executable, Timeout: 30 * time.Second}
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List the engine plugins found, their versions and capabilities",
		Long: strings.TrimSpace(`
List the engine plugins, drama-engine-<name>, found in --plugin-dir, each
directory of $DRAMA_PLUGIN_DIR, the directory holding drama, and
<root>/plugins, in that order; the first directory holding a name wins.

Each plugin's binary is checked against <binary>.sha256 beside it (the
format sha256sum writes). A plugin that passes is started to ask its
version, engine API version, OS and architecture, and capabilities, then
stopped. A plugin with a missing or wrong checksum is not run: it is
listed as refused, with what to do on stderr.

Exit status 3 when a plugin was refused for its checksum, 4 when one
failed to start.`),
		Example: strings.TrimSpace(`
$ drama plugins
$ drama plugins --plugin-dir ./bin --json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.PluginDir, "plugin-dir", "", "look for plugins in this directory first")
	return cmd
}

// Report is the JSON document `drama plugins --json` prints.
type Report struct {
	Dirs    []Dir    `json:"dirs"`
	Plugins []Plugin `json:"plugins"`
}

// Dir is one searched directory.
type Dir struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// Plugin is one plugin found.
type Plugin struct {
	Name           string            `json:"name"`
	Path           string            `json:"path"`
	Source         string            `json:"source"`
	Shadowed       []string          `json:"shadowed,omitempty"`
	Checksum       string            `json:"checksum"`
	Status         string            `json:"status"` // ok, refused, failed
	Version        string            `json:"version,omitempty"`
	APIVersion     int               `json:"api_version,omitempty"`
	OS             string            `json:"os,omitempty"`
	Arch           string            `json:"arch,omitempty"`
	Engine         string            `json:"engine,omitempty"`
	Variants       []string          `json:"variants,omitempty"`
	Capabilities   []string          `json:"capabilities,omitempty"`
	MaxFrames      int               `json:"max_frames,omitempty"`
	MemoryEstimate map[string]uint64 `json:"memory_estimate,omitempty"`
	Error          string            `json:"error,omitempty"`
}

func run(ctx context.Context, opts *Options) error {
	dirs, err := searchDirs(opts)
	if err != nil {
		return err
	}
	found, err := host.Discover(dirs)
	if err != nil {
		return err
	}
	rep := Report{Dirs: []Dir{}, Plugins: []Plugin{}}
	for _, d := range dirs {
		rep.Dirs = append(rep.Dirs, Dir{Path: d.Path, Source: d.Source})
	}
	for _, c := range found {
		rep.Plugins = append(rep.Plugins, inspect(ctx, opts, c))
	}
	if err := render(opts, rep); err != nil {
		return err
	}
	return exitFor(opts.F, rep)
}

// searchDirs builds the search path from the flag, the environment, the
// drama binary and the root.
func searchDirs(opts *Options) ([]host.Dir, error) {
	f := opts.F
	root, err := f.Root()
	if err != nil {
		return nil, err
	}
	s := host.Search{Flag: opts.PluginDir, Env: f.Getenv(host.EnvPluginDir), Root: root}
	if opts.Executable != nil {
		if exe, err := opts.Executable(); err == nil {
			s.Exe = exe
		}
	}
	return s.Dirs(), nil
}

// inspect starts one plugin and asks for its description. host.Open checks
// the binary against its checksum file before it runs it (hashing it once),
// so a refusal comes back from there as a *host.ChecksumError.
func inspect(ctx context.Context, opts *Options, c host.Candidate) Plugin {
	p := Plugin{Name: c.Name, Path: c.Path, Source: c.Source, Shadowed: c.Shadowed}
	d, err := describe(ctx, opts, c.Path)
	if err == nil {
		p.Checksum, p.Status = host.ChecksumOK.String(), "ok"
		p.Version, p.APIVersion, p.OS, p.Arch, p.Engine = d.Version, d.APIVersion, d.OS, d.Arch, d.Engine
		p.Variants, p.Capabilities, p.MaxFrames, p.MemoryEstimate = d.Variants, d.Capabilities.List(), d.Capabilities.MaxFrames, d.MemoryEstimate
		return p
	}
	var ce *host.ChecksumError
	if errors.As(err, &ce) {
		p.Checksum, p.Status = ce.Status.String(), "refused"
	} else {
		p.Checksum, p.Status = host.ChecksumOK.String(), "failed"
	}
	p.Error = err.Error()
	if bi, berr := host.ReadBinaryInfo(c.Path); berr == nil {
		p.OS, p.Arch = bi.OS, bi.Arch
	}
	return p
}

// describe starts the plugin, asks Describe and closes it.
func describe(ctx context.Context, opts *Options, path string) (engine.Description, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	pl, err := host.Open(ctx, path, host.Options{Logger: logger(opts.F)})
	if err != nil {
		return engine.Description{}, err
	}
	defer pl.Close(context.Background(), 2*time.Second)
	return pl.Describe(ctx)
}

// logger passes the plugin's errors on to stderr. (A failed start is
// reported once, by exitFor; go-plugin's own warnings about it would only
// repeat it.)
func logger(f *cmdutil.Factory) hclog.Logger {
	if f.Global.Quiet {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: f.IO.ErrOut, Level: hclog.Error})
}

func render(opts *Options, rep Report) error {
	f := opts.F
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rep)
	}
	if len(rep.Plugins) == 0 {
		var where []string
		for _, d := range rep.Dirs {
			where = append(where, d.Path)
		}
		f.Infof("no engine plugins (drama-engine-<name>) in %s; build them with `make build` or pass --plugin-dir", strings.Join(where, ", "))
		return nil
	}
	t := cmdutil.NewTable(f.IO, "name", "version", "api", "os/arch", "capabilities", "checksum", "status", "path")
	for _, p := range rep.Plugins {
		t.AddRow(p.Name, dash(p.Version), dash(api(p.APIVersion)), dash(osArch(p)), dash(strings.Join(p.Capabilities, ",")),
			p.Checksum, p.Status, p.Path)
	}
	return t.Render()
}

func api(v int) string {
	if v == 0 {
		return ""
	}
	return strconv.Itoa(v)
}

func osArch(p Plugin) string {
	if p.OS == "" {
		return ""
	}
	return p.OS + "/" + p.Arch
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// exitFor reports each refused or failed plugin on stderr and picks the
// exit status: 3 for a checksum refusal, 4 for a failed start.
func exitFor(f *cmdutil.Factory, rep Report) error {
	code := cmdutil.ExitOK
	for _, p := range rep.Plugins {
		for _, s := range p.Shadowed {
			f.Warnf("%s shadows %s", p.Path, s)
		}
		switch p.Status {
		case "refused":
			fmt.Fprintln(f.IO.ErrOut, p.Error)
			code = cmdutil.ExitMismatch
		case "failed":
			fmt.Fprintln(f.IO.ErrOut, p.Error)
			if code == cmdutil.ExitOK {
				code = cmdutil.ExitEngine
			}
		}
	}
	if code != cmdutil.ExitOK {
		return cmdutil.SilentError(code)
	}
	return nil
}
