package upcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine/bench"
	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/pins"
)

// The rates the plan's times assume: a download over a fast link, and
// sha256 on one core of a recent CPU. They are estimates, and the plan says so.
const (
	assumedDownload = 100e6 // bytes a second
	assumedHash     = 1e9   // bytes a second
)

// PlanStep is one step of drama up --dry-run.
type PlanStep struct {
	Step   string `json:"step"`
	Action string `json:"action"` // skip, run or refuse
	Bytes  int64  `json:"bytes,omitempty"`
	// Seconds is the estimated time, 0 when none can be given.
	Seconds float64 `json:"seconds,omitempty"`
	Detail  string  `json:"detail"`
}

// Refusal is something that keeps drama up from working, with its fix.
type Refusal struct {
	What string `json:"what"`
	Fix  string `json:"fix"`
}

// Plan is what drama up --dry-run prints.
type Plan struct {
	Variant  string     `json:"variant"`
	Root     string     `json:"root"`
	Steps    []PlanStep `json:"steps"`
	Refusals []Refusal  `json:"refusals,omitempty"`
}

func (p *Plan) refused() error {
	if len(p.Refusals) == 0 {
		return nil
	}
	var lines []string
	for _, r := range p.Refusals {
		lines = append(lines, r.What+": "+r.Fix)
	}
	return fmt.Errorf("cannot go on:\n  %s", strings.Join(lines, "\n  "))
}

func (p *Plan) refuse(what, fix string) { p.Refusals = append(p.Refusals, Refusal{what, fix}) }

// plan checks each step without taking it: what it would do, the bytes and
// time it needs, and what cannot work.
func (u *up) plan(ctx context.Context) *Plan {
	pl := &Plan{Variant: u.p.Variant, Root: u.root}
	add := func(name string, skip func(context.Context) (string, error), run func() PlanStep) {
		why, err := skip(ctx)
		switch {
		case err != nil:
			pl.Steps = append(pl.Steps, PlanStep{Step: name, Action: "refuse", Detail: err.Error()})
			pl.refuse(name, err.Error())
		case why != "":
			pl.Steps = append(pl.Steps, PlanStep{Step: name, Action: "skip", Detail: why})
		default:
			s := run()
			s.Step = name
			if s.Action == "" {
				s.Action = "run"
			}
			pl.Steps = append(pl.Steps, s)
		}
	}
	add("licence", u.licenceDone, func() PlanStep {
		d := "show the " + u.p.License + " and ask once"
		if u.opts.AcceptLicense {
			d = "accept the " + u.p.License + " (--accept-license)"
		} else if !u.f.IO.CanPrompt() || u.f.Global.JSON {
			pl.refuse("licence", fmt.Sprintf("the %s is not accepted and there is no terminal to ask at: read it at %s, then give --accept-license", u.p.License, licenceURL(u.p)))
			return PlanStep{Action: "refuse", Detail: "not accepted, and no terminal to ask at"}
		}
		return PlanStep{Detail: d}
	})
	fetching := false
	add("fetch", u.fetchDone, func() PlanStep {
		fetching = true
		_, have := present(u.dir, u.p)
		need := max(u.total()-have, 0)
		s := PlanStep{Bytes: need, Seconds: float64(need) / assumedDownload,
			Detail: fmt.Sprintf("%s of %s to download from %s (%s at 100 MB/s)", cmdutil.HumanBytes(need), cmdutil.HumanBytes(u.total()), u.hub.Endpoint, estimate(float64(need)/assumedDownload))}
		if !u.p.Complete() {
			s.Detail += "; the pins' digests are read from the Hub's listing first"
		}
		free, err := atomicfile.FreeBytes(u.hub.Cache.Dir)
		switch {
		case err != nil:
			s.Detail += "; free space unknown: " + err.Error()
		case free < need:
			pl.refuse("disk", fmt.Sprintf("the fetch needs %s on %s, which has %s free: free some space, or point HF_HUB_CACHE at a larger disk", cmdutil.HumanBytes(need), u.hub.Cache.Dir, cmdutil.HumanBytes(free)))
			s.Action = "refuse"
		default:
			s.Detail += fmt.Sprintf("; %s free on %s", cmdutil.HumanBytes(free), u.hub.Cache.Dir)
		}
		return s
	})
	add("verify", u.verifyDone, func() PlanStep {
		need := u.total()
		if !fetching {
			need = u.unvouched()
		}
		return PlanStep{Bytes: need, Seconds: float64(need) / assumedHash,
			Detail: fmt.Sprintf("hash %s by sha256 (%s at 1 GB/s)", cmdutil.HumanBytes(need), estimate(float64(need)/assumedHash))}
	})
	add("engine", u.engineDone, func() PlanStep { return u.planEngine(ctx, pl) })
	add("qualify", u.qualifyDone, func() PlanStep {
		return PlanStep{Detail: "drama qualify: assets, end-to-end checks and a gated bench on a drama serve of its own"}
	})
	where := "in the foreground at http://" + cmp.Or(u.opts.Serve.Addr, serverec.DefaultAddr)
	if u.opts.Service {
		where = "as a service (drama service install), at http://" + cmp.Or(u.opts.Serve.Addr, serverec.DefaultAddr)
	}
	pl.Steps = append(pl.Steps, PlanStep{Step: "serve", Action: "run", Detail: "drama serve " + where})
	u.checkHost(pl)
	return pl
}

// total is the bytes of the variant's files: the pins' sizes, else (pins
// without them) the total the pins' notes give.
func (u *up) total() int64 {
	if n := u.p.TotalBytes(); n > 0 {
		return n
	}
	return u.p.ExpectedBytes
}

// unvouched is the bytes of the files the verified-state record does not
// vouch for: what a verify that trusts the record hashes.
func (u *up) unvouched() int64 {
	rep, err := pins.Verify(context.Background(), u.dir, u.p, pins.VerifyOptions{Level: pins.LevelSize})
	if err != nil {
		return u.p.TotalBytes()
	}
	var n int64
	for _, r := range rep.Files {
		if !r.FromRecord {
			n += r.WantSize
		}
	}
	return n
}

// planEngine checks the toolchain the build needs before anything is
// downloaded.
func (u *up) planEngine(ctx context.Context, pl *Plan) PlanStep {
	s, err := cmdutil.LoadSources(u.f, u.opts.SourcesFile, u.opts.VariantSet)
	if err != nil {
		pl.refuse("engine", err.Error())
		return PlanStep{Action: "refuse", Detail: err.Error()}
	}
	tools, metal, err := build.CheckToolchain(ctx, s.Toolchain, cmp.Or(u.opts.Zig, u.f.Getenv("ZIG")), cmp.Or(u.opts.NVCC, u.f.Getenv("NVCC")), os.Environ())
	var te *build.ToolchainError
	switch {
	case errors.As(err, &te):
		flag := map[string]string{build.ToolZig: "--zig", build.ToolNVCC: "--nvcc"}[te.Tool]
		pl.refuse("compiler", fmt.Sprintf("%v, then name it with %s or %s", err, flag, te.Env))
		return PlanStep{Action: "refuse", Detail: err.Error()}
	case err != nil:
		pl.refuse("compiler", err.Error())
		return PlanStep{Action: "refuse", Detail: err.Error()}
	case metal != nil:
		pl.refuse("compiler", metal.Error()+": install Xcode (xcode-select --install gives no Metal compiler)")
		return PlanStep{Action: "refuse", Detail: metal.Error()}
	}
	found := "zig " + tools.ZigVersion
	if tools.NVCC != "" {
		found += ", nvcc " + tools.CUDAVersion
	}
	if tools.Metal != "" {
		found += ", " + tools.Metal
	}
	from := "GitHub"
	if u.opts.Source != "" {
		from = u.opts.Source
	}
	return PlanStep{Detail: fmt.Sprintf("build %s at %s and %s at %s from %s with %s (minutes; a build's time depends on the host)",
		s.Recipe.Name, short(s.Recipe.Commit), s.Upstream.Name, short(s.Upstream.Commit), from, found)}
}

// checkHost refuses what the host cannot run: a CUDA engine without a GPU
// or Metal without Apple silicon, and too little memory for the variant.
// The stand-in engine (drama serve --engine-bin) needs neither.
func (u *up) checkHost(pl *Plan) {
	bin, _ := cmdutil.EngineBinary(u.f, u.opts.Serve.EngineBin, u.plugin(), u.root)
	if bin != "" && cmdutil.IsStandIn(bin) {
		return
	}
	standIn := u.f.Suggest(append([]string{"up"}, cmdutil.WithFlag(withoutFlag(u.opts.Given, "--dry-run"), "--engine-bin", "bin/tensorfold-standin")...)...)
	switch u.plugin() {
	case "cuda":
		if bench.GPUName() == "" || runtime.GOOS == "darwin" {
			pl.refuse("gpu", "the "+u.p.Variant+" variant runs on a CUDA GPU and none is visible (nvidia-smi is not on the PATH or lists none): install the NVIDIA driver, or on a Mac use --variant macos; to try drama without a GPU: "+standIn)
		}
	case "metal":
		if runtime.GOOS != "darwin" || runtime.GOARCH != "arm64" {
			pl.refuse("gpu", fmt.Sprintf("the %s variant runs on Metal, which needs Apple silicon, not %s/%s: use --variant full or nvfp4 here", u.p.Variant, runtime.GOOS, runtime.GOARCH))
		}
	}
	if adm := u.opts.Serve.Admission; adm == "off" || adm == "external" {
		return
	}
	est := uint64(u.p.MemoryGiB * (1 << 30))
	need := est + native.DefaultReserve
	mem, err := native.AvailableMemory()
	if err == nil && mem.Available < need {
		pl.refuse("memory", fmt.Sprintf("the %s variant needs %s (estimate and reserve), and %s is available (%s): free memory, or pass --admission external (an outer scheduler decides) or --admission off",
			u.p.Variant, cmdutil.HumanBytes(int64(need)), cmdutil.HumanBytes(int64(mem.Available)), mem.Source))
	}
}

// estimate is a time for people: "about 4m0s", "under a second".
func estimate(secs float64) string {
	if secs < 1 {
		return "under a second"
	}
	return "about " + time.Duration(secs*float64(time.Second)).Round(time.Second).String()
}

func (u *up) printPlan(pl *Plan) error {
	f := u.f
	if f.Global.JSON {
		if err := cmdutil.WriteJSON(f.IO.Out, pl); err != nil {
			return err
		}
	} else {
		t := cmdutil.NewTable(f.IO, "step", "action", "bytes", "time", "detail")
		for _, s := range pl.Steps {
			bytes, secs := "", ""
			if s.Bytes > 0 {
				bytes = cmdutil.HumanBytes(s.Bytes)
				if !f.IO.IsStdoutTTY() {
					bytes = fmt.Sprint(s.Bytes)
				}
			}
			if s.Seconds > 0 {
				secs = estimate(s.Seconds)
			}
			t.AddRow(s.Step, s.Action, bytes, secs, s.Detail)
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if err := pl.refused(); err != nil {
		return err
	}
	f.Infof("nothing was done (--dry-run): %s", u.f.Suggest(append([]string{"up"}, withoutFlag(u.opts.Given, "--dry-run")...)...))
	return nil
}

// withoutFlag drops flag and its value from pairs.
func withoutFlag(pairs []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != flag {
			out = append(out, pairs[i], pairs[i+1])
		}
	}
	return out
}
