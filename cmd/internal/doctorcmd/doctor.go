// Package doctorcmd implements `drama doctor`.
package doctorcmd

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/internal/filehash"
	"github.com/drama-tts/drama/internal/safetext"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/config"
	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/host"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/pins"
)

// Options are the inputs of `drama doctor`.
type Options struct {
	F          *cmdutil.Factory
	PluginDir  string
	VariantSet bool
	Probe      Probe
}

// Probe is how doctor looks at the host; tests replace its parts.
type Probe struct {
	Executable func() (string, error)
	LookPath   func(string) (string, error)
	// Run runs a program and returns its standard output.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// Memory is the memory the engine may use, as drama serve's admission sees it.
	Memory func() (native.Memory, error)
	// FreeBytes is the free space of the filesystem holding path.
	FreeBytes func(path string) (uint64, error)
	GOOS      string
	GOARCH    string
}

// SystemProbe looks at this host.
func SystemProbe() Probe {
	return Probe{
		Executable: os.Executable,
		LookPath:   exec.LookPath,
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return exec.CommandContext(ctx, name, args...).Output()
		},
		Memory:    native.AvailableMemory,
		FreeBytes: freeBytes,
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
	}
}

func freeBytes(path string) (uint64, error) {
	// the nearest folder that exists: the root may not be made yet
	for p := path; ; p = filepath.Dir(p) {
		var st unix.Statfs_t
		err := unix.Statfs(p, &st)
		if err == nil {
			return st.Bavail * uint64(st.Bsize), nil
		}
		if !errors.Is(err, unix.ENOENT) || p == filepath.Dir(p) {
			return 0, err
		}
	}
}

// NewCmd returns `drama doctor`. runF, if not nil, replaces the run (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f, Probe: SystemProbe()}
	cmd := &cobra.Command{
		Use:        "doctor",
		SuggestFor: []string{"env"},
		Short:      "Check what this host has for drama, and say how to fix what is missing",
		Long: strings.TrimSpace(`
Report what this host has for drama, as hf env does for the Hub: the drama
and Go versions, OS and architecture, the root, cache and config file, the
engine plugins found and their checksums, the native engine binary and its
recorded sha256, the GPU (nvidia-smi) or Metal, the memory drama serve's
admission would see against each variant's need, ffmpeg, the free disk
against each variant's size, and temporary files left behind.

The variants checked are --variant when given, else those installed
under the root, else this OS's (full and nvfp4 on Linux, macos on macOS).

With the stand-in engine (DRAMA_ENGINE_BIN=bin/tensorfold-standin), which
loads no model, a missing GPU and memory short of a variant's estimate are
notes, not problems.

Each check is ok, a note, or a problem; each problem comes with its fix.
Exit status 0 when there is no problem, 1 when there is one (notes do not
count), so a provisioning script can run drama doctor as its last step.`),
		Example: strings.TrimSpace(`
$ drama doctor
$ drama doctor --variant nvfp4 --json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.VariantSet = cmd.Flags().Changed("variant")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.PluginDir, "plugin-dir", "", "look for plugins in this directory first")
	return cmd
}

// Status is a check's outcome.
type Status string

// The outcomes of a check.
const (
	OK      Status = "ok"
	Note    Status = "note"
	Problem Status = "problem"
)

// Check is one line of the report.
type Check struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is the JSON document of `drama doctor --json`.
type Report struct {
	Version  string   `json:"version"`
	Go       string   `json:"go"`
	OS       string   `json:"os"`
	Arch     string   `json:"arch"`
	Root     string   `json:"root"`
	Caches   []string `json:"caches"`
	Config   string   `json:"config"`
	Variants []string `json:"variants"`
	Checks   []Check  `json:"checks"`
	Problems int      `json:"problems"`
}

type doctor struct {
	ctx   context.Context
	opts  *Options
	f     *cmdutil.Factory
	p     Probe
	root  string
	rep   *Report
	flags string // the user's --root and --plugin-dir, for fixes
	// standIn holds the plugins whose native engine binary is drama's
	// stand-in, which loads no model: it needs no GPU and no memory for one.
	standIn map[string]bool
}

func (d *doctor) add(name string, st Status, detail, fix string) {
	d.rep.Checks = append(d.rep.Checks, Check{Check: name, Status: st, Detail: detail, Fix: fix})
	if st == Problem {
		d.rep.Problems++
	}
}

func run(ctx context.Context, opts *Options) error {
	f := opts.F
	root, err := f.Root()
	if err != nil {
		return err
	}
	cfgPath, _ := config.Path(f.Getenv)
	d := &doctor{ctx: ctx, opts: opts, f: f, p: opts.Probe, root: root, standIn: map[string]bool{},
		rep: &Report{Version: f.Version, Go: runtime.Version(), OS: opts.Probe.GOOS, Arch: opts.Probe.GOARCH, Root: root, Config: cfgPath, Checks: []Check{}}}
	if f.Global.Root != "" {
		d.flags += " --root " + f.Global.Root
	}
	for _, c := range cmdutil.Caches(f, root) {
		d.rep.Caches = append(d.rep.Caches, c.Dir)
	}
	installs, err := pins.Installed(root)
	if err != nil {
		return err
	}
	variants := d.variants(installs)
	d.rep.Variants = variants
	d.add("drama", OK, fmt.Sprintf("%s, %s %s/%s", f.Version, runtime.Version(), d.p.GOOS, d.p.GOARCH), "")
	d.paths(cfgPath)
	engines := map[string]bool{}
	for _, v := range variants {
		if p := d.pinsOf(v, installs); p != nil {
			engines[p.Engine] = true
		}
	}
	names := make([]string, 0, len(engines))
	for e := range engines {
		names = append(names, e)
	}
	slices.Sort(names)
	d.plugins(names)
	for _, e := range names {
		d.engineBinary(e)
	}
	gpuFree := d.accelerator(engines)
	for _, v := range variants {
		d.variant(v, installs, gpuFree)
	}
	d.ffmpeg()
	d.leftovers()
	return d.print()
}

func (d *doctor) variants(installs []pins.Install) []string {
	if d.opts.VariantSet {
		return []string{d.f.Global.Variant}
	}
	if len(installs) > 0 {
		return cmdutil.VariantNames(installs)
	}
	want := "cuda"
	if d.p.GOOS == "darwin" {
		want = "metal"
	}
	var out []string
	for _, v := range pins.Variants {
		if p, err := pins.Builtin(v); err == nil && p.Engine == want {
			out = append(out, v)
		}
	}
	return out
}

// pinsOf returns the installed lock of v, else its built-in pins.
func (d *doctor) pinsOf(v string, installs []pins.Install) *pins.Pins {
	for _, in := range installs {
		if in.Variant == v && in.Pins != nil {
			return in.Pins
		}
	}
	p, _ := pins.Builtin(v)
	return p
}

func (d *doctor) paths(cfgPath string) {
	if st, err := os.Stat(d.root); err == nil && st.IsDir() {
		d.add("root", OK, d.root, "")
	} else {
		d.add("root", Note, d.root+" (not made yet)", "drama fetch makes it: drama fetch --variant "+d.f.Global.Variant+d.flags)
	}
	d.add("cache", OK, strings.Join(d.rep.Caches, ", "), "")
	if _, err := os.Stat(cfgPath); err == nil {
		if _, err := config.Load(d.f.Getenv); err != nil {
			d.add("config", Problem, err.Error(), "correct the line named; drama config --help lists the keys")
		} else {
			d.add("config", OK, cfgPath, "")
		}
	} else {
		d.add("config", OK, cfgPath+" (none)", "")
	}
}

func (d *doctor) plugins(engines []string) {
	exe, _ := d.p.Executable()
	dirs := host.Search{Flag: d.opts.PluginDir, Env: d.f.Getenv(host.EnvPluginDir), Exe: exe, Root: d.root}.Dirs()
	found, err := host.Discover(dirs)
	if err != nil {
		d.add("plugins", Problem, err.Error(), "make the directory readable, or pass --plugin-dir DIR")
		return
	}
	var where []string
	for _, dir := range dirs {
		where = append(where, dir.Path+" ("+dir.Source+")")
	}
	pdFlag := ""
	if d.opts.PluginDir != "" {
		pdFlag = " --plugin-dir " + d.opts.PluginDir
	}
	for _, c := range found {
		sum, err := host.Verify(c.Path)
		switch {
		case err == nil:
			d.add("plugin "+c.Name, OK, fmt.Sprintf("%s (%s), sha256 %s matches %s.sha256", c.Path, c.Source, hex.EncodeToString(sum)[:12], filepath.Base(c.Path)), "")
		default:
			d.add("plugin "+c.Name, Problem, fmt.Sprintf("%s (%s): checksum %s", c.Path, c.Source, host.StatusOf(err)),
				fmt.Sprintf("rebuild with make build, or if you trust the binary: (cd %s && sha256sum %s > %s.sha256)", filepath.Dir(c.Path), filepath.Base(c.Path), filepath.Base(c.Path)))
		}
	}
	for _, e := range engines {
		if !slices.ContainsFunc(found, func(c host.Candidate) bool { return c.Name == e }) {
			d.add("plugin "+e, Problem, fmt.Sprintf("no %s in %s", host.BinaryName(e), strings.Join(where, ", ")),
				"build it with make build (or install it with make install), or pass --plugin-dir DIR"+pdFlag)
		}
	}
}

func (d *doctor) engineBinary(plugin string) {
	name := cmdutil.EngineBinaries[plugin]
	bin, _ := cmdutil.EngineBinary(d.f, "", plugin, d.root)
	d.standIn[plugin] = cmdutil.IsStandIn(bin)
	record, recErr := cmdutil.EngineRecord(d.root)
	recPath := build.RootSums(d.root)
	check := "engine " + plugin
	switch {
	case bin == "":
		d.add(check, Problem, fmt.Sprintf("no %s: not $DRAMA_ENGINE_BIN, %s or on PATH", name, filepath.Join(d.root, "engine", name)),
			fmt.Sprintf("put the binary at %s, or set DRAMA_ENGINE_BIN, or pass drama serve --engine-bin PATH%s", filepath.Join(d.root, "engine", name), d.flags))
	case recErr != nil:
		d.add(check, Problem, bin+": "+recErr.Error(), cmdutil.RecordEngineCommand(bin, d.root))
	case record == "":
		d.add(check, Note, bin+", no sha256 recorded, so drama serve does not check it", "record it: "+cmdutil.RecordEngineCommand(bin, d.root))
	default:
		sum, _, err := filehash.SHA256(context.Background(), bin, nil)
		switch {
		case err != nil:
			d.add(check, Problem, bin+": "+err.Error(), "make the binary readable")
		case sum != record:
			d.add(check, Problem, fmt.Sprintf("%s: sha256 %s, want %s as %s records", bin, sum[:12], record[:12], recPath),
				"put back the recorded binary, or if you trust this one: "+cmdutil.RecordEngineCommand(bin, d.root))
		default:
			d.add(check, OK, fmt.Sprintf("%s, sha256 %s as recorded", bin, record[:12]), "")
		}
	}
}

// accelerator checks the GPU (cuda) or Metal (metal) and returns the
// largest free GPU memory in bytes, or 0 when none is known.
func (d *doctor) accelerator(engines map[string]bool) uint64 {
	var free uint64
	if engines["cuda"] {
		smi, err := d.p.LookPath("nvidia-smi")
		if err != nil && d.standIn["cuda"] {
			d.add("gpu", Note, "no NVIDIA GPU visible: nvidia-smi is not on PATH; the engine is the stand-in, which needs none",
				"for the real engine, install the NVIDIA driver (it brings nvidia-smi); on a Mac, use --variant macos")
		} else if err != nil {
			d.add("gpu", Problem, "no NVIDIA GPU visible: nvidia-smi is not on PATH", "install the NVIDIA driver (it brings nvidia-smi); on a Mac, use --variant macos")
		} else if out, err := d.p.Run(d.ctx, smi, "--query-gpu=name,memory.total,memory.free", "--format=csv,noheader,nounits"); err != nil {
			d.add("gpu", Problem, "nvidia-smi failed: "+err.Error(), "check the NVIDIA driver: run nvidia-smi")
		} else {
			var gpus []string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				fields := strings.Split(line, ",")
				if len(fields) != 3 {
					continue
				}
				total, _ := strconv.ParseUint(strings.TrimSpace(fields[1]), 10, 64)
				fr, _ := strconv.ParseUint(strings.TrimSpace(fields[2]), 10, 64)
				free = max(free, fr<<20)
				gpus = append(gpus, fmt.Sprintf("%s (%s, %s free)", strings.TrimSpace(fields[0]), cmdutil.HumanBytes(int64(total<<20)), cmdutil.HumanBytes(int64(fr<<20))))
			}
			if len(gpus) == 0 {
				d.add("gpu", Problem, "nvidia-smi lists no GPU", "check the NVIDIA driver: run nvidia-smi")
			} else {
				d.add("gpu", OK, strings.Join(gpus, "; "), "")
			}
		}
	}
	if engines["metal"] {
		if d.p.GOOS == "darwin" && d.p.GOARCH == "arm64" {
			d.add("metal", OK, "Apple silicon: Metal visible", "")
		} else {
			d.add("metal", Problem, fmt.Sprintf("no Metal on %s/%s: the macos variant needs Apple silicon", d.p.GOOS, d.p.GOARCH), "on this host use --variant full or --variant nvfp4")
		}
	}
	return free
}

func (d *doctor) variant(v string, installs []pins.Install, gpuFree uint64) {
	p := d.pinsOf(v, installs)
	if p == nil {
		return
	}
	est := uint64(p.MemoryGiB * (1 << 30))
	need := est + native.DefaultReserve
	if mem, err := d.p.Memory(); err != nil {
		d.add("memory "+v, Note, "cannot read the memory available: "+err.Error(), "")
	} else if mem.Available < need && d.standIn[p.Engine] {
		d.add("memory "+v, Note, fmt.Sprintf("want %s for the real engine, have %s available (%s); the stand-in loads no model, so drama serve books none", cmdutil.HumanBytes(int64(need)), cmdutil.HumanBytes(int64(mem.Available)), mem.Source), "")
	} else if mem.Available < need {
		d.add("memory "+v, Problem, fmt.Sprintf("want %s (estimate %s and reserve), have %s available (%s)", cmdutil.HumanBytes(int64(need)), cmdutil.HumanBytes(int64(est)), cmdutil.HumanBytes(int64(mem.Available)), mem.Source),
			fmt.Sprintf("free memory, or pass drama serve --variant %s --admission external (an outer scheduler decides) or --admission off", v))
	} else {
		d.add("memory "+v, OK, fmt.Sprintf("want %s, have %s available (%s)", cmdutil.HumanBytes(int64(need)), cmdutil.HumanBytes(int64(mem.Available)), mem.Source), "")
	}
	if p.Engine == "cuda" && gpuFree > 0 && gpuFree < est && !d.standIn["cuda"] {
		d.add("gpu memory "+v, Problem, fmt.Sprintf("want %s, the freest GPU has %s", cmdutil.HumanBytes(int64(est)), cmdutil.HumanBytes(int64(gpuFree))), "stop what holds the GPU (nvidia-smi lists it), or use a variant that needs less: --variant nvfp4")
	}
	installed := slices.ContainsFunc(installs, func(in pins.Install) bool { return in.Variant == v && in.Pins != nil })
	if installed {
		d.add("disk "+v, OK, fmt.Sprintf("installed, %s pinned", cmdutil.HumanBytes(p.TotalBytes())), "")
		return
	}
	size := p.TotalBytes()
	if size == 0 {
		size = p.ExpectedBytes
	}
	cache := d.rep.Caches[0]
	free, err := d.p.FreeBytes(cache)
	switch {
	case err != nil:
		d.add("disk "+v, Note, "cannot read the free space of "+cache+": "+err.Error(), "")
	case free < uint64(size):
		d.add("disk "+v, Problem, fmt.Sprintf("not installed: want %s free on %s, have %s", cmdutil.HumanBytes(size), cache, cmdutil.HumanBytes(int64(free))),
			"free some space, or point HF_HUB_CACHE at a larger disk before drama fetch --variant "+v+d.flags)
	default:
		d.add("disk "+v, OK, fmt.Sprintf("not installed: %s to fetch, %s free on %s", cmdutil.HumanBytes(size), cmdutil.HumanBytes(int64(free)), cache),
			"")
	}
}

func (d *doctor) ffmpeg() {
	p, err := d.p.LookPath("ffmpeg")
	if err != nil {
		d.add("ffmpeg", Note, "not on PATH: drama voice prepare and encode read WAV files only, and drama serve answers wav and pcm only",
			"install ffmpeg (apt install ffmpeg, brew install ffmpeg)")
		return
	}
	detail := p
	if out, err := d.p.Run(d.ctx, p, "-version"); err == nil {
		first, _, _ := strings.Cut(string(out), "\n")
		detail += ": " + strings.TrimSpace(first)
	}
	d.add("ffmpeg", OK, detail, "")
}

// leftovers finds the temporaries drama's writes leave when killed (files,
// and the directories drama quantize builds), and the partial downloads a
// fetch resumes. A temporary that names its owner is a dead run's (the next
// write of its target removes it) or a live run's (left alone).
func (d *doctor) leftovers() {
	var temps, dead, live, partial []string
	var partialBytes, deadBytes int64
	dirs := append([]string{d.root}, d.rep.Caches...)
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			name := e.Name()
			if t, ok := atomicfile.Parse(p); ok && p != dir {
				switch {
				case !t.Owned():
					temps = append(temps, p)
				case t.Alive():
					live = append(live, fmt.Sprintf("%s (pid %d)", p, t.Pid))
				default:
					dead = append(dead, p)
					deadBytes += diskUse(p)
				}
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if e.IsDir() {
				return nil
			}
			switch {
			case strings.HasSuffix(name, ".incomplete") && !strings.Contains(name, ".drama-copy."):
				partial = append(partial, p)
				if fi, err := e.Info(); err == nil {
					partialBytes += fi.Size()
				}
			case strings.Contains(name, ".drama-") && (strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".incomplete")):
				temps = append(temps, p)
			}
			return nil
		})
	}
	if len(partial) > 0 {
		d.add("partial downloads", Note, fmt.Sprintf("%d (%s), kept for resume", len(partial), cmdutil.HumanBytes(partialBytes)), "the same drama fetch resumes them")
	}
	if len(dead) > 0 {
		d.add("temporary files", Note, fmt.Sprintf("%d (%s) left by a killed run: %s", len(dead), cmdutil.HumanBytes(deadBytes), strings.Join(first(dead, 3), ", ")),
			"the next drama command writing there removes them, or remove them now: rm -r "+strings.Join(first(dead, 3), " "))
	}
	if len(live) > 0 {
		d.add("temporary files", OK, fmt.Sprintf("%d being written by a running drama: %s", len(live), strings.Join(first(live, 3), ", ")), "")
	}
	if len(temps) > 0 {
		d.add("temporary files", Note, fmt.Sprintf("%d left by an interrupted write: %s", len(temps), strings.Join(first(temps, 3), ", ")),
			"when no drama command runs, remove them: rm "+strings.Join(first(temps, 3), " "))
	}
	if len(dead)+len(live)+len(temps) == 0 {
		d.add("temporary files", OK, "none left", "")
	}
}

// diskUse returns the bytes of the file or directory tree at p.
func diskUse(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func first(ss []string, n int) []string { return ss[:min(n, len(ss))] }

func (d *doctor) print() error {
	f := d.f
	if f.Global.JSON {
		if err := cmdutil.WriteJSON(f.IO.Out, d.rep); err != nil {
			return err
		}
	} else {
		t := cmdutil.NewTable(f.IO, "check", "status", "detail")
		for _, c := range d.rep.Checks {
			t.AddRow(c.Check, string(c.Status), c.Detail)
		}
		if err := t.Render(); err != nil {
			return err
		}
		for _, c := range d.rep.Checks {
			if c.Fix != "" && c.Status != OK {
				fmt.Fprintln(f.IO.ErrOut, safetext.Lines(fmt.Sprintf("%s %s: %s\n  fix: %s", c.Status, c.Check, c.Detail, c.Fix)))
			}
		}
	}
	if d.rep.Problems > 0 {
		msg := fmt.Sprintf("doctor found %d problems, each with its fix", d.rep.Problems)
		if d.rep.Problems == 1 {
			msg = "doctor found 1 problem, with its fix"
		}
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: errors.New(msg)}
	}
	return nil
}
