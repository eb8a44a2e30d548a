package fetchcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	pb "github.com/cheggaaa/pb/v3"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// reporter turns fetch events into output: NDJSON on stdout with --json, a
// pb pool (a bar per active file and a total) on a terminal, else a line
// per file event and a total line every cmdutil.LineInterval.
type reporter struct {
	f     *cmdutil.Factory
	mu    sync.Mutex
	enc   *json.Encoder
	pool  *pb.Pool
	total *pb.ProgressBar
	bars  map[string]*pb.ProgressBar
	// resumed holds, per file, the bytes a plan found on disk: its bar
	// starts there, and they count in no rate.
	resumed map[string]int64
	lines   cmdutil.Progress
	once    sync.Once
	// retries holds, per file, when its last retry line was printed and
	// how many retries were not printed since.
	retries map[string]*retryLine
	now     func() time.Time
}

type retryLine struct {
	last   time.Time
	hidden int
}

func newReporter(f *cmdutil.Factory, p *pins.Pins) *reporter {
	r := &reporter{f: f, bars: map[string]*pb.ProgressBar{}, resumed: map[string]int64{}, retries: map[string]*retryLine{}, now: time.Now}
	switch {
	case f.Global.JSON:
		r.enc = json.NewEncoder(f.IO.Out)
	case f.Global.Quiet:
	case f.IO.IsStderrTTY():
		r.total = cmdutil.NewBar(f.IO.ErrOut, "total", p.TotalBytes(), true)
		if pool, err := cmdutil.StartPool(f.IO.ErrOut, r.total); err == nil {
			r.pool = pool
		}
	default:
		r.lines = f.NewProgress("fetch", p.TotalBytes())
	}
	return r
}

func (r *reporter) progress(path string, n int64) {
	switch {
	case r.pool != nil:
		r.total.Add64(n)
		r.mu.Lock()
		bar := r.bars[path]
		r.mu.Unlock()
		if bar != nil {
			bar.Add64(n)
		}
	case r.lines != nil:
		r.lines.Add(n)
	}
}

// jsonEvent is one NDJSON line.
type jsonEvent struct {
	hub.Event
	Time        time.Time `json:"time"`
	VerifyLagMS float64   `json:"verify_lag_ms,omitempty"`
}

func (r *reporter) event(e hub.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.enc != nil:
		_ = r.enc.Encode(jsonEvent{Event: e, Time: time.Now().UTC(), VerifyLagMS: float64(e.VerifyLag) / 1e6})
	case r.pool != nil:
		r.poolEvent(e)
	case r.lines != nil:
		r.lineEvent(e)
	}
}

func (r *reporter) poolEvent(e hub.Event) {
	switch e.Kind {
	case hub.EventPresent, hub.EventShared:
		cmdutil.SkipBar(r.total, e.Size)
	case hub.EventPlan:
		cmdutil.SkipBar(r.total, e.Bytes)
		r.resumed[e.Path] = e.Bytes
	case hub.EventStart:
		bar := cmdutil.NewBar(r.f.IO.ErrOut, e.Path, e.Size, true)
		if n := r.resumed[e.Path]; n > 0 {
			cmdutil.SkipBar(bar, n)
		}
		r.bars[e.Path] = bar
		r.pool.Add(bar)
	case hub.EventVerified:
		if bar := r.bars[e.Path]; bar != nil {
			bar.SetCurrent(e.Size)
			cmdutil.FinishBar(bar)
		}
	}
}

// lineEvent prints a line per file event; a file name or error in it is
// escaped (safetext.Lines), as it may come from the Hub.
func (r *reporter) lineEvent(e hub.Event) {
	w := lineWriter{r.f.IO.ErrOut}
	switch e.Kind {
	case hub.EventPresent, hub.EventShared:
		r.lines.Skip(e.Size)
		how := ""
		if e.Copied {
			how = ", copied"
		}
		fmt.Fprintf(w, "%s: %s (%s%s)\n", e.Kind, e.Path, cmdutil.HumanBytes(e.Size), how)
	case hub.EventPlan:
		r.lines.Skip(e.Bytes)
		if e.Bytes > 0 {
			fmt.Fprintf(w, "resume: %s (%s of %s on disk)\n", e.Path, cmdutil.HumanBytes(e.Bytes), cmdutil.HumanBytes(e.Size))
		}
	case hub.EventStart, hub.EventVerified:
		fmt.Fprintf(w, "%s: %s (%s)\n", e.Kind, e.Path, cmdutil.HumanBytes(e.Size))
	case hub.EventRetry:
		r.retryLine(e)
	case hub.EventRestart:
		fmt.Fprintf(w, "%s: %s: %s\n", e.Kind, e.Path, e.Error)
	case hub.EventWorkers:
		fmt.Fprintf(w, "streams: now %d\n", e.Workers)
	}
}

// retryLine prints a file's first retry, then at most one line per
// cmdutil.LineInterval with the count of those not printed.
func (r *reporter) retryLine(e hub.Event) {
	rl := r.retries[e.Path]
	if rl == nil {
		rl = &retryLine{}
		r.retries[e.Path] = rl
	}
	t := r.now()
	if !rl.last.IsZero() && t.Sub(rl.last) < cmdutil.LineInterval {
		rl.hidden++
		return
	}
	more := ""
	if rl.hidden > 0 {
		more = fmt.Sprintf(" (and %d more retries since the last line)", rl.hidden)
	}
	fmt.Fprintf(lineWriter{r.f.IO.ErrOut}, "retry: %s: %s%s\n", e.Path, e.Error, more)
	rl.last, rl.hidden = t, 0
}

// lineWriter writes whole lines to w with their control characters
// escaped (safetext.Lines), the line feeds between them kept.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(l.w, safetext.Lines(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (r *reporter) close() {
	r.once.Do(func() {
		if r.pool != nil {
			cmdutil.FinishBar(r.total)
			for _, b := range r.bars {
				cmdutil.FinishBar(b)
			}
			_ = r.pool.Stop()
		}
		if r.lines != nil {
			r.lines.Finish()
		}
	})
}
