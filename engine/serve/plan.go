package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
)

// Planned is one engine drama serve runs: its name (the engine label of
// /metrics and /ready) and what it is started with.
type Planned struct {
	Name string
	Req  engine.StartRequest
}

// PerGPUAuto is Plan's PerGPU for as many engines as fit in each GPU's
// free memory.
const PerGPUAuto = -1

// ParseGPUs reads GPU indexes as nvidia-smi numbers them, comma-separated
// ("0,1"), each once; "" is none (the GPUs the environment gives).
func ParseGPUs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, errors.New("want GPU indexes as nvidia-smi numbers them, comma-separated, e.g. 0,1")
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("GPU %d given twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParsePerGPU reads the engines on each GPU: a number from 1, or auto
// (PerGPUAuto).
func ParsePerGPU(s string) (int, error) {
	if s == "auto" {
		return PerGPUAuto, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, errors.New("want a number from 1, or auto (as many as fit in each GPU's free memory)")
	}
	return n, nil
}

// Tuning is what the native engine is tuned with: long-form segments of
// LongFormChars characters, each conditioned on LongFormHistory earlier
// ones (with LongForm), and PrefixCache voice prefixes kept cached.
type Tuning struct {
	LongForm                                    bool
	LongFormChars, LongFormHistory, PrefixCache int
}

// Apply adds the tuning to req's parameters and environment (the native
// engine turns them into its server's flags).
func (t Tuning) Apply(req *engine.StartRequest) {
	if t.LongForm {
		req.Params = map[string]string{
			native.ParamLongFormChars:   strconv.Itoa(t.LongFormChars),
			native.ParamLongFormHistory: strconv.Itoa(t.LongFormHistory),
		}
	}
	req.Env = append(req.Env, fmt.Sprintf("%s=%d", native.EnvPrefixCache, t.PrefixCache))
}

// PlanOptions say how many engines to run, and where.
type PlanOptions struct {
	// GPUs are the GPU indexes to run engines on; none: the GPUs the
	// environment gives.
	GPUs []int
	// PerGPU is the engines on each GPU (0 is 1), or PerGPUAuto: as many
	// as fit, measured with NvidiaSMI (its path) against Estimate bytes an
	// engine.
	PerGPU    int
	NvidiaSMI string
	Estimate  uint64
}

// Plan turns the GPUs and the engines per GPU into the engines to run.
// Without GPUs there is one engine (or PerGPU of them) on the GPUs the
// environment gives; with them, each engine sees its GPU alone
// (CUDA_VISIBLE_DEVICES) and keeps its runtime file and log in a directory
// of its own under req's runtime directory. A measure that fails is a
// *SMIError, *UnknownGPUError or *NoRoomError.
func Plan(ctx context.Context, req engine.StartRequest, o PlanOptions) ([]Planned, error) {
	per := max(o.PerGPU, 1)
	auto := o.PerGPU == PerGPUAuto
	counts := map[int]int{}
	if auto {
		var err error
		if counts, err = autoEngines(ctx, o.NvidiaSMI, o.GPUs, req.Variant, o.Estimate); err != nil {
			return nil, err
		}
	}
	if len(o.GPUs) == 0 {
		if per == 1 {
			return []Planned{{Name: "engine-0", Req: req}}, nil
		}
		var out []Planned
		for i := range per {
			out = append(out, ownDir(fmt.Sprintf("engine-%d", i), req, ""))
		}
		return out, nil
	}
	var out []Planned
	for _, g := range o.GPUs {
		n := per
		if auto {
			n = counts[g]
		}
		for i := range n {
			out = append(out, ownDir(fmt.Sprintf("gpu%d-%d", g, i), req, strconv.Itoa(g)))
		}
	}
	return out, nil
}

// ownDir gives an engine its own runtime directory (runtime file and log)
// and, when gpu is set, that GPU alone.
func ownDir(name string, req engine.StartRequest, gpu string) Planned {
	req.RuntimeDir = filepath.Join(req.RuntimeDir, name)
	req.Env = slices.Clone(req.Env)
	if gpu != "" {
		req.Env = append(req.Env, "CUDA_VISIBLE_DEVICES="+gpu)
	}
	return Planned{Name: name, Req: req}
}

// gpuMemory is one GPU as nvidia-smi reports it, in MiB.
type gpuMemory struct {
	index       int
	total, used uint64
}

// parseNvidiaSMI reads the output of nvidia-smi
// --query-gpu=index,memory.total,memory.used --format=csv,noheader,nounits:
// one line per GPU, "0, 143771, 512".
func parseNvidiaSMI(out []byte) ([]gpuMemory, error) {
	var gpus []gpuMemory
	for i, line := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("nvidia-smi line %d %q: want index, memory.total, memory.used", i+1, line)
		}
		var v [3]uint64
		for k := range f {
			n, err := strconv.ParseUint(strings.TrimSpace(f[k]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("nvidia-smi line %d %q: field %d is not a number (%s)", i+1, line, k+1, strings.TrimSpace(f[k]))
			}
			v[k] = n
		}
		gpus = append(gpus, gpuMemory{index: int(v[0]), total: v[1], used: v[2]})
	}
	if len(gpus) == 0 {
		return nil, errors.New("nvidia-smi listed no GPU")
	}
	return gpus, nil
}

// SMIError is nvidia-smi failing, or saying what cannot be read.
type SMIError struct{ Err error }

// Error says what nvidia-smi did.
func (e *SMIError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *SMIError) Unwrap() error { return e.Err }

// UnknownGPUError is a GPU nvidia-smi does not list.
type UnknownGPUError struct {
	GPU    int
	Listed []int
}

// Error names the GPU and those listed.
func (e *UnknownGPUError) Error() string {
	have := make([]string, len(e.Listed))
	for i, g := range e.Listed {
		have[i] = strconv.Itoa(g)
	}
	return fmt.Sprintf("GPU %d is not among those nvidia-smi lists (%s)", e.GPU, strings.Join(have, ", "))
}

// NoRoomError is a GPU without the free memory one engine needs.
type NoRoomError struct {
	GPU         int
	Free, Total int64 // bytes; Free counts the reserve
	Variant     string
	Estimate    uint64
	Reserve     int64 // what the engine's admission leaves free
}

// Error says what is free and what one engine needs.
func (e *NoRoomError) Error() string {
	return fmt.Sprintf("GPU %d has %.1f GiB free of %.1f GiB; one %s engine needs about %.1f GiB and %d GiB stay free",
		e.GPU, float64(e.Free)/(1<<30), float64(e.Total)/(1<<30), e.Variant, float64(e.Estimate)/(1<<30), e.Reserve>>30)
}

// autoEngines is how many engines of estimate bytes fit on each GPU of
// gpus, from what nvidia-smi (at bin) reports: the free memory less the
// reserve the engine's own admission leaves (native.DefaultReserve).
func autoEngines(ctx context.Context, bin string, gpus []int, variant string, estimate uint64) (map[int]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--query-gpu=index,memory.total,memory.used", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return nil, &SMIError{fmt.Errorf("nvidia-smi failed (%v)", err)}
	}
	mem, err := parseNvidiaSMI(out)
	if err != nil {
		return nil, &SMIError{err}
	}
	counts := map[int]int{}
	for _, g := range gpus {
		i := slices.IndexFunc(mem, func(m gpuMemory) bool { return m.index == g })
		if i < 0 {
			var have []int
			for _, m := range mem {
				have = append(have, m.index)
			}
			return nil, &UnknownGPUError{GPU: g, Listed: have}
		}
		free := int64(mem[i].total<<20) - int64(mem[i].used<<20) - native.DefaultReserve
		n := int(max(free, 0) / int64(estimate))
		if n < 1 {
			return nil, &NoRoomError{GPU: g, Free: max(free+native.DefaultReserve, 0), Total: int64(mem[i].total << 20),
				Variant: variant, Estimate: estimate, Reserve: native.DefaultReserve}
		}
		counts[g] = n
	}
	return counts, nil
}
