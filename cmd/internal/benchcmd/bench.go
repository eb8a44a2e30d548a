// Package benchcmd implements `drama bench` and `drama bench compare`.
package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/benchrun"
	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine/bench"
	"github.com/drama-tts/drama/voices/transcribe"
)

// DefaultServer is drama serve's default address.
const DefaultServer = "http://" + serverec.DefaultAddr

// Options are the inputs of `drama bench`.
type Options struct {
	F            *cmdutil.Factory
	Server       string
	Start        bool
	ServeArgs    []string // after --: arguments of the drama serve started with --start
	Corpus       string
	Voices       []string
	Warmup       int
	Passes       int
	Out          string
	ReadyTimeout time.Duration
	// TranscribeURL is the transcription server that hears each warm
	// whole reply; "" for none.
	TranscribeURL string
	// Drama is the drama binary --start runs; "" means this one (tests).
	Drama string
}

// NewCmd returns `drama bench` with its compare subcommand.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "bench [-- SERVE-FLAGS]",
		Short: "Measure first audio, real-time factor and memory of drama serve",
		Long: strings.TrimSpace(`
Speak a corpus through drama serve and measure each reply: the time to the
first audio of a streamed reply, the total time, the seconds of audio, the
real-time factor (total time over audio time), the finish reason and the
bytes. The schedule: one cold request, then for whole replies and then for
streamed ones on the same server process, --warmup passes over the corpus
and --passes warm passes. The warm passes give p50, p95 and p99 by voice and
by text length. Memory is sampled every 0.5 s: MemAvailable's drop, the
server's cgroup peak, nvidia-smi's used memory and the server's processes'
resident memory, where the host has them.

The server is --server, else $DRAMA_ADDR, else the drama serve recorded as
running on this root, else ` + DefaultServer + `. With --start, drama bench starts
drama serve itself on a free loopback port for the run (arguments after --
go to it) and measures the memory from before the load.

The built-in corpus (` + bench.DefaultCorpusName + `, 24 texts) or --corpus FILE: one text a
line, # starts a comment. Writes report.json and report.html (plots, readable
offline) into --out, and prints the warm figures.

With --transcribe-url, an OpenAI-compatible speech recognition server
(/v1/audio/transcriptions: whisper.cpp's server, faster-whisper, LocalAI),
each warm whole reply is transcribed and the word error rate of what was
heard against the text is reported over all replies, per voice and per
text: errors (words substituted, missed or added) over the text's words,
both normalised alike (case, punctuation and point tags such as [laughs]
removed, numbers as written). docs/bench.md says how to read it.

` + cmdutil.APIKeyHelp + `
The key needs scope speak. With --start the drama serve started inherits
DRAMA_API_KEY, so it requires the key the run sends.`),
		Example: strings.TrimSpace(`
$ drama bench --out bench-a
$ drama bench --server http://127.0.0.1:8793 --passes 1 --out bench-b
$ drama bench --start --passes 1 -- --engine-bin bin/tensorfold-standin --admission off
$ drama bench --transcribe-url http://127.0.0.1:8080 --out bench-c
$ drama bench compare bench-a/report.json bench-b/report.json`),
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
	fl := cmd.Flags()
	fl.StringVar(&opts.Server, "server", "", "drama serve's URL (default $DRAMA_ADDR, else the one running on this root, else "+DefaultServer+")")
	fl.BoolVar(&opts.Start, "start", false, "start drama serve for the run (its arguments after --)")
	fl.StringVar(&opts.Corpus, "corpus", "", "corpus file, one text a line (default: the built-in "+bench.DefaultCorpusName+")")
	fl.StringArrayVar(&opts.Voices, "voice", nil, "voice to speak the corpus in; repeatable (default: the served default)")
	fl.IntVar(&opts.Warmup, "warmup", bench.DefaultWarmup, "warm-up passes, recorded but not summarised")
	fl.IntVar(&opts.Passes, "passes", bench.DefaultPasses, "warm passes summarised")
	fl.StringVarP(&opts.Out, "out", "o", ".", "directory for report.json and report.html")
	fl.DurationVar(&opts.ReadyTimeout, "ready-timeout", 15*time.Minute, "with --start: deadline for drama serve to become ready")
	fl.StringVar(&opts.TranscribeURL, "transcribe-url", "", "OpenAI-compatible speech recognition server (/v1/audio/transcriptions) that transcribes each warm whole reply, for the word error rate")
	cmd.AddCommand(NewCmdCompare(f, nil))
	return cmd
}

// validate checks the arguments and flags of `drama bench` and keeps the
// arguments after -- for the drama serve that --start starts.
func validate(cmd *cobra.Command, args []string, opts *Options) error {
	dash := cmd.ArgsLenAtDash()
	if dash < 0 && len(args) > 0 || dash > 0 {
		return cmdutil.FlagErrorf("unexpected argument %q: arguments of drama serve go after --, with --start", args[0])
	}
	opts.ServeArgs = args
	if len(opts.ServeArgs) > 0 && !opts.Start {
		return cmdutil.FlagErrorf("arguments after -- are for the drama serve that --start starts: add --start")
	}
	if opts.Start && cmd.Flags().Changed("server") {
		return cmdutil.FlagErrorf("--start and --server exclude each other: --start runs its own drama serve")
	}
	if opts.Passes < 1 || opts.Warmup < 0 {
		return cmdutil.FlagErrorf("--passes must be 1 or more and --warmup 0 or more")
	}
	if opts.TranscribeURL != "" {
		if _, err := transcribe.Endpoint(opts.TranscribeURL); err != nil {
			return cmdutil.FlagErrorf("--transcribe-url: %v", err)
		}
	}
	return nil
}

// ResolveServer returns the server to measure: flag, $DRAMA_ADDR, the
// drama serve recorded as running on the root for the variant, else the
// default; and that server's pid when a record names it (0 otherwise).
func ResolveServer(f *cmdutil.Factory, flag string) (string, int) {
	if flag != "" {
		return withScheme(flag), 0
	}
	if v := f.Getenv("DRAMA_ADDR"); v != "" {
		return withScheme(v), 0
	}
	if root, err := f.Root(); err == nil {
		recs, _ := serverec.List(root)
		for i := len(recs) - 1; i >= 0; i-- {
			if recs[i].Variant == f.Global.Variant || recs[i].Variant == "" {
				return withScheme(recs[i].Addr), recs[i].PID
			}
		}
	}
	return DefaultServer, 0
}

func withScheme(s string) string {
	if strings.Contains(s, "://") {
		return strings.TrimRight(s, "/")
	}
	return "http://" + strings.TrimRight(s, "/")
}

func run(ctx context.Context, opts *Options) error {
	f := opts.F
	corpus, err := benchrun.LoadCorpus(opts.Corpus)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", opts.Out, err)
	}
	cfg := bench.Config{Corpus: corpus, Voices: opts.Voices, Warmup: opts.Warmup, Passes: opts.Passes}
	if opts.TranscribeURL != "" {
		cfg.Transcriber = &transcribe.Client{URL: opts.TranscribeURL}
	}
	if opts.Warmup == 0 {
		cfg.Warmup = -1
	}
	var served *benchrun.Served
	if opts.Start {
		// Sampling starts before drama serve does, so the load is seen.
		sampler := bench.StartSampler(bench.ReadBaseline(true), 0, time.Now())
		f.Infof("starting drama serve for the run")
		served, err = benchrun.StartServe(ctx, f, benchrun.ServeOptions{Drama: opts.Drama, Args: opts.ServeArgs, ReadyTimeout: opts.ReadyTimeout, Started: sampler.Follow})
		if err != nil {
			sampler.Stop()
			return cmdutil.EngineError(err)
		}
		defer served.Stop()
		f.Infof("drama serve ready at %s after %.2f s", served.URL, served.Ready.Seconds())
		cfg.Client, cfg.ServerPID, cfg.Sampler = benchrun.Client(f, served.URL), served.PID, sampler
	} else {
		url, pid := ResolveServer(f, opts.Server)
		cfg.Client, cfg.ServerPID = benchrun.Client(f, url), pid
	}
	bar := benchrun.ProgressFor(f, &cfg)
	rep, err := bench.Run(ctx, cfg)
	bar.Finish()
	switch {
	case ctx.Err() != nil:
		return ctx.Err() // interrupted: drama serve, if started here, is stopped on the way out
	case errors.As(err, new(*bench.AuthError)):
		return benchrun.AuthAdvice(f, err)
	case errors.As(err, new(*transcribe.Error)):
		return err // --transcribe-url's server, not drama serve: the error says so
	case err != nil && served != nil:
		return cmdutil.EngineError(fmt.Errorf("%w\n%s", err, served.Tail()))
	case err != nil:
		return fmt.Errorf("%w (is drama serve running at %s? start one with `drama serve`, or pass --start)", err, cfg.Client.URL)
	}
	if served != nil {
		rep.ReadySeconds = served.Ready.Seconds()
	}
	if err := benchrun.WriteReports(rep, opts.Out); err != nil {
		return err
	}
	f.Infof("wrote %s and %s", filepath.Join(opts.Out, "report.json"), filepath.Join(opts.Out, "report.html"))
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rep)
	}
	if err := PrintSummary(f, rep); err != nil {
		return err
	}
	if rep.Summary.Invalid > 0 {
		return fmt.Errorf("%d of %d replies were not valid audio (see requests in %s)", rep.Summary.Invalid, len(rep.Requests), filepath.Join(opts.Out, "report.json"))
	}
	return nil
}

// PrintSummary prints the warm figures as a table and the memory peaks.
func PrintSummary(f *cmdutil.Factory, rep *bench.Report) error {
	t := cmdutil.NewTable(f.IO, "mode", "group", "figure", "n", "p50", "p95", "p99")
	for _, r := range rep.SummaryRows() {
		t.AddRow(r.Mode, r.Group, r.Figure, fmt.Sprint(r.N), fmt.Sprintf("%.3f", r.P50), fmt.Sprintf("%.3f", r.P95), fmt.Sprintf("%.3f", r.P99))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := PrintWER(f, rep); err != nil {
		return err
	}
	pk := rep.Memory.Peak
	from := "the start of the run"
	if rep.Memory.Baseline.BeforeLoad {
		from = "before the load"
	}
	f.Infof("memory peak: MemAvailable drop %s (from %s), cgroup %s, GPU used %s, processes' RSS %s",
		gib(pk.AvailableDrop), from, gib(pk.CgroupPeak), gib(pk.GPUUsed), gib(pk.RSS))
	return nil
}

// PrintWER prints the word error rates of a run that had a transcriber as
// a table: all warm whole replies, per voice, per text.
func PrintWER(f *cmdutil.Factory, rep *bench.Report) error {
	w := rep.Summary.WER
	if w == nil {
		return nil
	}
	f.Infof("word error rate of the warm whole replies as %s heard them:", w.Transcriber)
	t := cmdutil.NewTable(f.IO, "group", "replies", "words", "errors", "wer")
	for _, r := range rep.WERRows() {
		t.AddRow(r.Group, fmt.Sprint(r.Replies), fmt.Sprint(r.Words), fmt.Sprint(r.Errors), bench.Percent(r.Rate))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if w.Untranscribed > 0 {
		f.Warnf("%d warm whole replies were not transcribed (the server answered an error; see transcribe_error in report.json): they are left out", w.Untranscribed)
	}
	return nil
}

func gib(b int64) string {
	if b < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}
