package servecmd

import (
	"fmt"
	"sync"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
)

// startProgress shows the engine's start: a bar for loading (in thousandths)
// and a line per phase.
type startProgress struct {
	f     *cmdutil.Factory
	mu    sync.Mutex
	bar   cmdutil.Progress
	done  int64
	phase engine.Phase
}

func newStartProgress(f *cmdutil.Factory) *startProgress { return &startProgress{f: f} }

func (p *startProgress) event(ev engine.LifecycleEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Phase != p.phase {
		p.phase = ev.Phase
		p.f.Infof("engine: %s%s", ev.Phase, suffix(ev.Message))
	}
	if ev.Phase != engine.PhaseLoading || ev.Progress < 0 {
		return
	}
	if p.bar == nil {
		p.bar = p.f.NewCountProgress("loading (per mille)", 1000)
	}
	if n := int64(ev.Progress * 1000); n > p.done {
		p.bar.Add(n - p.done)
		p.done = n
	}
}

func (p *startProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
	}
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return fmt.Sprintf(": %s", msg)
}
