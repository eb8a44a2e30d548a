package cmdutil

import (
	"fmt"
	"io"
	"sync"
	"time"

	pb "github.com/cheggaaa/pb/v3"
)

// drama's bars show their own rate and time instead of pb's: "12.5 MiB/s"
// (never "MiB p/s"), counted over the bytes this run moved (bytes found on
// disk or resumed are left out, see SkipBar), and frozen once the bar is
// finished (see FinishBar), so a finished row in a pool of bars keeps its
// figures instead of showing a rate that falls as time passes.
const (
	barStart    = "drama.start"    // time.Time: when the bar began counting
	barSkipped  = "drama.skipped"  // int64: counted but not moved by this run
	barFinished = "drama.finished" // time.Time: when the bar finished
	barBytes    = "drama.bytes"    // bool: counts bytes
)

// BarTemplate is the template of drama's bars: label, counters, bar,
// percentage, rate, and the time left (or taken, once finished).
const BarTemplate pb.ProgressBarTemplate = `{{with string . "prefix"}}{{.}} {{end}}{{counters . }} {{bar . }} {{percent . }} {{rate . }} {{timeleft . }}{{with string . "suffix"}} {{.}}{{end}}`

var registerOnce sync.Once

func registerElements() {
	registerOnce.Do(func() {
		pb.RegisterElement("rate", pb.ElementFunc(elementRate), false)
		pb.RegisterElement("timeleft", pb.ElementFunc(elementTimeLeft), false)
	})
}

// barRate is the bar's rate over this run's moved units and the time it
// counted them over.
func barRate(state *pb.State) (rate float64, took time.Duration, ok bool) {
	start, _ := state.Get(barStart).(time.Time)
	if start.IsZero() {
		start = state.StartTime()
	}
	end := state.Time()
	if t, done := state.Get(barFinished).(time.Time); done {
		end = t
	}
	skipped, _ := state.Get(barSkipped).(int64)
	took = end.Sub(start)
	moved := state.Value() - skipped
	if took <= 0 || moved <= 0 {
		return 0, took, false
	}
	return float64(moved) / took.Seconds(), took, true
}

func elementRate(state *pb.State, _ ...string) string {
	rate, _, ok := barRate(state)
	bytes, _ := state.Get(barBytes).(bool)
	switch {
	case !ok && bytes:
		return "-- MiB/s"
	case !ok:
		return "--/s"
	case bytes:
		return HumanBytes(int64(rate)) + "/s"
	}
	return fmt.Sprintf("%.0f/s", rate)
}

func elementTimeLeft(state *pb.State, _ ...string) string {
	rate, took, ok := barRate(state)
	if _, done := state.Get(barFinished).(time.Time); done || state.IsFinished() {
		return "in " + took.Round(100*time.Millisecond).String()
	}
	if !ok || state.Total() <= 0 {
		return "ETA ?"
	}
	left := time.Duration(float64(state.Total()-state.Value())/rate) * time.Second
	return "ETA " + left.Round(time.Second).String()
}

// SkipBar adds n units the bar counts as done that this run did not move
// (a file already present, bytes of a resumed download): they show in the
// counters and the percentage but not in the rate.
func SkipBar(bar *pb.ProgressBar, n int64) {
	skipped, _ := bar.Get(barSkipped).(int64)
	bar.Set(barSkipped, skipped+n)
	bar.Add64(n)
}

// FinishBar freezes the bar's rate and time, then finishes it.
func FinishBar(bar *pb.ProgressBar) {
	if _, done := bar.Get(barFinished).(time.Time); !done {
		bar.Set(barFinished, time.Now())
	}
	bar.Finish()
}

// StartPool starts a pb pool that draws bars made by NewBar to w, one row
// each; a bar given to the pool's Add later joins it. With NewBar it is the
// one place where drama configures pb: commands that show several bars at
// once start their pool here.
func StartPool(w io.Writer, bars ...*pb.ProgressBar) (*pb.Pool, error) {
	pool := pb.NewPool(bars...)
	pool.Output = w
	if err := pool.Start(); err != nil {
		return nil, err
	}
	return pool, nil
}
