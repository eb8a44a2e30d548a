package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drama-tts/drama/engine"
)

// Opener starts (or starts again) the engine plugin and returns it with a
// function that closes it.
type Opener func(ctx context.Context) (engine.Engine, func(), error)

// Supervisor keeps one engine serving: it starts it, reports its state for
// GET /ready and GET /health, and restarts it after a failure, with a
// doubling wait between attempts up to MaxBackoff, for as long as it runs. It
// implements StatusSource and FailureReporter, and Engine returns an
// engine.Engine that always reaches the current one.
type Supervisor struct {
	open    Opener
	req     engine.StartRequest
	onEvent func(engine.LifecycleEvent)

	// MaxRestarts is how many restarts in a row may fail before the engine
	// is reported failed (phase "failed", GET /health 503) (default 5);
	// attempts go on after that. Backoff is the first wait, doubled each
	// time up to MaxBackoff (defaults 1 s and 30 s).
	MaxRestarts int
	Backoff     time.Duration
	MaxBackoff  time.Duration
	// OnRestart is called after each successful restart (metrics).
	OnRestart func()
	// Prepare, when set, runs before every start of the engine and may
	// change what it is started with (a voice catalog rewritten, say).
	Prepare func(ctx context.Context, eng engine.Engine, req engine.StartRequest) (engine.StartRequest, error)

	mu         sync.Mutex
	eng        engine.Engine
	closeEng   func()
	status     Status
	restarting bool
	stopped    bool
	done       chan struct{} // closed by Stop
}

// NewSupervisor returns a supervisor that starts engines with req and passes
// each lifecycle event to onEvent (may be nil).
func NewSupervisor(open Opener, req engine.StartRequest, onEvent func(engine.LifecycleEvent)) *Supervisor {
	return &Supervisor{open: open, req: req, onEvent: onEvent, MaxRestarts: 5, Backoff: time.Second, MaxBackoff: 30 * time.Second,
		status: Status{Phase: "starting"}, done: make(chan struct{})}
}

// Start opens the plugin and starts the engine, returning when it is ready
// or has failed.
func (s *Supervisor) Start(ctx context.Context) error {
	eng, closeEng, err := s.open(ctx)
	if err != nil {
		s.setStatus(Status{Phase: "failed", Message: err.Error()})
		return err
	}
	s.mu.Lock()
	s.eng, s.closeEng = eng, closeEng
	s.mu.Unlock()
	if err := s.startEngine(ctx, eng); err != nil {
		s.setStatus(Status{Phase: "failed", Message: err.Error()})
		return err
	}
	s.setStatus(Status{Phase: "ready", Ready: true})
	return nil
}

// startEngine starts eng with the request Prepare makes of s.req.
func (s *Supervisor) startEngine(ctx context.Context, eng engine.Engine) error {
	req := s.req
	if s.Prepare != nil {
		var err error
		if req, err = s.Prepare(ctx, eng, req); err != nil {
			return err
		}
	}
	return eng.Start(ctx, req, s.event)
}

// Restart starts the running engine again now (Prepare first) and returns
// when it serves again or has failed; a failure hands over to the restart
// loop of EngineFailed. A catalog engine reads a newly published voice
// this way. It answers not ready while another restart runs.
func (s *Supervisor) Restart(ctx context.Context) error {
	s.mu.Lock()
	if s.restarting || s.stopped || s.eng == nil {
		s.mu.Unlock()
		return engine.NotReadyf("the engine is being restarted or stopped: retry shortly")
	}
	s.restarting = true
	eng := s.eng
	s.status = Status{Phase: "restarting", Message: "loading a new voice", Restarts: s.status.Restarts}
	s.mu.Unlock()
	err := s.startEngine(ctx, eng)
	s.mu.Lock()
	s.restarting = false
	s.mu.Unlock()
	if err != nil {
		s.EngineFailed(err)
		return err
	}
	s.setStatus(Status{Phase: "ready", Ready: true})
	return nil
}

func (s *Supervisor) event(ev engine.LifecycleEvent) {
	if ev.Phase != engine.PhaseReady {
		s.mu.Lock()
		s.status.Phase, s.status.Progress, s.status.Message, s.status.Ready = ev.Phase.String(), max(ev.Progress, 0), ev.Message, false
		s.mu.Unlock()
	}
	if s.onEvent != nil {
		s.onEvent(ev)
	}
}

func (s *Supervisor) setStatus(st Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Restarts = s.status.Restarts
	s.status = st
}

// Status reports the engine's state.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// EngineFailed starts a restart in the background unless one is running.
func (s *Supervisor) EngineFailed(cause error) {
	s.mu.Lock()
	if s.restarting || s.stopped {
		s.mu.Unlock()
		return
	}
	s.restarting = true
	s.status = Status{Phase: "restarting", Message: cause.Error(), Restarts: s.status.Restarts}
	s.mu.Unlock()
	go s.restart()
}

// restart stops what is left of the engine and starts it again, reopening
// the plugin when the old one cannot start, with doubling waits between
// attempts, until it serves again or the supervisor stops. Past
// MaxRestarts failed attempts the phase is "failed", so that GET /health
// and GET /ready take the host out of a load balancer, and the attempts go
// on at MaxBackoff.
func (s *Supervisor) restart() {
	defer func() { s.mu.Lock(); s.restarting = false; s.mu.Unlock() }()
	if s.healthy() {
		s.setStatus(Status{Phase: "ready", Ready: true})
		return
	}
	wait := s.Backoff
	for attempt := 1; ; attempt++ {
		if s.isStopped() {
			return
		}
		err := s.restartOnce()
		if err == nil {
			s.mu.Lock()
			s.status = Status{Phase: "ready", Ready: true, Restarts: s.status.Restarts + 1}
			s.mu.Unlock()
			if s.OnRestart != nil {
				s.OnRestart()
			}
			return
		}
		phase := "restarting"
		if attempt >= s.MaxRestarts {
			phase = "failed"
		}
		s.setStatus(Status{Phase: phase, Message: fmt.Sprintf("restart attempt %d failed: %v; the next in %v", attempt, err, wait)})
		select {
		case <-s.done:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, max(s.MaxBackoff, s.Backoff))
	}
}

// healthy reports whether the current engine says it is ready.
func (s *Supervisor) healthy() bool {
	s.mu.Lock()
	eng := s.eng
	s.mu.Unlock()
	if eng == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := eng.Health(ctx)
	return err == nil && h.Ready
}

// Watch polls the engine's health every interval until ctx ends, and
// restarts an engine that stopped being ready without a request noticing.
func (s *Supervisor) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if st := s.Status(); st.Ready && !s.healthy() {
			s.EngineFailed(errors.New("the engine stopped answering its health check"))
		}
	}
}

func (s *Supervisor) restartOnce() error {
	ctx := context.Background()
	s.mu.Lock()
	eng := s.eng
	s.mu.Unlock()
	if eng != nil {
		_, _ = eng.Stop(ctx, engine.StopRequest{})
		if err := s.startEngine(ctx, eng); err == nil {
			return nil
		}
	}
	// the plugin itself may be gone: open a new one
	s.closeCurrent()
	newEng, closeEng, err := s.open(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.stopped {
		// Stop ran while the plugin was opening and has closed what it
		// knew of: this one would be left running.
		s.mu.Unlock()
		closeEng()
		return errors.New("the server is stopping")
	}
	s.eng, s.closeEng = newEng, closeEng
	s.mu.Unlock()
	return s.startEngine(ctx, newEng)
}

func (s *Supervisor) closeCurrent() {
	s.mu.Lock()
	closeEng := s.closeEng
	s.eng, s.closeEng = nil, nil
	s.mu.Unlock()
	if closeEng != nil {
		closeEng()
	}
}

func (s *Supervisor) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Stop stops the engine and closes the plugin; no restart follows.
func (s *Supervisor) Stop(ctx context.Context) {
	s.mu.Lock()
	if !s.stopped {
		close(s.done)
	}
	s.stopped = true
	eng := s.eng
	s.status = Status{Phase: "stopped", Restarts: s.status.Restarts}
	s.mu.Unlock()
	if eng != nil {
		_, _ = eng.Stop(ctx, engine.StopRequest{})
	}
	s.closeCurrent()
}

// Engine returns an engine that forwards to the current one, answering
// not-ready while there is none.
func (s *Supervisor) Engine() engine.Engine { return supervised{s} }

var errNoEngine = engine.NotReadyf("the engine is not running")

type supervised struct{ s *Supervisor }

func (p supervised) current() (engine.Engine, error) {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	if p.s.eng == nil {
		return nil, errNoEngine
	}
	return p.s.eng, nil
}

func (p supervised) Describe(ctx context.Context) (engine.Description, error) {
	e, err := p.current()
	if err != nil {
		return engine.Description{}, err
	}
	return e.Describe(ctx)
}

func (p supervised) Start(context.Context, engine.StartRequest, func(engine.LifecycleEvent)) error {
	return errors.New("the supervisor starts the engine")
}

func (p supervised) Health(ctx context.Context) (engine.Health, error) {
	e, err := p.current()
	if err != nil {
		return engine.Health{}, err
	}
	return e.Health(ctx)
}

func (p supervised) Stop(ctx context.Context, req engine.StopRequest) (engine.StopResult, error) {
	e, err := p.current()
	if err != nil {
		return engine.StopResult{}, nil
	}
	return e.Stop(ctx, req)
}

func (p supervised) Voices(ctx context.Context) ([]engine.Voice, error) {
	e, err := p.current()
	if err != nil {
		return nil, err
	}
	return e.Voices(ctx)
}

func (p supervised) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	e, err := p.current()
	if err != nil {
		return nil, err
	}
	return e.Synthesize(ctx, req)
}

func (p supervised) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	e, err := p.current()
	if err != nil {
		return nil, err
	}
	return e.Encode(ctx, req, progress)
}
