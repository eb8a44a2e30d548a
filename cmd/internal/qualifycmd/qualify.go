// Package qualifycmd implements `drama qualify`.
package qualifycmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drama-tts/drama/cmd/internal/benchrun"
	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/bench"
	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/qualify"
	"github.com/drama-tts/drama/internal/filehash"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/transcribe"
)

// Options are the inputs of `drama qualify`.
type Options struct {
	F              *cmdutil.Factory
	Engine         string // cuda or metal: which native binary and first-audio gate
	EngineBin      string
	PluginDir      string
	ServeArgs      []string
	PinsFile       string
	VariantSet     bool
	Accept         bool
	Check          bool
	Corpus         string
	Warmup, Passes int
	GateFirstAudio float64
	GateRTF        float64
	GateWER        float64 // percent: the word error rate at most this, with TranscribeURL
	TranscribeURL  string  // the transcription server that hears the bench's warm whole replies; "" none
	MemoryGiB      float64 // booked memory; 0: the pins' estimate x qualify.BookedFactor
	MemTolerance   float64 // GiB MemAvailable may stay below its baseline after the stop
	UpstreamCommit string
	References     string // a voice file whose references the e2e step sends inline
	Out            string
	ReadyTimeout   time.Duration
	Drama          string // the drama binary to start drama serve with; "" this one (tests)
}

// NewCmd returns `drama qualify`.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "qualify [-- SERVE-FLAGS]",
		Short: "Check that this host serves a variant correctly and in real time, and mark it qualified",
		Long: strings.TrimSpace(`
Run the qualification of a variant on this host, in three steps, and write
the qualification marker when every check passes and --accept-native-numerics
is given:

  assets  every pinned file of the variant by full sha256 (pins verify), and
          the engine binary against its record <root>/engine/engine.sha256
  e2e     drama serve started cold; a sentence whole, again warm
          (byte-identical) and streamed (the same samples); a 300-character
          paragraph whole and streamed (equal); each served voice; with
          --references FILE, the sentence with that voice file's references
          inline; an unknown voice refused with 400; after the stop, no
          process left
          and MemAvailable back within --mem-tolerance-gib of its level
          before the load
  bench   drama bench's schedule on the same server, with gates: every
          reply valid audio; warm streamed first audio p50 at most
          --gate-first-audio; warm RTF p50 under --gate-rtf for whole and
          streamed replies; the memory peak within the memory booked for the
          variant (--memory-gib; default 1.4 x the pins' estimate); with
          --transcribe-url, each warm whole reply transcribed and their word
          error rate at most --gate-wer percent (default 5)

Without --transcribe-url the replies' words are not checked: a build that
speaks well-formed noise in real time passes the other checks, and the
marker says "intelligibility not checked". --transcribe-url names an
OpenAI-compatible speech recognition server (/v1/audio/transcriptions:
whisper.cpp's server, faster-whisper, LocalAI); docs/bench.md says how the
words are compared and what the upstream figures are.

The marker, <root>/.drama/qualified-<variant>.json, is bound to this host,
the pins' sha256 and the engine binary's sha256: new pins, a rebuilt engine
or a changed record make it stale. The native engine is not bit-exact with
the reference implementation; --accept-native-numerics records that you
accept its output, and without it no marker is written. --check only reads
the marker and says whether it holds.

Arguments after -- go to drama serve (e.g. --admission off, --voices DIR).
The report of the bench step is written to --out.

When DRAMA_API_KEY is set, the drama serve started for the run inherits it
(and so requires a key) and every request of the run sends it as
"Authorization: Bearer KEY".`),
		Example: strings.TrimSpace(`
$ drama qualify --variant nvfp4 --accept-native-numerics
$ drama qualify --variant nvfp4 --transcribe-url http://127.0.0.1:8080 --accept-native-numerics
$ drama qualify --check --variant nvfp4
$ drama qualify --variant full --memory-gib 48 --accept-native-numerics -- --admission external`),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validate(cmd, args, opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	addFlags(cmd.Flags(), opts)
	return cmd
}

// validate checks the arguments and flags of `drama qualify` and sets
// the options they imply: the serve arguments after --, whether
// --variant was given, Metal's first-audio gate.
func validate(cmd *cobra.Command, args []string, opts *Options) error {
	if d := cmd.ArgsLenAtDash(); d < 0 && len(args) > 0 || d > 0 {
		return cmdutil.FlagErrorf("unexpected argument %q: arguments of drama serve go after --", args[0])
	}
	opts.ServeArgs = args
	opts.VariantSet = cmd.Flags().Changed("variant")
	if !cmd.Flags().Changed("gate-first-audio") && opts.Engine == "metal" {
		opts.GateFirstAudio = qualify.DefaultFirstAudioMetal
	}
	switch {
	case opts.Passes < 1 || opts.Warmup < 0:
		return cmdutil.FlagErrorf("--passes must be 1 or more and --warmup 0 or more")
	case opts.GateFirstAudio <= 0 || opts.GateRTF <= 0:
		return cmdutil.FlagErrorf("--gate-first-audio and --gate-rtf must be above 0")
	case opts.MemoryGiB < 0 || opts.MemTolerance < 0:
		return cmdutil.FlagErrorf("--memory-gib and --mem-tolerance-gib must be 0 or more")
	case opts.GateWER <= 0 || opts.GateWER > 100:
		return cmdutil.FlagErrorf("--gate-wer must be a percentage above 0 and at most 100, e.g. --gate-wer 5")
	case cmd.Flags().Changed("gate-wer") && opts.TranscribeURL == "":
		return cmdutil.FlagErrorf("--gate-wer needs --transcribe-url: the word error rate is measured on what a speech recognition server hears")
	}
	if opts.TranscribeURL != "" {
		if _, err := transcribe.Endpoint(opts.TranscribeURL); err != nil {
			return cmdutil.FlagErrorf("--transcribe-url: %v", err)
		}
	}
	return nil
}

// addFlags registers the flags of `drama qualify` into opts.
func addFlags(fl *pflag.FlagSet, opts *Options) {
	fl.StringVar(&opts.Engine, "engine", defaultEngine(), "engine plugin: cuda or metal (passed on to drama serve)")
	fl.StringVar(&opts.EngineBin, "engine-bin", "", "native engine binary (default $DRAMA_ENGINE_BIN, else <root>/engine/<binary>, else PATH); passed on to drama serve")
	fl.StringVar(&opts.PluginDir, "plugin-dir", "", "directory searched first for engine plugins (passed on to drama serve)")
	fl.StringVar(&opts.PinsFile, "pins", "", "pins file (default: the variant's pins.lock.json, else the built-in pins)")
	fl.BoolVar(&opts.Accept, "accept-native-numerics", false, "accept that the native engine is not bit-exact with the reference; needed to write the marker")
	fl.BoolVar(&opts.Check, "check", false, "only check the marker against this host, the pins and the engine record")
	fl.StringVar(&opts.Corpus, "corpus", "", "bench corpus file (default: the built-in "+bench.DefaultCorpusName+")")
	fl.IntVar(&opts.Warmup, "warmup", bench.DefaultWarmup, "bench warm-up passes")
	fl.IntVar(&opts.Passes, "passes", bench.DefaultPasses, "bench warm passes")
	fl.Float64Var(&opts.GateFirstAudio, "gate-first-audio", qualify.DefaultFirstAudio, "seconds: warm streamed first audio p50 at most this (0.55 with --engine metal)")
	fl.Float64Var(&opts.GateRTF, "gate-rtf", qualify.DefaultRTF, "warm real-time factor p50 under this, whole and streamed")
	fl.StringVar(&opts.TranscribeURL, "transcribe-url", "", "OpenAI-compatible speech recognition server (/v1/audio/transcriptions) that transcribes each warm whole reply of the bench, for the word error rate gate")
	fl.Float64Var(&opts.GateWER, "gate-wer", 100*qualify.DefaultWER, "percent: with --transcribe-url, the warm whole replies' word error rate at most this")
	fl.Float64Var(&opts.MemoryGiB, "memory-gib", 0, "memory booked for the variant (0: 1.4 x the pins' memory_gib)")
	fl.Float64Var(&opts.MemTolerance, "mem-tolerance-gib", float64(qualify.DefaultMemoryTolerance)/(1<<30), "how far MemAvailable may stay below its level before the load once drama serve stopped")
	fl.StringVar(&opts.References, "references", "", "a voice file whose references an e2e step sends inline with a request (CUDA)")
	fl.StringVar(&opts.UpstreamCommit, "upstream-commit", "", "the engine checkout's commit the binary was built from, recorded in the marker")
	fl.StringVarP(&opts.Out, "out", "o", "", "directory for the bench report (default <root>/.drama/qualify-<variant>)")
	fl.DurationVar(&opts.ReadyTimeout, "ready-timeout", 15*time.Minute, "deadline for drama serve to become ready")
}

func defaultEngine() string {
	if runtime.GOOS == "darwin" {
		return "metal"
	}
	return "cuda"
}

// step is one line of the qualification's outcome.
type step struct {
	Step string `json:"step"` // assets, e2e or bench
	qualify.Result
}

// Outcome is what `drama qualify --json` prints.
type Outcome struct {
	Variant string `json:"variant"`
	// Passed says every check passed; Qualified that the marker was
	// written too (or, with --check, that it holds).
	Passed    bool            `json:"passed"`
	Qualified bool            `json:"qualified"`
	Steps     []step          `json:"steps,omitempty"`
	Marker    string          `json:"marker,omitempty"` // its path, when written
	Report    string          `json:"report,omitempty"`
	Status    *qualify.Status `json:"status,omitempty"` // with --check
	// Intelligibility is the word error rate measured, or that none was.
	Intelligibility *qualify.Intelligibility `json:"intelligibility,omitempty"`
	figures         qualify.Figures          // the bench's gated figures, for the marker
}

func run(ctx context.Context, opts *Options) error {
	f := opts.F
	want, p, err := cmdutil.CurrentBinding(f, opts.PinsFile, opts.VariantSet)
	if err != nil {
		return err
	}
	root, _ := f.Root()
	if opts.Check {
		return check(opts, root, want)
	}
	out := &Outcome{Variant: p.Variant}
	add := func(name string, rs ...qualify.Result) {
		for _, r := range rs {
			out.Steps = append(out.Steps, step{name, r})
			mark := "ok  "
			if !r.Pass {
				mark = "FAIL"
			}
			f.Infof("%s %s %s: %s", mark, name, r.Name, r.Detail)
		}
	}
	f.Infof("qualify %s: assets", p.Variant)
	assets, bin := checkAssets(ctx, opts, root, p, want)
	add("assets", assets...)
	if qualify.AllPass(assets) {
		if err := serveAndMeasure(ctx, opts, p, bin, add, out); err != nil {
			return err
		}
	}
	out.Passed = allPass(out.Steps)
	if out.Passed && opts.Accept {
		m := &qualify.Marker{Qualified: true, Variant: p.Variant, Host: want.Host, GPU: bench.GPUName(), PinsSHA256: want.PinsSHA256,
			NativeSHA256: want.NativeSHA256, UpstreamCommit: opts.UpstreamCommit, CheckpointRevision: p.Revision,
			Numerics:    qualify.Numerics{Accepted: true, Statement: qualify.NumericsStatement, AcceptedAt: time.Now().UTC()},
			QualifiedAt: time.Now().UTC(), DramaVersion: f.Version, Bench: out.figures}
		if out.Intelligibility != nil {
			m.Intelligibility = *out.Intelligibility
		}
		if err := qualify.Write(root, m); err != nil {
			return err
		}
		out.Marker, out.Qualified = qualify.Path(root, p.Variant), true
	}
	if err := printOutcome(f, out); err != nil {
		return err
	}
	switch {
	case !out.Passed:
		return fmt.Errorf("%s is not qualified on this host: %d of %d checks failed (see above)", p.Variant, failed(out.Steps), len(out.Steps))
	case !opts.Accept:
		return fmt.Errorf("every check passed, but no marker was written: the native engine is not bit-exact with the reference implementation; run again with --accept-native-numerics to accept its output for this host")
	}
	words := qualify.NotChecked
	if out.Intelligibility != nil {
		words = out.Intelligibility.Short()
	}
	f.Infof("%s is qualified on this host (%s): wrote %s", p.Variant, words, out.Marker)
	return nil
}

func allPass(steps []step) bool {
	for _, s := range steps {
		if !s.Pass {
			return false
		}
	}
	return len(steps) > 0
}

func failed(steps []step) int {
	n := 0
	for _, s := range steps {
		if !s.Pass {
			n++
		}
	}
	return n
}

func check(opts *Options, root string, want qualify.Binding) error {
	f := opts.F
	st := qualify.Check(root, want)
	if !st.OK() {
		// The advice is the command's: the qualification that writes a
		// good marker, with the user's own flags.
		again := " again"
		if st.Reason == qualify.NoMarker {
			again = ""
		}
		st.Reason += ": run " + qualifyCommand(opts, want.Variant) + again
	}
	if f.Global.JSON {
		if err := cmdutil.WriteJSON(f.IO.Out, &Outcome{Variant: want.Variant, Passed: st.OK(), Qualified: st.OK(), Status: &st}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(f.IO.Out, "%s\t%s\t%s\n", safetext.Escape(want.Variant), safetext.Escape(string(st.State)), safetext.Escape(st.Reason))
	}
	if !st.OK() {
		return cmdutil.SilentError(1)
	}
	return nil
}

// qualifyCommand is the drama qualify command line that qualifies variant and
// writes its marker, with the user's own pins and engine flags.
func qualifyCommand(opts *Options, variant string) string {
	engine := ""
	if opts.Engine != defaultEngine() {
		engine = opts.Engine
	}
	return opts.F.Suggest("qualify", "--variant", variant, "--pins", opts.PinsFile, "--engine", engine, "--engine-bin", opts.EngineBin,
		"--plugin-dir", opts.PluginDir, "--accept-native-numerics", "true")
}

// checkAssets verifies every pinned file by sha256 and the engine binary
// against its record; it returns the engine binary's path.
func checkAssets(ctx context.Context, opts *Options, root string, p *pins.Pins, want qualify.Binding) ([]qualify.Result, string) {
	var out []qualify.Result
	files := qualify.Result{Name: "pinned files"}
	f := opts.F
	if !p.Complete() {
		size := p.TotalBytes()
		if size == 0 {
			size = p.ExpectedBytes
		}
		fetch := f.Suggest("fetch", "--variant", p.Variant, "--pins", opts.PinsFile)
		if size > 0 {
			fetch += " (" + cmdutil.HumanBytes(size) + ")"
		}
		if _, err := os.Stat(filepath.Join(root, p.Variant, pins.LockFileName)); errors.Is(err, os.ErrNotExist) {
			files.Detail = fmt.Sprintf("%s is not installed in %s: run %s first: it writes the complete pins", p.Variant, root, fetch)
		} else {
			files.Detail = fmt.Sprintf("the pins of %s carry no sha256 for its files: run %s first: it writes the complete pins", p.Variant, fetch)
		}
	} else {
		bar := f.NewProgress("verify "+p.Variant, p.TotalBytes())
		rep, err := pins.Verify(ctx, filepath.Join(root, p.Variant), p, pins.VerifyOptions{Level: pins.LevelSHA256, NoRecord: true, Progress: bar.Add})
		bar.Finish()
		switch {
		case err != nil:
			files.Detail = cmdutil.PinsAdvice(f, err, p, "").Error()
		case !rep.OK():
			var bad []string
			for _, r := range rep.Files {
				if r.Status != pins.StatusOK {
					bad = append(bad, r.Path+" "+string(r.Status))
				}
			}
			files.Detail = fmt.Sprintf("%d of %d files do not match their pins: %s: run `%s` for details",
				len(bad), len(rep.Files), strings.Join(bad[:min(3, len(bad))], ", "), f.Suggest("verify", "--level", "sha256", "--variant", p.Variant, "--pins", opts.PinsFile))
		default:
			files.Pass = true
			files.Detail = fmt.Sprintf("all %d files (%s) match their sha256", len(rep.Files), cmdutil.HumanBytes(rep.HashedBytes))
		}
	}
	out = append(out, files)

	engineRes := qualify.Result{Name: "engine binary"}
	bin, err := cmdutil.EngineBinary(opts.F, opts.EngineBin, opts.Engine, root)
	record := build.RootSums(root)
	switch {
	case err != nil:
		engineRes.Detail = err.Error()
	case bin == "":
		engineRes.Detail = fmt.Sprintf("no native engine binary %s in %s or on the PATH: install it there or pass --engine-bin", cmdutil.EngineBinaries[opts.Engine], filepath.Dir(record))
	case want.NativeSHA256 == "":
		engineRes.Detail = fmt.Sprintf("no record of the engine binary: write it with `%s`", cmdutil.RecordEngineCommand(bin, root))
	default:
		sum, _, herr := filehash.SHA256(ctx, bin, nil)
		switch {
		case herr != nil:
			engineRes.Detail = fmt.Sprintf("%s: %v", bin, herr)
		case sum != want.NativeSHA256:
			engineRes.Detail = fmt.Sprintf("%s: sha256 want %s (%s), got %s: rebuild the engine, or record this binary with `%s`", bin, want.NativeSHA256, record, sum, cmdutil.RecordEngineCommand(bin, root))
		default:
			engineRes.Pass = true
			engineRes.Detail = fmt.Sprintf("%s matches its record (sha256 %.12s)", bin, sum)
		}
	}
	return append(out, engineRes), bin
}

// serveAndMeasure starts drama serve cold, runs the end-to-end steps and
// the bench on it, stops it and checks it is gone.
func serveAndMeasure(ctx context.Context, opts *Options, p *pins.Pins, bin string, add func(string, ...qualify.Result), out *Outcome) error {
	f := opts.F
	root, _ := f.Root()
	corpus, err := benchrun.LoadCorpus(opts.Corpus)
	if err != nil {
		return err
	}
	e2e, err := e2eConfig(opts)
	if err != nil {
		return err
	}
	dir, err := reportDir(opts, root, p.Variant)
	if err != nil {
		return err
	}

	f.Infof("qualify %s: e2e (cold start of drama serve)", p.Variant)
	base := bench.ReadBaseline(true)
	// Memory is sampled from before the load to the end of the bench.
	sampler := bench.StartSampler(base, 0, time.Now())
	served, err := benchrun.StartServe(ctx, f, benchrun.ServeOptions{Drama: opts.Drama, Args: serveArgs(opts, bin), ReadyTimeout: opts.ReadyTimeout, Started: sampler.Follow})
	if err != nil {
		sampler.Stop()
		add("e2e", qualify.Result{Name: "cold load", Detail: err.Error()})
		return nil
	}
	defer served.Stop()
	add("e2e", qualify.Result{Name: "cold load", Pass: true, Value: served.Ready.Seconds(), Detail: fmt.Sprintf("ready %.2f s after start", served.Ready.Seconds())})
	client := benchrun.Client(f, served.URL)
	pids := map[int]bool{}
	addTree(pids, served.PID)
	e2e.Client = client
	steps, err := qualify.E2E(ctx, e2e)
	add("e2e", steps...)
	if err != nil {
		add("e2e", qualify.Result{Name: "server", Detail: benchrun.AuthAdvice(f, err).Error() + "\n" + served.Tail()})
	}

	var rep *bench.Report
	if err != nil {
		sampler.Stop()
	} else {
		rep = runBench(ctx, opts, p.Variant, client, corpus, sampler, served, add)
	}
	addTree(pids, served.PID)
	if rep != nil {
		rep.ReadySeconds = served.Ready.Seconds()
		for _, pid := range rep.Memory.PIDs {
			pids[pid] = true
		}
	}
	add("e2e", stopServe(served, pids, base, opts.MemTolerance))

	if rep == nil || errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return gateBench(opts, p, rep, dir, add, out)
}

// e2eConfig is the end-to-end steps' configuration but for the client:
// with --references, the references of that voice file to send inline.
func e2eConfig(opts *Options) (qualify.E2EConfig, error) {
	e2e := qualify.E2EConfig{}
	if opts.References == "" {
		return e2e, nil
	}
	v, err := voices.ReadFile(opts.References, nil)
	if err != nil {
		return e2e, fmt.Errorf("--references: %w", err)
	}
	for _, r := range v.References {
		e2e.References = append(e2e.References, qualify.Reference{Text: r.Text, VQCodes: r.Codes})
	}
	e2e.ReferencesFrom = filepath.Base(opts.References)
	return e2e, nil
}

// reportDir makes the directory for the bench report, --out or
// <root>/.drama/qualify-<variant>, and returns its absolute path.
func reportDir(opts *Options, root, variant string) (string, error) {
	dir := opts.Out
	if dir == "" {
		dir = filepath.Join(root, pins.StateDirName, "qualify-"+variant)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--out %s: %w", dir, err)
	}
	return dir, nil
}

// serveArgs are the arguments of the drama serve the run starts: the
// engine flags passed on, then the user's arguments after --.
func serveArgs(opts *Options, bin string) []string {
	args := []string{"--engine", opts.Engine, "--engine-bin", bin}
	if opts.PluginDir != "" {
		args = append(args, "--plugin-dir", opts.PluginDir)
	}
	if opts.References != "" {
		args = append(args, "--allow-inline-references") // the e2e step sends them
	}
	return append(args, opts.ServeArgs...)
}

// addTree adds pid and the processes it started to pids.
func addTree(pids map[int]bool, pid int) {
	for _, p := range bench.ProcessTree(pid) {
		pids[p] = true
	}
}

// runBench runs drama bench's schedule on the served engine; a failure is
// added as the bench step's result, beside the server's last lines.
func runBench(ctx context.Context, opts *Options, variant string, client *bench.Client, corpus *bench.Corpus, sampler *bench.Sampler, served *benchrun.Served, add func(string, ...qualify.Result)) *bench.Report {
	f := opts.F
	f.Infof("qualify %s: bench (%d texts, %d warm-up and %d warm passes)", variant, len(corpus.Texts), opts.Warmup, opts.Passes)
	warm := opts.Warmup
	if warm == 0 {
		warm = -1
	}
	cfg := bench.Config{Client: client, Corpus: corpus, Warmup: warm, Passes: opts.Passes, Sampler: sampler}
	if opts.TranscribeURL != "" {
		cfg.Transcriber = &transcribe.Client{URL: opts.TranscribeURL}
	}
	bar := benchrun.ProgressFor(f, &cfg)
	rep, err := bench.Run(ctx, cfg)
	bar.Finish()
	if err != nil {
		add("bench", qualify.Result{Name: "run", Detail: benchrun.AuthAdvice(f, err).Error() + "\n" + served.Tail()})
	}
	return rep
}

// stopServe stops drama serve and checks that none of pids is left and
// that MemAvailable came back within tolerance GiB of its baseline.
func stopServe(served *benchrun.Served, pids map[int]bool, base bench.Baseline, tolerance float64) qualify.Result {
	stopErr := served.Stop()
	list := make([]int, 0, len(pids))
	for pid := range pids {
		list = append(list, pid)
	}
	waitGone(list, 5*time.Second)
	stopped := qualify.CheckStopped(list, base.MemAvailable, int64(tolerance*(1<<30)))
	if stopErr != nil && stopped.Pass {
		stopped.Pass, stopped.Detail = false, stopErr.Error()
	}
	return stopped
}

// gateBench holds the bench's report to the gates, writes it into dir and
// keeps its figures for the marker.
func gateBench(opts *Options, p *pins.Pins, rep *bench.Report, dir string, add func(string, ...qualify.Result), out *Outcome) error {
	f := opts.F
	booked := int64(opts.MemoryGiB * (1 << 30))
	if booked == 0 {
		booked = int64(p.MemoryGiB * qualify.BookedFactor * (1 << 30))
	}
	gates := qualify.Gates{FirstAudio: opts.GateFirstAudio, RTF: opts.GateRTF, BookedBytes: booked, WER: opts.GateWER / 100}
	add("bench", gates.Evaluate(rep)...)
	in := qualify.IntelligibilityOf(rep, gates.WER)
	out.Intelligibility = &in
	if !in.Checked {
		f.Infof("%s: the replies' words were not checked; give --transcribe-url to gate on their word error rate", qualify.NotChecked)
	}
	if err := benchrun.WriteReports(rep, dir); err != nil {
		return err
	}
	out.Report = filepath.Join(dir, "report.json")
	out.figures = qualify.FiguresOf(rep, booked)
	out.figures.Report = out.Report
	return nil
}

// waitGone waits up to d for the processes to exit.
func waitGone(pids []int, d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		if qualify.CheckStopped(pids, -1, 0).Pass || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func printOutcome(f *cmdutil.Factory, out *Outcome) error {
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, out)
	}
	t := cmdutil.NewTable(f.IO, "step", "check", "result", "detail")
	for _, s := range out.Steps {
		res := "pass"
		if !s.Pass {
			res = "FAIL"
		}
		t.AddRow(s.Step, s.Name, res, strings.ReplaceAll(s.Detail, "\n", " | "))
	}
	return t.Render()
}
