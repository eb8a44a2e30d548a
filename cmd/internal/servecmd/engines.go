package servecmd

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/pool"
)

// plannedEngine is one engine drama serve runs: its name (the engine label
// of /metrics and /ready) and what it is started with.
type plannedEngine struct {
	name string
	req  engine.StartRequest
}

// parseGPUs reads --gpus: GPU indexes, comma-separated, each once.
func parseGPUs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, cmdutil.FlagErrorf("--gpus %s: want GPU indexes as nvidia-smi numbers them, comma-separated, e.g. --gpus 0,1", s)
		}
		if slices.Contains(out, n) {
			return nil, cmdutil.FlagErrorf("--gpus %s: GPU %d given twice", s, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// perGPUAuto is --engines-per-gpu auto as parseEnginesPerGPU reads it.
const perGPUAuto = -1

// parseEnginesPerGPU reads --engines-per-gpu: a number from 1, or auto
// (perGPUAuto).
func parseEnginesPerGPU(s string) (int, error) {
	if s == "auto" {
		return perGPUAuto, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, cmdutil.FlagErrorf("--engines-per-gpu %s: want a number from 1, or auto (as many as fit in each GPU's free memory)", s)
	}
	return n, nil
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

// checkAuto makes the checks --engines-per-gpu auto needs before it can
// measure: --gpus given, a memory estimate for the variant, nvidia-smi
// found. It returns nvidia-smi's path and the estimate. drama serve makes
// them before anything else, so that a host without nvidia-smi learns it
// at once rather than after the file checks and --gpu-lock; the memory
// itself is measured later, with the lock held.
func checkAuto(f *cmdutil.Factory, opts *Options, variant string) (smi string, estimate uint64, err error) {
	if len(opts.gpus) == 0 {
		return "", 0, cmdutil.FlagErrorf("--engines-per-gpu auto needs --gpus, the GPUs to measure: e.g. %s",
			f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--gpus", "0")...)...))
	}
	estimate = native.CUDA.MemoryEstimate[variant]
	if estimate == 0 {
		return "", 0, cmdutil.FlagErrorf("--engines-per-gpu auto: no memory estimate for variant %s: give a number", variant)
	}
	smi, err = exec.LookPath(cmp.Or(opts.nvidiaSMI, "nvidia-smi"))
	if err != nil {
		return "", 0, cmdutil.FlagErrorf("--engines-per-gpu auto reads each GPU's memory with nvidia-smi, which is not on the PATH: give a number instead: %s", withOnePerGPU(f, opts))
	}
	return smi, estimate, nil
}

// withOnePerGPU is the user's drama serve command line with
// --engines-per-gpu 1.
func withOnePerGPU(f *cmdutil.Factory, opts *Options) string {
	return f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--engines-per-gpu", "1")...)...)
}

// autoEngines is how many engines of estimate bytes fit on each GPU of
// gpus, from what nvidia-smi (at bin) reports: the free memory less the
// reserve the engine's own admission leaves (native.DefaultReserve).
func autoEngines(ctx context.Context, f *cmdutil.Factory, opts *Options, bin string, gpus []int, variant string, estimate uint64) (map[int]int, error) {
	withN := withOnePerGPU(f, opts)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--query-gpu=index,memory.total,memory.used", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return nil, cmdutil.FlagErrorf("--engines-per-gpu auto: nvidia-smi failed (%v): give a number instead: %s", err, withN)
	}
	mem, err := parseNvidiaSMI(out)
	if err != nil {
		return nil, cmdutil.FlagErrorf("--engines-per-gpu auto: %v: give a number instead: %s", err, withN)
	}
	counts := map[int]int{}
	for _, g := range gpus {
		i := slices.IndexFunc(mem, func(m gpuMemory) bool { return m.index == g })
		if i < 0 {
			var have []string
			for _, m := range mem {
				have = append(have, strconv.Itoa(m.index))
			}
			return nil, cmdutil.FlagErrorf("--gpus: GPU %d is not among those nvidia-smi lists (%s)", g, strings.Join(have, ", "))
		}
		free := int64(mem[i].total<<20) - int64(mem[i].used<<20) - native.DefaultReserve
		n := int(max(free, 0) / int64(estimate))
		if n < 1 {
			return nil, fmt.Errorf("--engines-per-gpu auto: GPU %d has %.1f GiB free of %.1f GiB; one %s engine needs about %.1f GiB and %d GiB stay free: free memory on it, or leave it out of --gpus",
				g, float64(max(free+native.DefaultReserve, 0))/(1<<30), float64(mem[i].total)/1024, variant, float64(estimate)/(1<<30), native.DefaultReserve>>30)
		}
		counts[g] = n
	}
	return counts, nil
}

// planEngines turns --gpus and --engines-per-gpu into the engines to run.
// Without --gpus there is one engine (or --engines-per-gpu of them) on the
// GPUs the environment gives, started as today; with it, each engine sees
// its GPU alone (CUDA_VISIBLE_DEVICES) and keeps its runtime file and log
// in a directory of its own under the runtime directory.
func planEngines(ctx context.Context, f *cmdutil.Factory, opts *Options, req engine.StartRequest) ([]plannedEngine, error) {
	gpus, per := opts.gpus, max(opts.perGPU, 1)
	auto := opts.perGPU == perGPUAuto
	counts := map[int]int{}
	if auto {
		smi, est, err := checkAuto(f, opts, req.Variant)
		if err != nil {
			return nil, err
		}
		if counts, err = autoEngines(ctx, f, opts, smi, gpus, req.Variant, est); err != nil {
			return nil, err
		}
	}
	if len(gpus) == 0 {
		if per == 1 {
			return []plannedEngine{{name: "engine-0", req: req}}, nil
		}
		var out []plannedEngine
		for i := range per {
			out = append(out, ownDir(fmt.Sprintf("engine-%d", i), req, ""))
		}
		return out, nil
	}
	var out []plannedEngine
	for _, g := range gpus {
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
func ownDir(name string, req engine.StartRequest, gpu string) plannedEngine {
	req.RuntimeDir = filepath.Join(req.RuntimeDir, name)
	req.Env = slices.Clone(req.Env)
	if gpu != "" {
		req.Env = append(req.Env, "CUDA_VISIBLE_DEVICES="+gpu)
	}
	return plannedEngine{name: name, req: req}
}

// dispatchOptions are the pool's options from the flags.
func dispatchOptions(opts *Options) pool.Options {
	wait := opts.AffinityWait
	if wait == 0 {
		wait = -1 // no wait
	}
	warm := opts.PrefixCache
	if warm == 0 {
		warm = -1 // the engine caches no prefix
	}
	return pool.Options{MaxQueue: opts.MaxQueue, AffinityWait: wait, WarmVoices: warm, Policy: pool.Policy(opts.Dispatch)}
}

// checkEngines reads --gpus and --engines-per-gpu into o.gpus and
// o.perGPU, for planEngines; the Metal engine runs one engine, the GPU's
// unified memory being the host's.
func (o *Options) checkEngines() error {
	gpus, err := parseGPUs(o.GPUs)
	if err != nil {
		return err
	}
	per, err := parseEnginesPerGPU(o.EnginesPerGPU)
	if err != nil {
		return err
	}
	if engineName(o.Engine) == "metal" && (len(gpus) > 0 || per != 1) { // auto included
		return cmdutil.FlagErrorf("--gpus and --engines-per-gpu: the metal engine runs one engine; leave them out")
	}
	o.gpus, o.perGPU = gpus, per
	return nil
}
