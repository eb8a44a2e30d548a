package upcmd

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/safetext"
)

// The states a step's line reports.
const (
	stateStart   = "start"
	stateDone    = "done"
	stateSkipped = "skipped"
	stateFailed  = "failed"
)

// Event is one NDJSON line of drama up --json: a step's start and end
// ("step"), its progress in bytes ("progress"), a line of a step's own
// ("info"), and the server once ready ("ready").
type Event struct {
	Event  string    `json:"event"`
	Time   time.Time `json:"time"`
	Step   string    `json:"step,omitempty"`
	State  string    `json:"state,omitempty"` // start, done, skipped or failed
	Detail string    `json:"detail,omitempty"`
	// Resume is the command line that goes on from here, on a failure.
	Resume  string  `json:"resume,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Done    int64   `json:"done,omitempty"`
	Total   int64   `json:"total,omitempty"`
	// The server, once ready.
	URL  string `json:"url,omitempty"`
	Page string `json:"page,omitempty"`
	Say  string `json:"say,omitempty"`
}

// reporter is drama up's one view of the run: a line per step as it
// starts and ends (done, skipped and why, or failed with the command that
// goes on), a byte count per long step (a pb bar on a terminal, a line
// every cmdutil.LineInterval otherwise), or with --json all of it as NDJSON
// on standard output.
type reporter struct {
	f     *cmdutil.Factory
	mu    sync.Mutex
	enc   *json.Encoder
	start map[string]time.Time
	now   func() time.Time
}

func newReporter(f *cmdutil.Factory) *reporter {
	r := &reporter{f: f, start: map[string]time.Time{}, now: time.Now}
	if f.Global.JSON {
		r.enc = json.NewEncoder(f.IO.Out)
	}
	return r
}

func (r *reporter) emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Time = r.now().UTC()
	_ = r.enc.Encode(e)
}

// step reports a step's state; the time a step took goes with its end.
func (r *reporter) step(name, state, detail, resume string) {
	t := r.now()
	var took time.Duration
	r.mu.Lock()
	if state == stateStart {
		r.start[name] = t
	} else if s, ok := r.start[name]; ok {
		took = t.Sub(s)
	}
	r.mu.Unlock()
	if r.enc != nil {
		r.emit(Event{Event: "step", Step: name, State: state, Detail: detail, Resume: resume, Seconds: took.Seconds()})
		return
	}
	if r.f.Global.Quiet && state != stateFailed {
		return
	}
	line := fmt.Sprintf("up: %-8s %s", name, state)
	if state == stateDone && took > 0 {
		line += " in " + took.Round(time.Millisecond).String()
	}
	if detail != "" {
		line += ": " + detail
	}
	if resume != "" {
		line += "\n  to go on: " + resume
	}
	fmt.Fprintln(r.f.IO.ErrOut, safetext.Lines(line))
}

// info is a line of a step's own (the engine build's steps).
func (r *reporter) info(name, detail string) {
	if r.enc != nil {
		r.emit(Event{Event: "info", Step: name, Detail: detail})
		return
	}
	r.f.Infof("up: %-8s %s", name, safetext.Escape(detail))
}

// progress returns the byte count of a long step.
func (r *reporter) progress(name string, total int64) cmdutil.Progress {
	if r.enc == nil {
		return r.f.NewProgress(name, total)
	}
	p := &jsonProgress{r: r, step: name, total: total}
	p.last = r.now()
	return p
}

// jsonProgress emits a progress event at most every cmdutil.LineInterval,
// and one at the end.
type jsonProgress struct {
	r           *reporter
	step        string
	mu          sync.Mutex
	done, total int64
	last        time.Time
	finished    bool
}

func (p *jsonProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if t := p.r.now(); !p.finished && t.Sub(p.last) >= cmdutil.LineInterval {
		p.last = t
		p.r.emit(Event{Event: "progress", Step: p.step, Done: p.done, Total: p.total})
	}
}

func (p *jsonProgress) Skip(n int64) { p.Add(n) }

func (p *jsonProgress) SetTotal(total int64) {
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
}

func (p *jsonProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.finished {
		p.finished = true
		p.r.emit(Event{Event: "progress", Step: p.step, Done: p.done, Total: p.total})
	}
}
