package standin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Exit codes of the stand-in binary.
const (
	ExitOK      = 0
	ExitFailure = 1  // a failure while running
	ExitUsage   = 2  // bad arguments
	ExitCrash   = 70 // a crash asked for by MarkerCrash or a fault
)

// Environment settings the stand-in binary reads on top of its flags, so a
// supervisor's explicit environment can set them.
const (
	// EnvFault selects a fault: crash-on-start, hang-on-start,
	// ignore-sigterm, encode-fail, or noise (a broken engine: well-formed
	// noise instead of speech, Options.Noise).
	EnvFault = "TENSORFOLD_STANDIN_FAULT"
	// EnvFaultFile names a file read at each start of the server: its
	// content, when there is any, selects the fault as EnvFault does, so a
	// test can make the restarts of a running engine fail.
	EnvFaultFile = "TENSORFOLD_STANDIN_FAULT_FILE"
	// EnvLoadTime is the simulated model load (a Go duration; default 300ms).
	EnvLoadTime = "TENSORFOLD_STANDIN_LOAD_TIME"
	// EnvRTF paces synthesis: wall seconds per second of audio.
	EnvRTF = "TENSORFOLD_STANDIN_RTF"
	// EnvHoldMiB is memory the stand-in allocates and touches while it
	// loads and holds until it exits, as an engine holds its weights
	// (MiB; default 0).
	EnvHoldMiB = "TENSORFOLD_STANDIN_HOLD_MIB"
	// EnvPrefill is the delay before the first audio of a voice the prefix
	// cache does not hold (a Go duration; default none). The cache keeps
	// DRAMA_PREFIX_CACHE voices (default 2; 0: none).
	EnvPrefill = "TENSORFOLD_STANDIN_PREFILL"
)

// Main runs the stand-in binary with args (without the program name) and
// returns its exit code. It takes the CUDA shapes "serve ..." and "voice
// encode ...", and the Metal shapes "--serve ..." and "--encode OUT ...".
func Main(args []string, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "serve":
		return serveMain(args[1:], false, stderr)
	case len(args) > 1 && args[0] == "voice" && args[1] == "encode":
		return encodeMain(args[2:], false, stderr)
	case hasFlag(args, "serve"):
		return serveMain(args, true, stderr)
	case hasFlag(args, "encode"):
		return encodeMain(args, true, stderr)
	}
	fmt.Fprintln(stderr, "usage: tensorfold-standin serve FLAGS | voice encode FLAGS | --serve FLAGS | --encode OUT FLAGS")
	return ExitUsage
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || a == "-"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

type serveFlags struct {
	port, parallel, maxFrames    int
	holdMiB                      int
	model, codec, voices, defVox string
	longForm, cfgBatched, metal  bool
	cfgGamma, rtf                float64
	loadTime, busyAfterCancel    time.Duration
	prefill                      time.Duration
	fault                        string
}

func parseServe(args []string, metal bool, stderr io.Writer) (*serveFlags, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &serveFlags{metal: metal}
	fs.Bool("serve", metal, "serve (Metal shape)")
	fs.IntVar(&o.port, "port", 18793, "loopback port")
	fs.IntVar(&o.parallel, "parallel", 1, "syntheses at a time (only 1)")
	fs.Int("prompt-cache-gib", 0, "prompt cache (ignored)")
	fs.IntVar(&o.maxFrames, "max-frames", 0, "frame limit per synthesis")
	fs.StringVar(&o.model, "model", "", "model directory")
	fs.StringVar(&o.codec, "codec", "", "codec.pth")
	fs.StringVar(&o.voices, "voices", "", "voices directory")
	fs.StringVar(&o.defVox, "default-voice", "", "voice used when a request names none")
	fs.BoolVar(&o.longForm, "long-form", false, "split long input into segments")
	fs.Int("long-form-chars", 500, "segment length (only 500)")
	fs.Int("long-form-history", 1, "segments of history (ignored)")
	fs.Float64Var(&o.cfgGamma, "cfg-gamma", 0, "guidance scale")
	fs.BoolVar(&o.cfgBatched, "cfg-batched", false, "batched guidance")
	fs.Float64Var(&o.rtf, "rtf", envFloat(EnvRTF), "wall seconds per second of audio (0: no pacing)")
	fs.DurationVar(&o.loadTime, "load-time", envDuration(EnvLoadTime, 300*time.Millisecond), "simulated model load")
	fs.DurationVar(&o.prefill, "prefill", envDuration(EnvPrefill, 0), "delay before the first audio of a voice not in the prefix cache")
	fs.DurationVar(&o.busyAfterCancel, "busy-after-cancel", DefaultBusyAfterCancel, "503 window after a cancel")
	fs.IntVar(&o.holdMiB, "hold-mib", int(envFloat(EnvHoldMiB)), "memory to allocate, touch and hold once loaded, as an engine holds its weights (MiB)")
	fs.StringVar(&o.fault, "fault", envFault(), "crash-on-start, hang-on-start, ignore-sigterm or noise")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.holdMiB < 0 {
		return nil, fmt.Errorf("--hold-mib (%s): want 0 or more MiB, got %d", EnvHoldMiB, o.holdMiB)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.parallel != 1 {
		return nil, fmt.Errorf("--parallel: want 1, got %d", o.parallel)
	}
	if o.metal && o.longForm {
		return nil, errors.New("--long-form: not supported by the Metal build")
	}
	return o, nil
}

func serveMain(args []string, metal bool, stderr io.Writer) int {
	o, err := parseServe(args, metal, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "standin: serve:", err)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "standin: args: %s\n", strings.Join(args, " "))
	fmt.Fprintf(stderr, "standin: device: %s\n", deviceID())
	opts := Options{Metal: o.metal, MaxFrames: o.maxFrames, LongForm: o.longForm, DefaultVoice: o.defVox,
		RTF: o.rtf, BusyAfterCancel: o.busyAfterCancel, Crash: func() { crash(stderr) }, Prefill: o.prefill,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }, Noise: o.fault == "noise"}
	if v, ok := os.LookupEnv("DRAMA_PREFIX_CACHE"); ok {
		fmt.Fprintf(stderr, "standin: prefix cache: %s\n", v)
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fmt.Fprintf(stderr, "standin: serve: DRAMA_PREFIX_CACHE=%s: want a whole number of voices, 0 or more\n", v)
			return ExitUsage
		}
		opts.PrefixCache = n
		if n == 0 {
			opts.PrefixCache = -1
		}
	}
	if o.voices != "" {
		if opts.Voices, err = LoadVoices(o.voices, o.metal); err != nil {
			fmt.Fprintln(stderr, err)
			return ExitFailure
		}
	}
	run, err := Listen(opts, o.port)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFailure
	}
	run.SetReady(false)
	fmt.Fprintf(stderr, "standin: listening on %s\n", run.Addr)
	return serveUntilSignal(run, o, stderr)
}

func serveUntilSignal(run *Running, o *serveFlags, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go load(ctx, run, o, stderr)
	for sig := range sigs {
		name := "SIGTERM" // Go's own name of it reads "terminated"
		if sig == syscall.SIGINT {
			name = "SIGINT"
		}
		if o.fault == "ignore-sigterm" {
			fmt.Fprintf(stderr, "standin: ignoring %s\n", name)
			continue
		}
		fmt.Fprintf(stderr, "standin: %s: shutting down\n", name)
		break
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	if err := run.srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		run.Close()
	}
	return ExitOK
}

// load simulates loading the model: progress lines, then ready, or the
// start fault asked for.
func load(ctx context.Context, run *Running, o *serveFlags, stderr io.Writer) {
	if o.fault == "hang-on-start" {
		return
	}
	for pct := 0; pct <= 100; pct += 25 {
		if pct == 50 && o.fault == "crash-on-start" {
			fmt.Fprintln(stderr, "standin: CUDA error: out of memory (simulated)")
			os.Exit(ExitCrash)
		}
		fmt.Fprintf(stderr, "standin: loading model: %d%%\n", pct)
		select {
		case <-ctx.Done():
			return
		case <-time.After(o.loadTime / 4):
		}
	}
	var held []byte
	if o.holdMiB > 0 {
		held = hold(o.holdMiB)
		fmt.Fprintf(stderr, "standin: holding %d MiB\n", o.holdMiB)
	}
	run.SetReady(true)
	fmt.Fprintln(stderr, "standin: ready")
	if held != nil {
		// the memory stays held until the stand-in stops serving
		<-ctx.Done()
		runtime.KeepAlive(held)
	}
}

// hold allocates mib MiB and writes to every page of it, so that all of it
// is resident, as loaded weights are.
func hold(mib int) []byte {
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return b
}

// deviceID names the GPUs the engine was started with, as the native
// engine's CUDA runtime sees them: CUDA_VISIBLE_DEVICES, or all of them.
func deviceID() string {
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		return "CUDA_VISIBLE_DEVICES=" + v
	}
	return "every GPU (CUDA_VISIBLE_DEVICES unset)"
}

func crash(stderr io.Writer) {
	fmt.Fprintln(stderr, "standin: fatal: simulated crash during synthesis")
	os.Exit(ExitCrash)
}

func encodeMain(args []string, metal bool, stderr io.Writer) int {
	fs := flag.NewFlagSet("encode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	codec := fs.String("codec", "", "codec.pth")
	var clip, out *string
	if metal {
		clip = fs.String("ref-audio", "", "clip (canonical WAV)")
		out = fs.String("encode", "", "codes file to write")
	} else {
		clip = fs.String("audio", "", "clip (canonical WAV)")
		out = fs.String("out", "", "codes file to write")
	}
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if *codec == "" || *clip == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "standin: encode: want --codec, the clip and the output, and nothing else")
		return ExitUsage
	}
	if _, err := os.Stat(*codec); err != nil {
		fmt.Fprintf(stderr, "standin: encode: codec: %v\n", err)
		return ExitFailure
	}
	if os.Getenv(EnvFault) == "encode-fail" {
		fmt.Fprintln(stderr, "standin: encode: CUDA error: out of memory (simulated)")
		return ExitFailure
	}
	if err := EncodeFile(*clip, *out); err != nil {
		fmt.Fprintf(stderr, "standin: encode: %v\n", err)
		return ExitFailure
	}
	return ExitOK
}

// envFault is the fault EnvFaultFile's content names, else EnvFault's.
func envFault() string {
	if name := os.Getenv(EnvFaultFile); name != "" {
		if b, err := os.ReadFile(name); err == nil && strings.TrimSpace(string(b)) != "" {
			return strings.TrimSpace(string(b))
		}
	}
	return os.Getenv(EnvFault)
}

func envFloat(key string) float64 {
	var v float64
	fmt.Sscan(os.Getenv(key), &v)
	return v
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}
