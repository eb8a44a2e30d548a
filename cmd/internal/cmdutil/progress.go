package cmdutil

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/cheggaaa/pb/v3"

	"github.com/drama-tts/drama/internal/safetext"
)

// Progress reports the progress of one long operation counted in bytes.
// Implementations are safe for concurrent use.
type Progress interface {
	// Add records n more bytes done.
	Add(n int64)
	// SetTotal changes the expected total.
	SetTotal(total int64)
	// Skip records n more bytes done that this run did not move (found
	// on disk, resumed): counted in the total done, not in the rate.
	Skip(n int64)
	// Finish ends the report; later calls do nothing.
	Finish()
}

// LineInterval is the least time between two progress lines when standard
// error is not a terminal.
const LineInterval = 10 * time.Second

// NewProgress returns the progress report that fits the streams and flags: a
// pb/v3 bar when standard error is a terminal and neither --quiet nor --json
// is set; otherwise, unless quiet or JSON, a line at most every LineInterval;
// else nothing.
func (f *Factory) NewProgress(label string, total int64) Progress {
	return f.newProgress(label, total, true)
}

// NewCountProgress is NewProgress for a count of things rather than bytes.
func (f *Factory) NewCountProgress(label string, total int64) Progress {
	return f.newProgress(label, total, false)
}

func (f *Factory) newProgress(label string, total int64, bytes bool) Progress {
	switch {
	case f.Global.Quiet || f.Global.JSON:
		return nopProgress{}
	case f.IO.IsStderrTTY():
		bar := NewBar(f.IO.ErrOut, label, total, bytes)
		bar.Start()
		return &barProgress{bar: bar}
	default:
		p := newLineProgress(f.IO.ErrOut, label, total, time.Now)
		if !bytes {
			p.unit = func(n int64) string { return fmt.Sprint(n) }
		}
		return p
	}
}

// NewBar returns drama's pb/v3 bar, not started: BarTemplate, the label
// (escaped: it may be a file name from the Hub) as prefix, counting bytes
// or things. Commands that show several
// bars at once (a pb.Pool) make each with it.
func NewBar(w io.Writer, label string, total int64, bytes bool) *pb.ProgressBar {
	registerElements()
	bar := pb.New64(total).Set(pb.Bytes, bytes).Set("prefix", safetext.Escape(label)+" ").SetWriter(w)
	bar.Set(barBytes, bytes).Set(barStart, time.Now())
	bar.SetTemplate(BarTemplate)
	return bar
}

type nopProgress struct{}

func (nopProgress) Add(int64)      {}
func (nopProgress) SetTotal(int64) {}
func (nopProgress) Skip(int64)     {}
func (nopProgress) Finish()        {}

type barProgress struct {
	bar  *pb.ProgressBar
	once sync.Once
}

func (b *barProgress) Add(n int64)          { b.bar.Add64(n) }
func (b *barProgress) SetTotal(total int64) { b.bar.SetTotal(total) }
func (b *barProgress) Skip(n int64)         { SkipBar(b.bar, n) }
func (b *barProgress) Finish()              { b.once.Do(func() { FinishBar(b.bar) }) }

// lineProgress prints "label: done/total (pct) rate" at most once per
// LineInterval, and once at Finish.
type lineProgress struct {
	w     io.Writer
	label string
	unit  func(int64) string // formats a count; HumanBytes by default
	now   func() time.Time
	start time.Time

	done    atomic.Int64
	skipped atomic.Int64
	total   atomic.Int64

	mu       sync.Mutex
	last     time.Time
	finished bool
}

func newLineProgress(w io.Writer, label string, total int64, now func() time.Time) *lineProgress {
	p := &lineProgress{w: w, label: label, now: now, unit: HumanBytes}
	p.start = now()
	p.last = p.start
	p.total.Store(total)
	return p
}

func (p *lineProgress) Add(n int64) {
	p.done.Add(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.now(); !p.finished && t.Sub(p.last) >= LineInterval {
		p.last = t
		p.print(t)
	}
}

func (p *lineProgress) SetTotal(total int64) { p.total.Store(total) }

func (p *lineProgress) Skip(n int64) {
	p.skipped.Add(n)
	p.done.Add(n)
}

func (p *lineProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	p.print(p.now())
}

func (p *lineProgress) print(t time.Time) {
	done, total := p.done.Load(), p.total.Load()
	rate := ""
	if secs := t.Sub(p.start).Seconds(); secs > 0 {
		rate = fmt.Sprintf(" %s/s", p.unit(int64(float64(done-p.skipped.Load())/secs)))
	}
	pct := ""
	if total > 0 {
		pct = fmt.Sprintf(" (%.1f%%)", 100*float64(done)/float64(total))
	}
	fmt.Fprintf(p.w, "%s: %s of %s%s%s\n", p.label, p.unit(done), p.unit(total), pct, rate)
}
