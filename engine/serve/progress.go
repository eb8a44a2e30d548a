package serve

import (
	"log/slog"
	"sync"

	"github.com/drama-tts/drama/engine"
)

// StartLog logs an engine's lifecycle events as they arrive, each once: a
// line per phase and per loading step. While the first start runs, an exited event is not logged: the start's
// error, printed when drama serve ends, says the same.
type StartLog struct {
	log     *slog.Logger
	mu      sync.Mutex
	last    engine.LifecycleEvent
	started bool
}

// NewStartLog returns the log of an engine's lifecycle events to log.
func NewStartLog(log *slog.Logger) *StartLog { return &StartLog{log: log} }

// Event logs ev unless it repeats the last event.
func (p *StartLog) Event(ev engine.LifecycleEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Phase == p.last.Phase && ev.Message == p.last.Message {
		return
	}
	p.last = ev
	attrs := []any{"phase", ev.Phase.String()}
	if ev.PID > 0 {
		attrs = append(attrs, "pid", ev.PID)
	}
	if ev.Phase == engine.PhaseLoading && ev.Progress >= 0 {
		attrs = append(attrs, "progress", int(ev.Progress*100+0.5))
	}
	msg := ev.Message
	if msg == "" {
		msg = ev.Phase.String()
	}
	if ev.Phase == engine.PhaseExited {
		if !p.started {
			return
		}
		if ev.ExitCode != 0 {
			attrs = append(attrs, "exit_code", ev.ExitCode)
		}
		p.log.Warn(msg, attrs...)
		return
	}
	p.log.Info(msg, attrs...)
}

// Ready marks the first start done: later exits are logged.
func (p *StartLog) Ready() {
	p.mu.Lock()
	p.started = true
	p.mu.Unlock()
}
