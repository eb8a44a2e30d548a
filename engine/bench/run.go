package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/drama-tts/drama/voices/transcribe"
)

// Format is the format field of a report.
const Format = "drama-bench/1"

// Default schedule of a run.
const (
	DefaultWarmup = 2
	DefaultPasses = 3
)

// Config says what a run speaks and where.
type Config struct {
	Client *Client
	Corpus *Corpus
	// Voices to speak the corpus in; empty or "" means the served default.
	Voices []string
	// Warmup passes are recorded but not summarised; Passes are the warm
	// passes summarised. Negative Warmup means none; 0 values take the
	// defaults.
	Warmup, Passes int
	// ServerPID is the server's process, whose tree the memory sampler
	// follows; 0 when unknown.
	ServerPID int
	// Baseline is the memory before the load (see ReadBaseline); nil
	// means: read it when the run starts.
	Baseline *Baseline
	// Sampler, if set, is a sampler the caller started (before starting
	// the server, to see its load); Run stops it at the end and ignores
	// ServerPID and Baseline. Nil: Run samples while it runs.
	Sampler *Sampler
	// Progress, if set, is called after each request.
	Progress func(done, total int, r *Request)
	// Transcriber, if set, transcribes each warm whole reply, and the
	// report gives the word error rate of what it heard (Summary.WER).
	Transcriber *transcribe.Client
}

// schedule returns cfg's warm-up and summarised passes, the defaults
// applied.
func (cfg *Config) schedule() (warmup, passes int) {
	warmup, passes = cfg.Warmup, cfg.Passes
	if warmup == 0 {
		warmup = DefaultWarmup
	}
	if passes <= 0 {
		passes = DefaultPasses
	}
	return max(warmup, 0), passes
}

// Requests returns how many requests a run of cfg makes: one cold, then
// every text in every voice, whole and streamed, in each pass.
func (cfg *Config) Requests() int {
	warmup, passes := cfg.schedule()
	texts := 0
	if cfg.Corpus != nil {
		texts = len(cfg.Corpus.Texts)
	}
	return 1 + 2*(warmup+passes)*max(1, len(cfg.Voices))*texts
}

// Run runs the schedule against a ready server and returns the report.
// A request that fails at the transport level (the server went away) ends
// the run with an error; a refused or broken reply is recorded.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Client == nil || cfg.Corpus == nil || len(cfg.Corpus.Texts) == 0 {
		return nil, errors.New("bench: a run needs a server and a corpus")
	}
	warmup, passes := cfg.schedule()
	voices := cfg.Voices
	if len(voices) == 0 {
		voices = []string{""}
	}
	start := time.Now()
	rep := &Report{Format: Format, Started: start.UTC(), Server: cfg.Client.URL, Model: cfg.Client.Model(ctx), Host: ThisHost(),
		Corpus: *cfg.Corpus, Voices: voices, Schedule: Schedule{Warmup: warmup, Passes: passes, Modes: []string{Whole, Streamed}}}
	if cfg.Transcriber != nil {
		rep.Transcriber = TranscriberName(cfg.Transcriber.URL)
	}
	sampler := cfg.Sampler
	if sampler == nil {
		base := ReadBaseline(false)
		if cfg.Baseline != nil {
			base = *cfg.Baseline
		}
		sampler = StartSampler(base, cfg.ServerPID, start)
	}
	total := cfg.Requests()
	done := 0
	speak := func(pass string, index int, t Text, voice, mode string) error {
		began := time.Since(start).Seconds()
		res, err := cfg.Client.Speak(ctx, t.Text, voice, mode)
		if err != nil {
			return err
		}
		r := res.Request
		r.Pass, r.Index, r.TextID, r.Class, r.Voice, r.Started = pass, index, t.ID, t.Class, voice, began
		if cfg.Transcriber != nil && pass == "warm" && mode == Whole && r.Valid() {
			if err := transcribeReply(ctx, cfg.Transcriber, &r, t.Text, res.PCM); err != nil {
				return err
			}
		}
		rep.Requests = append(rep.Requests, r)
		done++
		if cfg.Progress != nil {
			cfg.Progress(done, total, &rep.Requests[len(rep.Requests)-1])
		}
		return ctx.Err()
	}
	err := speak("cold", 0, cfg.Corpus.Texts[0], voices[0], Whole)
	for _, mode := range rep.Schedule.Modes {
		for p := 1; p <= warmup+passes && err == nil; p++ {
			pass, index := "warmup", p
			if p > warmup {
				pass, index = "warm", p-warmup
			}
			for _, v := range voices {
				for _, t := range cfg.Corpus.Texts {
					if err = speak(pass, index, t, v, mode); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
		}
	}
	rep.Memory = sampler.Stop()
	rep.Duration = time.Since(start).Seconds()
	if err != nil {
		return rep, err
	}
	rep.Summarize()
	return rep, nil
}

// Host describes the machine a report was made on.
type Host struct {
	Name string `json:"name"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
	CPUs int    `json:"cpus"`
	GPU  string `json:"gpu,omitempty"`
}

// ThisHost describes this machine.
func ThisHost() Host {
	name, _ := os.Hostname()
	return Host{Name: name, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GPU: GPUName()}
}

// GPUName names this machine's GPUs: nvidia-smi's names, on macOS the
// chip's; "" when there is none to name.
func GPUName() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if bin := nvidiaSMI(); bin != "" {
		out, err := exec.CommandContext(ctx, bin, "--query-gpu=name", "--format=csv,noheader").Output()
		if err == nil {
			return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; ")), " ")
		}
	}
	if runtime.GOOS == "darwin" {
		out, err := exec.CommandContext(ctx, "sysctl", "-n", "machdep.cpu.brand_string").Output()
		if err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

// Schedule is the shape of a run.
type Schedule struct {
	Warmup int      `json:"warmup_passes"`
	Passes int      `json:"warm_passes"`
	Modes  []string `json:"modes"`
}

// Report is the outcome of a run, as report.json holds it.
type Report struct {
	Format   string    `json:"format"`
	Started  time.Time `json:"started"`
	Duration float64   `json:"duration_s"`
	Server   string    `json:"server"`
	Model    string    `json:"model,omitempty"`
	Host     Host      `json:"host"`
	// ReadySeconds is the time from starting drama serve to ready, when
	// the run started it; 0 otherwise.
	ReadySeconds float64 `json:"ready_s,omitempty"`
	// Transcriber is the transcription server that heard the warm whole
	// replies; "" when the run had none.
	Transcriber string    `json:"transcriber,omitempty"`
	Corpus      Corpus    `json:"corpus"`
	Voices      []string  `json:"voices"`
	Schedule    Schedule  `json:"schedule"`
	Requests    []Request `json:"requests"`
	Summary     Summary   `json:"summary"`
	Memory      Memory    `json:"memory"`
}

// Summary holds the warm figures per mode.
type Summary struct {
	// Invalid counts the replies (of any pass) that were not valid audio.
	Invalid int `json:"invalid"`
	// Modes holds Whole and Streamed.
	Modes map[string]*ModeSummary `json:"modes"`
	// WER is the word error rate of the warm whole replies; nil when the
	// run had no transcriber.
	WER *WERSummary `json:"wer,omitempty"`
}

// ModeSummary holds one mode's warm figures: all requests, by voice and
// by length class.
type ModeSummary struct {
	All     Figures             `json:"all"`
	ByVoice map[string]*Figures `json:"by_voice"`
	ByClass map[string]*Figures `json:"by_class"`
}

// Figures are the distributions of one set of requests; nil where there
// were none.
type Figures struct {
	FirstAudio *Dist `json:"first_audio_s,omitempty"`
	Total      *Dist `json:"total_s,omitempty"`
	RTF        *Dist `json:"rtf,omitempty"`
}

// VoiceLabel is how a voice appears in summaries: "default" for the
// served default.
func VoiceLabel(v string) string {
	if v == "" {
		return "default"
	}
	return v
}

// Summarize computes the summary from the requests.
func (r *Report) Summarize() {
	r.Summary = Summary{Modes: map[string]*ModeSummary{}}
	for _, q := range r.Requests {
		if !q.Valid() {
			r.Summary.Invalid++
		}
	}
	for _, mode := range r.Schedule.Modes {
		var all []Request
		for _, q := range r.Requests {
			if q.Pass == "warm" && q.Mode == mode && q.Valid() {
				all = append(all, q)
			}
		}
		ms := &ModeSummary{All: figuresOf(all, mode, r.Schedule.Passes), ByVoice: map[string]*Figures{}, ByClass: map[string]*Figures{}}
		for _, v := range r.Voices {
			f := figuresOf(filter(all, func(q Request) bool { return q.Voice == v }), mode, r.Schedule.Passes)
			ms.ByVoice[VoiceLabel(v)] = &f
		}
		for _, c := range []string{Short, Medium, Long} {
			sel := filter(all, func(q Request) bool { return q.Class == c })
			if len(sel) > 0 {
				f := figuresOf(sel, mode, r.Schedule.Passes)
				ms.ByClass[c] = &f
			}
		}
		r.Summary.Modes[mode] = ms
	}
	r.summarizeWER()
}

func filter(rs []Request, keep func(Request) bool) []Request {
	var out []Request
	for _, q := range rs {
		if keep(q) {
			out = append(out, q)
		}
	}
	return out
}

func figuresOf(rs []Request, mode string, passes int) Figures {
	pick := func(get func(Request) float64) *Dist {
		xs := make([]float64, 0, len(rs))
		byPass := make([][]float64, passes)
		for _, q := range rs {
			xs = append(xs, get(q))
			if q.Index >= 1 && q.Index <= passes {
				byPass[q.Index-1] = append(byPass[q.Index-1], get(q))
			}
		}
		return distOf(xs, byPass)
	}
	f := Figures{Total: pick(func(q Request) float64 { return q.Total }), RTF: pick(func(q Request) float64 { return q.RTF })}
	if mode == Streamed {
		f.FirstAudio = pick(func(q Request) float64 { return q.FirstAudio })
	}
	return f
}

// Mode returns the summary of a mode, or an empty one.
func (r *Report) Mode(mode string) *ModeSummary {
	if m := r.Summary.Modes[mode]; m != nil {
		return m
	}
	return &ModeSummary{}
}

// Check reports whether a report read from a file is one this package
// wrote.
func (r *Report) Check(name string) error {
	if r.Format != Format {
		return fmt.Errorf("bench: %s: format %q: want %q (a report.json from drama bench)", name, r.Format, Format)
	}
	return nil
}
