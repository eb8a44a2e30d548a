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
	s.update(func(st *state) { st.inUse++ })
	return s.doneFunc()
}

func (s *Supervisor) doneFunc() func() {
	var once sync.Once
	return func() { once.Do(s.release) }
}

// release ends one use; the last one starts the idle countdown.
func (s *Supervisor) release() {
	s.update(func(st *state) {
		st.inUse--
		st.lastUse = time.Now()
		if st.inUse == 0 {
			s.armIdle(st)
		}
	})
}

// armIdle starts (or starts again) the countdown to idleUnload in st.
func (s *Supervisor) armIdle(st *state) {
	if s.KeepAlive == 0 || st.stopped {
		return
	}
	d := max(s.KeepAlive, 0)
	if st.idle == nil {
		st.idle = time.AfterFunc(d, s.idleUnload)
		return
	}
	st.idle.Reset(d)
}

// idleUnload stops the engine when it is loaded, no request uses it and
// none has for KeepAlive. The plugin stays open: loading again is a start
// of the engine, as a restart is.
func (s *Supervisor) idleUnload() {
	var t *transition
	var eng engine.Engine
	s.update(func(st *state) {
		if st.stopped || st.inUse > 0 || st.shift != nil || st.unloaded || st.restarting || st.eng == nil || !st.status.Loaded {
			return
		}
		if left := s.KeepAlive - time.Since(st.lastUse); left > 0 {
			st.idle.Reset(left)
			return
		}
		t = &transition{done: make(chan struct{})}
		st.shift = t
		eng = st.eng
		st.status = Status{Phase: PhaseUnloading, Ready: true, Message: msgUnloading, Restarts: st.status.Restarts}
		s.loops.Add(1)
	})
	if t == nil {
		return
	}
	defer s.loops.Done()

	res, err := eng.Stop(s.ctx, engine.StopRequest{})
	s.update(func(st *state) {
		st.shift = nil
		if !st.stopped {
			st.unloaded = true
			st.status = Status{Phase: PhaseUnloaded, Ready: true, Message: msgUnloaded, Restarts: st.status.Restarts}
		}
	})
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
	st := s.view()
	return !st.unloaded && st.shift == nil
}

// use returns the current engine for one call, loading it first when it
// was unloaded (the call waits for the load, which Stop cancels, and ctx
// ending gives up the wait, not the load). done ends the use.
func (s *Supervisor) use(ctx context.Context) (eng engine.Engine, done func(), err error) {
	done = s.InUse() // a caller waiting for a load keeps it from unloading again
	for {
		var shift *transition
		s.update(func(st *state) {
			switch {
			case st.stopped:
				err = errNoEngine
			case st.shift != nil || st.unloaded:
				if st.shift == nil {
					s.beginLoad(st)
				}
				// wait for this transition itself: a load that fails at
				// once is seen to fail, not taken for a loaded engine
				shift = st.shift
			case st.eng == nil:
				err = errNoEngine
			default:
				eng = st.eng
				st.calls++
			}
		})
		if err != nil {
			done()
			return nil, nil, err
		}
		if shift == nil {
			return eng, s.callDone(done), nil
		}
		select {
		case <-shift.done:
		case <-ctx.Done():
			done()
			return nil, nil, ctx.Err()
		}
		if shift.err != nil {
			done()
			return nil, nil, shift.err
		}
	}
}

// callDone returns done that first ends one call into the engine (see
// calls); it may be called more than once.
func (s *Supervisor) callDone(release func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.update(func(st *state) {
				st.calls--
				if st.calls == 0 && st.callsEnded != nil {
					close(st.callsEnded)
					st.callsEnded = nil
				}
			})
			release()
		})
	}
}

// beginLoad starts loading an unloaded engine in the background, from st.
func (s *Supervisor) beginLoad(st *state) {
	t := &transition{load: true, done: make(chan struct{})}
	st.shift = t
	st.status = Status{Phase: PhaseLoading, Ready: true, Message: msgOnDemand, Restarts: st.status.Restarts}
	s.loops.Add(1)
	go s.load(t, st.eng)
}

// load starts eng again (Prepare first), bounded by the start request's
// ReadyTimeout as every start is. A failure hands over to the restart
// loop, as a failure of a running engine does.
func (s *Supervisor) load(t *transition, eng engine.Engine) {
	defer s.loops.Done()
	began := time.Now()
	s.log().Info("loading the engine on demand")
	err := s.startEngine(s.ctx, eng)
	restart := false
	s.update(func(st *state) {
		st.shift = nil
		switch {
		case err == nil:
			st.unloaded = false
			s.markReady(st, false)
		case st.stopped:
			t.err = errNoEngine
		default:
			t.err = engine.NotReadyf("the engine did not load (%s): it is being restarted; retry shortly", Summary(err))
			st.unloaded = false
			s.beginRestart(st, "after a failed load", "did not load", err)
			restart = true
		}
	})
	switch {
	case err == nil:
		s.log().Info("loaded the engine on demand", "took", time.Since(began).Round(time.Millisecond).String())
	case restart:
		s.restartBegun("did not load", err)
	}
	close(t.done)
}

// cachedVoices returns the voices the loaded engine last listed, while it
// is unloaded, so that listing voices does not load it.
func (s *Supervisor) cachedVoices() ([]engine.Voice, bool) {
	st := s.view()
	if (st.unloaded || st.shift != nil) && st.voices != nil {
		return slices.Clone(st.voices), true
	}
	return nil, false
}

func (s *Supervisor) keepVoices(v []engine.Voice) {
	v = slices.Clone(v)
	s.update(func(st *state) { st.voices = v })
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
