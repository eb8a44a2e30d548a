// Package supervise keeps one engine serving for as long as drama serve
// runs: it opens the plugin and starts the engine, polls its health,
// restarts it after a failure with a doubling wait between attempts, starts
// it again on request (a catalog engine reading a newly published voice),
// unloads it after KeepAlive without a request and loads it again for the
// next one, and reports its state in words fit for a client (the engine's
// output and local paths go to the log, never into Status). Every wait and
// every call into the engine runs under the supervisor's own context,
// which Stop cancels. Restarts and keep-alive: docs/serve.md.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/drama-tts/drama/engine"
)

// Opener starts (or starts again) the engine plugin and returns it with a
// function that closes it.
type Opener func(ctx context.Context) (engine.Engine, func(), error)

// Status is the engine's state as the supervisor reports it (GET /ready
// and GET /health show it). Message is short and names no local file but
// by its base name; the detail is in the log.
type Status struct {
	Phase    Phase   `json:"phase"`              // e.g. preflight, loading, ready, restarting, failed
	Progress float64 `json:"progress,omitempty"` // 0..1 while loading
	Message  string  `json:"message,omitempty"`
	Ready    bool    `json:"ready"`
	// Loaded is whether the engine is up and holds the model; false while
	// it starts, loads, is unloaded for idleness, restarts or has failed.
	Loaded bool `json:"loaded"`
	// Restarts counts the restarts after a failure that brought the engine
	// back, since the supervisor started; drama serve's metrics read their
	// restart figures from it alone.
	Restarts int `json:"restarts"`
}

// Phase is where a supervised engine is: the supervisor's own phases
// below, or an engine's lifecycle phase while it starts (preflight,
// spawned, loading; engine.Phase's words).
type Phase string

// The supervisor's phases.
const (
	PhaseStarting   Phase = "starting"   // the first start has not begun
	PhaseLoading    Phase = "loading"    // loading on demand after an unload
	PhaseReady      Phase = "ready"      // loaded and serving
	PhaseRestarting Phase = "restarting" // restarting after a failure, or to load a voice
	PhaseFailed     Phase = "failed"     // did not start, or past its restarts
	PhaseUnloading  Phase = "unloading"  // unloading for idleness
	PhaseUnloaded   Phase = "unloaded"   // unloaded for idleness: a request loads it
	PhaseStopped    Phase = "stopped"    // stopped for good
	PhaseStopping   Phase = "stopping"   // the server drains (GET /ready)
)

// State is the engine's state in one word, as drama status reports it.
type State string

// The states of State.
const (
	StateLoading  State = "loading"  // starting, loading (at start or on demand) or restarting
	StateReady    State = "ready"    // loaded and serving
	StateUnloaded State = "unloaded" // stopped (or being stopped) after KeepAlive without a request; the next request loads it
	StateFailed   State = "failed"   // MaxRestarts restarts in a row failed (attempts go on)
	StateStopped  State = "stopped"  // Stop has run
)

// UnloadAtOnce, as KeepAlive, unloads the engine as soon as no request uses
// it.
const UnloadAtOnce time.Duration = -1

// Defaults of a Supervisor's restart policy.
const (
	DefaultMaxRestarts = 5
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = 30 * time.Second
	// healthTimeout bounds one health check.
	healthTimeout = 5 * time.Second
)

// ErrStopped is the cause of the supervisor's context once Stop has run.
var ErrStopped = errors.New("supervise: the supervisor is stopping")

// Supervisor keeps one engine serving: it starts it, reports its state, and
// restarts it after a failure, with a doubling wait between attempts up to
// MaxBackoff, for as long as it runs. EngineFailed and Restart let a caller
// report a failure or ask for a restart; Engine returns an engine.Engine
// that always reaches the current one.
type Supervisor struct {
	open    Opener
	req     engine.StartRequest
	onEvent func(engine.LifecycleEvent)

	// MaxRestarts is how many restarts in a row may fail before the engine
	// is reported failed (phase "failed") (default 5); attempts go on
	// after that. Backoff is the first wait, doubled each time up to
	// MaxBackoff (defaults 1 s and 30 s).
	MaxRestarts int
	Backoff     time.Duration
	MaxBackoff  time.Duration
	// Prepare, when set, runs before every start of the engine and may
	// change what it is started with (a voice catalog rewritten, say).
	Prepare func(ctx context.Context, eng engine.Engine, req engine.StartRequest) (engine.StartRequest, error)
	// Logger receives what Status leaves out: the engine's errors in full,
	// with its last output. Nil discards.
	Logger *slog.Logger
	// KeepAlive is how long the engine stays loaded with no request before
	// it is unloaded: 0 (the zero value) never unloads it; UnloadAtOnce
	// unloads it as soon as the last request ends. Set it before Start.
	KeepAlive time.Duration

	ctx    context.Context // ended by Stop
	cancel context.CancelCauseFunc
	loops  sync.WaitGroup // the restart in the background, if any

	mu sync.Mutex
	st state // read and changed through view and update alone
}

// state is what a supervisor knows of its engine: one value, guarded by
// the supervisor's mu, read whole by view and changed by update, so that
// every lock is released in the function that took it.
type state struct {
	eng        engine.Engine
	closeEng   func()
	status     Status
	restarting bool
	why        string // why the restart under way runs, for a Restart refused meanwhile
	stopped    bool

	// keep-alive: the engine is unloaded once inUse is 0 and KeepAlive has
	// passed since lastUse.
	inUse    int
	lastUse  time.Time
	idle     *time.Timer // fires idleUnload; nil until first armed
	unloaded bool        // stopped for idleness: the next use loads it
	shift    *transition // the load, unload or restart asked for under way, if any
	voices   []engine.Voice

	// calls is how many calls into the engine (a synthesis until its
	// stream is closed, a voice list) run now; a Restart waits for them
	// to end, and callsEnded, when set, is closed when they have.
	calls      int
	callsEnded chan struct{}

	starts uint64 // times the engine became ready (see Starts)
}

// view returns a copy of the state.
func (s *Supervisor) view() state {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// update changes the state through f, under mu; f takes no lock and
// waits for nothing.
func (s *Supervisor) update(f func(st *state)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.st)
}

// transition is a load on demand, an unload or a restart asked for under
// way; done is closed when it ends, and err then says why a load or the
// restart failed.
type transition struct {
	load bool
	done chan struct{}
	err  error
}

// New returns a supervisor that starts engines with req and passes each
// lifecycle event to onEvent (may be nil).
func New(open Opener, req engine.StartRequest, onEvent func(engine.LifecycleEvent)) *Supervisor {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Supervisor{open: open, req: req, onEvent: onEvent, MaxRestarts: DefaultMaxRestarts, Backoff: DefaultBackoff,
		MaxBackoff: DefaultMaxBackoff, st: state{status: Status{Phase: PhaseStarting}}, ctx: ctx, cancel: cancel}
}

// bound returns ctx, ended also when the supervisor stops.
func (s *Supervisor) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.ctx, func() { cancel(ErrStopped) })
	return ctx, func() { stop(); cancel(nil) }
}

func (s *Supervisor) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// logFailure logs err in full, with the engine's last output.
func (s *Supervisor) logFailure(msg string, err error) {
	attrs := []any{"err", err}
	var ee *engine.Error
	if errors.As(err, &ee) && ee.LogTail != "" {
		attrs = append(attrs, "engine_output", ee.LogTail)
	}
	s.log().Error(msg, attrs...)
}

// Start opens the plugin and starts the engine, returning when it is ready
// or has failed (the error in full is the caller's to report; Status gets
// its short cause). Stop ends it early.
func (s *Supervisor) Start(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	eng, closeEng, err := s.open(ctx)
	if err != nil {
		s.setStatus(Status{Phase: PhaseFailed, Message: "the engine plugin did not open: " + Summary(err)})
		return err
	}
	s.update(func(st *state) { st.eng, st.closeEng = eng, closeEng })
	if err := s.startEngine(ctx, eng); err != nil {
		s.setStatus(Status{Phase: PhaseFailed, Message: "the engine did not start: " + Summary(err)})
		return err
	}
	s.becameReady(false)
	return nil
}

// becameReady marks the engine ready and loaded (see markReady).
func (s *Supervisor) becameReady(restarted bool) {
	s.update(func(st *state) { s.markReady(st, restarted) })
}

// markReady marks the engine ready and loaded in st and, with KeepAlive
// set and no request using it, starts the idle countdown.
func (s *Supervisor) markReady(st *state, restarted bool) {
	n := st.status.Restarts
	if restarted {
		n++
	}
	st.status = Status{Phase: PhaseReady, Ready: true, Loaded: true, Restarts: n}
	st.starts++
	st.lastUse = time.Now()
	if st.inUse == 0 {
		s.armIdle(st)
	}
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

// restartAsked is a restart asked for (Restart) as begun under mu: its
// transition, the engine it starts again, the status to go back to, and,
// when calls into the engine run, the channel closed once they have ended.
type restartAsked struct {
	t      *transition
	eng    engine.Engine
	before Status
	ended  chan struct{}
}

// Restart starts the running engine again now (Prepare first) and returns
// when it serves again or has failed; a failure hands over to the restart
// loop of EngineFailed. A catalog engine reads a newly published voice
// this way. The calls into the engine under way (a synthesis streaming)
// end first, and the calls that come meanwhile wait for the restart, so
// that it cuts no request short. An engine unloaded for idleness is loaded
// instead (Prepare first), after a load or unload under way has ended. It
// answers not ready while a restart after a failure runs, or once Stop
// has run.
func (s *Supervisor) Restart(ctx context.Context) error {
	var r restartAsked
	for {
		var shift *transition
		var load bool
		var err error
		s.update(func(st *state) { shift, load, err = s.askRestart(st, &r) })
		switch {
		case err != nil:
			return err
		case load:
			// the load runs Prepare: it is the restart asked for
			_, done, err := s.use(ctx)
			if err == nil {
				done()
			}
			return err
		case shift == nil:
			return s.runRestartAsked(ctx, r)
		}
		// a load or unload under way ends first
		select {
		case <-shift.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// askRestart begins the restart Restart asks for in st (into r), or says
// what comes first: a load or unload under way to wait for (shift), a load
// in its place (an engine unloaded for idleness), or a refusal.
func (s *Supervisor) askRestart(st *state, r *restartAsked) (shift *transition, load bool, err error) {
	switch {
	case st.shift != nil:
		return st.shift, false, nil
	case st.unloaded && !st.stopped:
		return nil, true, nil
	case st.stopped:
		return nil, false, engine.NotReadyf("the server is stopping")
	case st.restarting:
		return nil, false, engine.NotReadyf("the engine is being restarted %s: retry shortly", st.why)
	case st.eng == nil:
		return nil, false, engine.NotReadyf("the engine is not running")
	}
	r.t = &transition{done: make(chan struct{})}
	st.shift = r.t
	st.restarting, st.why = true, "to load a new voice"
	r.eng, r.before = st.eng, st.status
	st.status = Status{Phase: PhaseRestarting, Message: "loading a new voice", Restarts: st.status.Restarts}
	if st.calls > 0 {
		st.status.Message = "loading a new voice once the requests under way end"
		r.ended = make(chan struct{})
		st.callsEnded = r.ended
	}
	return nil, false, nil
}

// runRestartAsked runs the restart askRestart began, once the calls under
// way have ended.
func (s *Supervisor) runRestartAsked(ctx context.Context, r restartAsked) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if r.ended != nil {
		select {
		case <-r.ended:
		case <-ctx.Done():
			// the engine was not touched: the calls that waited go on
			s.update(func(st *state) {
				st.shift, st.restarting, st.callsEnded = nil, false, nil
				st.status = r.before
			})
			close(r.t.done)
			return context.Cause(ctx)
		}
	}
	s.setStatus(Status{Phase: PhaseRestarting, Message: "loading a new voice"})
	err := s.startEngine(ctx, r.eng)
	s.update(func(st *state) {
		st.shift, st.restarting = nil, false
		if err == nil {
			s.markReady(st, false)
		} else {
			// an engine that still serves (Prepare failed before it was
			// touched) keeps serving; one that does not is restarted
			st.status = r.before
		}
	})
	if err != nil {
		s.EngineFailed(err)
		s.update(func(st *state) {
			if st.restarting {
				r.t.err = engine.NotReadyf("the engine did not start again (%s): it is being restarted; retry shortly", Summary(err))
			}
		})
	}
	close(r.t.done)
	return err
}

func (s *Supervisor) event(ev engine.LifecycleEvent) {
	if ev.Phase != engine.PhaseReady {
		s.update(func(st *state) {
			st.status.Phase, st.status.Progress, st.status.Message, st.status.Ready, st.status.Loaded = Phase(ev.Phase.String()), max(ev.Progress, 0), Brief(ev.Message), false, false
			if st.shift != nil && st.shift.load {
				// a load on demand: requests wait for it rather than being
				// turned away
				st.status.Ready = true
				st.status.Message = msgOnDemand
			}
		})
	}
	if s.onEvent != nil {
		s.onEvent(ev)
	}
}

// setStatus replaces the status, keeping its count of restarts.
func (s *Supervisor) setStatus(next Status) {
	s.update(func(st *state) {
		next.Restarts = st.status.Restarts
		st.status = next
	})
}

// Status reports the engine's state.
func (s *Supervisor) Status() Status { return s.view().status }

// Starts counts the times the engine became ready: at Start, and after
// each restart, Restart and load on demand. Each of them begins with the
// engine's prefix cache empty; engine/pool forgets the voices an engine
// held warm when the count moves on.
func (s *Supervisor) Starts() uint64 { return s.view().starts }

// State reports the engine's state in one word.
func (s *Supervisor) State() State {
	st := s.Status()
	switch st.Phase {
	case PhaseReady:
		return StateReady
	case PhaseUnloaded, PhaseUnloading:
		return StateUnloaded
	case PhaseFailed:
		return StateFailed
	case PhaseStopped:
		return StateStopped
	}
	return StateLoading
}

// EngineFailed is told that a call into the engine failed. It asks the
// engine for its health first: an engine that still says it is ready
// failed that one call only (a request it could not serve), and nothing
// changes. Otherwise the engine is marked restarting and restarted in the
// background, unless a restart runs already.
func (s *Supervisor) EngineFailed(cause error) {
	if s.isStopped() || !s.Loaded() || s.healthy() {
		return
	}
	begun := false
	s.update(func(st *state) {
		if st.restarting || st.stopped || st.unloaded || st.shift != nil {
			return
		}
		s.beginRestart(st, "after a failure", "failed", cause)
		begun = true
	})
	if begun {
		s.restartBegun("failed", cause)
	}
}

// beginRestart marks st restarting after cause: the status says that the
// engine "what" (failed, did not load), with cause's summary, and a
// request that meets the restart is told why it runs. The caller calls
// restartBegun next, once the update has ended.
func (s *Supervisor) beginRestart(st *state, why, what string, cause error) {
	st.restarting, st.why = true, why
	st.status = Status{Phase: PhaseRestarting, Message: "the engine " + what + " (" + Summary(cause) + "): restarting it", Restarts: st.status.Restarts}
	s.loops.Add(1)
}

// restartBegun logs cause and runs the restart beginRestart marked, in
// the background.
func (s *Supervisor) restartBegun(what string, cause error) {
	s.logFailure("the engine "+what+"; restarting it", cause)
	go s.restart()
}

// restart stops what is left of the engine and starts it again, reopening
// the plugin when the old one cannot start, with doubling waits between
// attempts, until it serves again or the supervisor stops. Past
// MaxRestarts failed attempts the phase is "failed", so that GET /health
// and GET /ready take the host out of a load balancer, and the attempts go
// on at MaxBackoff.
func (s *Supervisor) restart() {
	defer s.loops.Done()
	defer s.update(func(st *state) { st.restarting = false })
	wait := s.Backoff
	for attempt := 1; ; attempt++ {
		if s.ctx.Err() != nil {
			return
		}
		err := s.restartOnce()
		if err == nil {
			s.becameReady(true)
			return
		}
		if s.ctx.Err() != nil {
			return
		}
		phase := PhaseRestarting
		if attempt >= s.MaxRestarts {
			phase = PhaseFailed
		}
		s.logFailure(fmt.Sprintf("restart attempt %d failed", attempt), err)
		s.setStatus(Status{Phase: phase, Message: fmt.Sprintf("restart attempt %d failed (%s); the next in %v", attempt, Summary(err), wait)})
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, max(s.MaxBackoff, s.Backoff))
	}
}

// healthy reports whether the current engine says it is ready.
func (s *Supervisor) healthy() bool {
	eng := s.view().eng
	if eng == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, healthTimeout)
	defer cancel()
	h, err := eng.Health(ctx)
	return err == nil && h.Ready
}

// Watch polls the engine's health every interval until ctx ends or the
// supervisor stops, and restarts an engine that stopped being ready
// without a request noticing.
func (s *Supervisor) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if st := s.Status(); st.Loaded && !s.healthy() {
			s.EngineFailed(errors.New("the engine stopped answering its health check"))
		}
	}
}

func (s *Supervisor) restartOnce() error {
	ctx := s.ctx
	if eng := s.view().eng; eng != nil {
		_, _ = eng.Stop(ctx, engine.StopRequest{})
		err := s.startEngine(ctx, eng)
		if err == nil || ctx.Err() != nil {
			return err
		}
		s.logFailure("the engine did not start again; opening the plugin again", err)
	}
	// the plugin itself may be gone: open a new one
	s.closeCurrent()
	newEng, closeEng, err := s.open(ctx)
	if err != nil {
		return err
	}
	stopped := false
	s.update(func(st *state) {
		// Stop may have run while the plugin was opening and closed what
		// it knew of: this one would be left running
		if stopped = st.stopped; !stopped {
			st.eng, st.closeEng = newEng, closeEng
		}
	})
	if stopped {
		closeEng()
		return ErrStopped
	}
	return s.startEngine(ctx, newEng)
}

func (s *Supervisor) closeCurrent() {
	var closeEng func()
	s.update(func(st *state) {
		closeEng = st.closeEng
		st.eng, st.closeEng = nil, nil
	})
	if closeEng != nil {
		closeEng()
	}
}

func (s *Supervisor) isStopped() bool { return s.view().stopped }

// Stop cancels a start or restart in progress and any wait between
// attempts, waits (within ctx) for the restart loop to end, stops the
// engine and closes the plugin; no restart follows.
func (s *Supervisor) Stop(ctx context.Context) {
	s.update(func(st *state) {
		st.stopped = true
		st.status = Status{Phase: PhaseStopped, Restarts: st.status.Restarts}
		if st.idle != nil {
			st.idle.Stop()
		}
	})
	s.cancel(ErrStopped)
	ended := make(chan struct{})
	go func() { s.loops.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
	}
	if eng := s.view().eng; eng != nil {
		_, _ = eng.Stop(ctx, engine.StopRequest{})
	}
	s.closeCurrent()
}

// Engine returns the speech of an engine that forwards to the current one,
// answering not-ready while there is none. Its Synthesize and Voices load
// an engine unloaded for idleness and wait for it; Describe and Encode go
// to the plugin and load nothing. The engine's lifecycle is the
// supervisor's alone.
func (s *Supervisor) Engine() engine.Speech { return supervised{s} }

var _ engine.Speech = supervised{}

var errNoEngine = engine.NotReadyf("the engine is not running")

type supervised struct{ s *Supervisor }

func (p supervised) current() (engine.Engine, error) {
	if eng := p.s.view().eng; eng != nil {
		return eng, nil
	}
	return nil, errNoEngine
}

func (p supervised) Describe(ctx context.Context) (engine.Description, error) {
	e, err := p.current()
	if err != nil {
		return engine.Description{}, err
	}
	return e.Describe(ctx)
}

// Voices lists the engine's voices; while it is unloaded, the list it gave
// when last loaded (listing voices loads no engine).
func (p supervised) Voices(ctx context.Context) ([]engine.Voice, error) {
	if v, ok := p.s.cachedVoices(); ok {
		return v, nil
	}
	e, done, err := p.s.use(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	v, err := e.Voices(ctx)
	if err == nil {
		p.s.keepVoices(v)
	}
	return v, err
}

// Synthesize loads an unloaded engine first; the engine counts as in use
// until the stream is closed.
func (p supervised) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	e, done, err := p.s.use(ctx)
	if err != nil {
		return nil, err
	}
	st, err := e.Synthesize(ctx, req)
	if err != nil {
		done()
		return nil, err
	}
	return &usedStream{AudioStream: st, done: done}, nil
}

func (p supervised) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	e, err := p.current()
	if err != nil {
		return nil, err
	}
	return e.Encode(ctx, req, progress)
}
