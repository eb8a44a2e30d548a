package servecmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/serve"
)

// perGPUAuto is --engines-per-gpu auto as serve.ParsePerGPU reads it.
const perGPUAuto = serve.PerGPUAuto

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

// planEngines turns --gpus and --engines-per-gpu into the engines to run
// (serve.Plan), the measure of --engines-per-gpu auto's failures told as
// the flags' with the user's command line.
func planEngines(ctx context.Context, f *cmdutil.Factory, opts *Options, req engine.StartRequest) ([]serve.Planned, error) {
	po := serve.PlanOptions{GPUs: opts.gpus, PerGPU: opts.perGPU}
	if opts.perGPU == perGPUAuto {
		var err error
		if po.NvidiaSMI, po.Estimate, err = checkAuto(f, opts, req.Variant); err != nil {
			return nil, err
		}
	}
	plan, err := serve.Plan(ctx, req, po)
	var smi *serve.SMIError
	var unknown *serve.UnknownGPUError
	var room *serve.NoRoomError
	switch {
	case errors.As(err, &smi):
		return nil, cmdutil.FlagErrorf("--engines-per-gpu auto: %v: give a number instead: %s", err, withOnePerGPU(f, opts))
	case errors.As(err, &unknown):
		return nil, cmdutil.FlagErrorf("--gpus: %v", err)
	case errors.As(err, &room):
		return nil, fmt.Errorf("--engines-per-gpu auto: %w: free memory on it, or leave it out of --gpus", err)
	}
	return plan, err
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
// o.perGPU (serve.ParseGPUs, serve.ParsePerGPU), for planEngines; the Metal engine runs one engine, the GPU's
// unified memory being the host's.
func (o *Options) checkEngines() error {
	gpus, err := serve.ParseGPUs(o.GPUs)
	if err != nil {
		return cmdutil.FlagErrorf("--gpus %s: %v", o.GPUs, err)
	}
	per, err := serve.ParsePerGPU(o.EnginesPerGPU)
	if err != nil {
		return cmdutil.FlagErrorf("--engines-per-gpu %s: %v", o.EnginesPerGPU, err)
	}
	if engineName(o.Engine) == "metal" && (len(gpus) > 0 || per != 1) { // auto included
		return cmdutil.FlagErrorf("--gpus and --engines-per-gpu: the metal engine runs one engine; leave them out")
	}
	o.gpus, o.perGPU = gpus, per
	return nil
}
