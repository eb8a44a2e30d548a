package servecmd

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/serve"
)

// fakeSMI writes an nvidia-smi that prints out.
func fakeSMI(t *testing.T, out string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nvidia-smi")
	if err := os.WriteFile(path, []byte("#!/bin/sh\ncat <<'EOF'\n"+out+"EOF\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func names(plan []serve.Planned) string {
	var n []string
	for _, p := range plan {
		n = append(n, p.Name)
	}
	return strings.Join(n, ",")
}

func TestPlanEngines(t *testing.T) {
	root := t.TempDir()
	req := engine.StartRequest{Install: engine.Install{Variant: "full"}, RuntimeDir: filepath.Join(root, ".drama", "run"), Env: []string{"DRAMA_PREFIX_CACHE=2"}}
	plan := func(args string) ([]serve.Planned, error) {
		opts := serveOptions(t, root, args)
		opts.nvidiaSMI = fakeSMI(t, "0, 143771, 512\n1, 143771, 100000\n2, 81559, 80000\n")
		return planEngines(context.Background(), opts.F, opts, req)
	}
	// the default: one engine, started as before
	p, err := plan("")
	if err != nil || names(p) != "engine-0" || p[0].Req.RuntimeDir != req.RuntimeDir || len(p[0].Req.Env) != 1 {
		t.Fatalf("default plan %+v %v", p, err)
	}
	p, err = plan("--gpus 0,1 --engines-per-gpu 2")
	if err != nil || names(p) != "gpu0-0,gpu0-1,gpu1-0,gpu1-1" {
		t.Fatalf("plan %s %v", names(p), err)
	}
	if e := p[2]; e.Req.RuntimeDir != filepath.Join(req.RuntimeDir, "gpu1-0") || !slices.Contains(e.Req.Env, "CUDA_VISIBLE_DEVICES=1") ||
		slices.Contains(e.Req.Env, "CUDA_VISIBLE_DEVICES=0") || len(req.Env) != 1 {
		t.Fatalf("gpu1-0 %+v", e.Req)
	}
	// auto: (143771-512 MiB - 2 GiB) / 40 GiB = 3 on GPU 0; 1 on GPU 1
	p, err = plan("--gpus 0,1 --engines-per-gpu auto")
	if err != nil || names(p) != "gpu0-0,gpu0-1,gpu0-2,gpu1-0" {
		t.Fatalf("auto plan %s %v", names(p), err)
	}
	for args, want := range map[string]string{
		"--gpus 2 --engines-per-gpu auto": "GPU 2 has 1.5 GiB free",
		"--gpus 7 --engines-per-gpu auto": "GPU 7 is not among those nvidia-smi lists (0, 1, 2)",
		"--engines-per-gpu auto":          "--engines-per-gpu auto needs --gpus",
	} {
		if _, err := plan(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	// no nvidia-smi: the flag named, and a number suggested with the user's flags
	opts := serveOptions(t, root, "--gpus 0 --engines-per-gpu auto")
	opts.Given = []string{"--gpus", "0", "--engines-per-gpu", "auto"}
	opts.nvidiaSMI = filepath.Join(t.TempDir(), "nvidia-smi")
	_, err = planEngines(context.Background(), opts.F, opts, req)
	if err == nil || !strings.Contains(err.Error(), "--engines-per-gpu auto reads each GPU's memory with nvidia-smi, which is not on the PATH") ||
		!strings.Contains(err.Error(), "--engines-per-gpu 1") || !strings.Contains(err.Error(), "--gpus 0") {
		t.Fatalf("without nvidia-smi: %v", err)
	}
}

func TestEngineFlagsRefused(t *testing.T) {
	cmdtest.CheckFlags(t, NewCmd, refused(map[string]string{
		"--gpus 0,x":                         "--gpus 0,x: want GPU indexes",
		"--gpus 0,0":                         "GPU 0 given twice",
		"--engines-per-gpu 0":                "want a number from 1, or auto",
		"--engine metal --gpus 0":            "the metal engine runs one engine",
		"--dispatch fastest":                 `--dispatch "fastest": want affinity or round-robin`,
		"--affinity-wait -1s":                "--affinity-wait must be 0 or more",
		"--ready-wait -1s":                   "--ready-wait must be 0 or more",
		"--engine metal --engines-per-gpu 2": "the metal engine runs one engine",
	}))
}

func TestDispatchOptions(t *testing.T) {
	o := serveOptions(t, t.TempDir(), "--max-queue 0 --affinity-wait 0 --prefix-cache 0 --dispatch round-robin")
	if got := dispatchOptions(o); got != (pool.Options{MaxQueue: 0, AffinityWait: -1, WarmVoices: -1, Policy: pool.RoundRobin}) {
		t.Fatalf("options %+v", got)
	}
	o = serveOptions(t, t.TempDir(), "")
	if got := dispatchOptions(o); got != (pool.Options{MaxQueue: 32, AffinityWait: pool.DefaultAffinityWait, WarmVoices: 2, Policy: pool.Affinity}) {
		t.Fatalf("default options %+v", got)
	}
}

// TestServeRecordNamesEveryEngineLog: with several engines the record
// drama status reads names each engine and its own log, and keeps the
// first engine's log under engine_log for older readers.
func TestServeRecordNamesEveryEngineLog(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, ".drama", "run")
	for args, want := range map[string][]serverec.EngineLog{
		"--gpus 0,1": {{Name: "gpu0-0", Log: filepath.Join(run, "gpu0-0", "engine-cuda.log")}, {Name: "gpu1-0", Log: filepath.Join(run, "gpu1-0", "engine-cuda.log")}},
		"":           {{Name: "engine-0", Log: filepath.Join(run, "engine-cuda.log")}},
	} {
		opts := serveOptions(t, root, "--engine cuda "+args)
		plan, err := planEngines(context.Background(), opts.F, opts, engine.StartRequest{RuntimeDir: run})
		if err != nil {
			t.Fatal(err)
		}
		rec := serveRecord(opts, plan, "127.0.0.1:1", root)
		if !slices.Equal(rec.Engines, want) || rec.EngineLog != want[0].Log || rec.Engine != "cuda" {
			t.Errorf("%q: record engines %+v, engine_log %q; want %+v and the first's log", args, rec.Engines, rec.EngineLog, want)
		}
	}
}

// TestAutoWithoutNvidiaSMIFailsFirst: with --engines-per-gpu auto on a
// host without nvidia-smi, drama serve fails at once, naming the flag and
// suggesting --engines-per-gpu 1 with the user's flags: before the install
// checks (nothing is installed here, which would be the error otherwise)
// and before --gpu-lock (whose file is never created, nor the lock
// taken).
func TestAutoWithoutNvidiaSMIFailsFirst(t *testing.T) {
	standIn := standInBinary(t)
	notStandIn := filepath.Join(t.TempDir(), "tensorfold-native")
	if err := os.WriteFile(notStandIn, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // no nvidia-smi
	for what, bin := range map[string]string{"the install checks": notStandIn, "the GPU lock": standIn} {
		root := t.TempDir() // nothing installed
		lock := filepath.Join(t.TempDir(), "gpu.lock")
		args := []string{"--engine", filepath.Join(t.TempDir(), "drama-engine-cuda"), "--engine-bin", bin, "--addr", "127.0.0.1:0",
			"--gpus", "0", "--engines-per-gpu", "auto", "--gpu-lock", lock, "--gpu-lock-wait", "1h"}
		opts := serveOptions(t, root, strings.Join(args, " "))
		opts.Given = args
		var errOut strings.Builder
		opts.F.IO.ErrOut = &errOut
		err := run(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), "--engines-per-gpu auto reads each GPU's memory with nvidia-smi, which is not on the PATH") ||
			!strings.Contains(err.Error(), "--engines-per-gpu 1") || !strings.Contains(err.Error(), "--gpu-lock "+lock) {
			t.Errorf("before %s: %v; want the nvidia-smi error, with the user's flags and --engines-per-gpu 1", what, err)
		}
		if _, serr := os.Stat(lock); !errors.Is(serr, fs.ErrNotExist) || strings.Contains(errOut.String(), "GPU lock") {
			t.Errorf("before %s: the GPU lock was taken before nvidia-smi was looked for (%v); log:\n%s", what, serr, errOut.String())
		}
	}
}
