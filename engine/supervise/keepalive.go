package supervise

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/drama-tts/drama/engine"
)

// Messages of Status while the engine is unloaded or loading on demand.
const (
	msgUnloaded  = "engine unloaded, loads on the next request"
	msgUnloading = "unloading after no request for the keep-alive time; a request now waits for it to load again"
	msgOnDemand  = "loading on demand; requests wait for it"
)

// InUse marks the engine as in use until done is called: it is not
// unloaded meanwhile. It loads nothing; the first call into Engine does.
// engine/pool holds the engine so from a request's handing out to its
// release, and a release that hands the engine to the next waiter lets go
// only after that waiter's hold began, so that the engine stays loaded
// between them. done may be called more than once.
func (s *Supervisor) InUse() (done func()) {
	s.mu.Lock()
	s.inUse++
	s.mu.Unlock()
	return s.doneFunc()
}

func (s *Supervisor) doneFunc() func() {
	var once sync.Once
	return func() { once.Do(s.release) }
}

// release ends one use; the last one starts the idle countdown.
func (s *Supervisor) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse--
	s.lastUse = time.Now()
	if s.inUse == 0 {
		s.armIdle()
	}
}

// armIdle starts (or starts again) the countdown to idleUnload; mu is held.
func (s *Supervisor) armIdle() {
	if s.KeepAlive == 0 || s.stopped {
		return
	}
	d := max(s.KeepAlive, 0)
	if s.idle == nil {
		s.idle = time.AfterFunc(d, s.idleUnload)
		return
	}
	s.idle.Reset(d)
}

// idleUnload stops the engine when it is loaded, no request uses it and
// none has for KeepAlive. The plugin stays open: loading again is a start
// of the engine, as a restart is.
func (s *Supervisor) idleUnload() {
	s.mu.Lock()
	if s.stopped || s.inUse > 0 || s.shift != nil || s.unloaded || s.restarting || s.eng == nil || !s.status.Loaded {
		s.mu.Unlock()
		return
	}
	if left := s.KeepAlive - time.Since(s.lastUse); left > 0 {
		s.idle.Reset(left)
		s.mu.Unlock()
		return
	}
	t := &transition{done: make(chan struct{})}
	s.shift = t
	eng := s.eng
	s.status = Status{Phase: PhaseUnloading, Ready: true, Message: msgUnloading, Restarts: s.status.Restarts}
	s.loops.Add(1)
	s.mu.Unlock()
	defer s.loops.Done()

	res, err := eng.Stop(s.ctx, engine.StopRequest{})
	s.mu.Lock()
	s.shift = nil
	if !s.stopped {
		s.unloaded = true
		s.status = Status{Phase: PhaseUnloaded, Ready: true, Message: msgUnloaded, Restarts: s.status.Restarts}
	}
	s.mu.Unlock()
	close(t.done)
	if err != nil {
		// the plugin did not answer: the next load finds out and goes
		// through the restart path
		s.log().Warn("unloading the idle engine", "err", err)
	}
	s.log().Info("unloaded the engine: no request for the keep-alive time", "keep_alive", s.KeepAlive.String(), "was_running", res.WasRunning, "killed", res.Killed)
}

// Loaded reports whether the engine was not unloaded for idleness: false
// while it is unloaded, or being unloaded or loaded again on demand (an
// engine/pool hands such an engine out last, and the request waits for
// the load). Unlike Status().Loaded it is true while the engine starts or
// restarts.
func (s *Supervisor) Loaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.unloaded && s.shift == nil
}

// settle waits for a load or unload under way to end, and for any that
// began meanwhile; it returns with mu held and none under way, or with
// ctx's error and mu not held.
func (s *Supervisor) settle(ctx context.Context) error {
	for {
		s.mu.Lock()
		t := s.shift
		if t == nil {
			return nil
		}
		s.mu.Unlock()
		select {
		case <-t.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// use returns the current engine for one call, loading it first when it
// was unloaded (the call waits for the load, which Stop cancels, and ctx
// ending gives up the wait, not the load). done ends the use.
func (s *Supervisor) use(ctx context.Context) (eng engine.Engine, done func(), err error) {
	done = s.InUse() // a caller waiting for a load keeps it from unloading again
	for {
		s.mu.Lock()
		switch {
		case s.stopped:
			s.mu.Unlock()
			done()
			return nil, nil, errNoEngine
		case s.shift != nil || s.unloaded:
			if s.shift == nil {
				s.beginLoad()
			}
			// wait for this transition itself: a load that fails at once
			// is seen to fail, not taken for a loaded engine
			t := s.shift
			s.mu.Unlock()
			select {
			case <-t.done:
			case <-ctx.Done():
				done()
				return nil, nil, ctx.Err()
			}
			if t.err != nil {
				done()
				return nil, nil, t.err
			}
			continue
		case s.eng == nil:
			s.mu.Unlock()
			done()
			return nil, nil, errNoEngine
		}
		eng = s.eng
		s.calls++
		s.mu.Unlock()
		return eng, s.callDone(done), nil
	}
}

// callDone returns done that first ends one call into the engine (see
// calls); it may be called more than once.
func (s *Supervisor) callDone(release func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.calls--
			if s.calls == 0 && s.callsEnded != nil {
				close(s.callsEnded)
				s.callsEnded = nil
			}
			s.mu.Unlock()
			release()
		})
	}
}

// beginLoad starts loading an unloaded engine in the background; mu is
// held.
func (s *Supervisor) beginLoad() {
	t := &transition{load: true, done: make(chan struct{})}
	s.shift = t
	s.status = Status{Phase: PhaseLoading, Ready: true, Message: msgOnDemand, Restarts: s.status.Restarts}
	s.loops.Add(1)
	go s.load(t, s.eng)
}

// load starts eng again (Prepare first), bounded by the start request's
// ReadyTimeout as every start is. A failure hands over to the restart
// loop, as a failure of a running engine does.
func (s *Supervisor) load(t *transition, eng engine.Engine) {
	defer s.loops.Done()
	began := time.Now()
	s.log().Info("loading the engine on demand")
	err := s.startEngine(s.ctx, eng)
	s.mu.Lock()
	s.shift = nil
	switch {
	case err == nil:
		s.unloaded = false
		s.mu.Unlock()
		s.becameReady(false)
		s.log().Info("loaded the engine on demand", "took", time.Since(began).Round(time.Millisecond).String())
	case s.stopped:
		t.err = errNoEngine
		s.mu.Unlock()
	default:
		t.err = engine.NotReadyf("the engine did not load (%s): it is being restarted; retry shortly", Summary(err))
		s.unloaded = false
		s.restartAfter("after a failed load", "did not load", err)
	}
	close(t.done)
}

// cachedVoices returns the voices the loaded engine last listed, while it
// is unloaded, so that listing voices does not load it.
func (s *Supervisor) cachedVoices() ([]engine.Voice, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if (s.unloaded || s.shift != nil) && s.voices != nil {
		return slices.Clone(s.voices), true
	}
	return nil, false
}

func (s *Supervisor) keepVoices(v []engine.Voice) {
	s.mu.Lock()
	s.voices = slices.Clone(v)
	s.mu.Unlock()
}

// usedStream ends its use of the engine when it is closed: a stream open
// for long keeps the engine loaded.
type usedStream struct {
	engine.AudioStream
	done func()
}

func (u *usedStream) Close() error {
	err := u.AudioStream.Close()
	u.done()
	return err
}
