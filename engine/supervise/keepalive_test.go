package supervise

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

// keptAlive is a supervisor over one Fake with keep-alive d; it counts the
// plugin's opens and the engine's starts, and records the pid of each
// native process the fake spawns.
type keptAlive struct {
	sup    *Supervisor
	fake   *enginetest.Fake
	opens  atomic.Int32
	starts atomic.Int32
	failAt atomic.Bool // the next starts fail
	// restartStops: a start of a running engine stops it first
	restartStops atomic.Bool

	mu   sync.Mutex
	pids []int
}

func newKeptAlive(t *testing.T, d time.Duration) *keptAlive {
	t.Helper()
	k := &keptAlive{fake: enginetest.NewFake()}
	k.fake.StartDelay = 4 * time.Millisecond
	eng := &keepAliveEngine{Engine: k.fake, k: k}
	k.sup = New(func(context.Context) (engine.Engine, func(), error) {
		k.opens.Add(1)
		return eng, func() {}, nil
	}, engine.StartRequest{}, func(ev engine.LifecycleEvent) {
		if ev.Phase == engine.PhaseSpawned {
			k.mu.Lock()
			k.pids = append(k.pids, ev.PID)
			k.mu.Unlock()
		}
	})
	k.sup.KeepAlive = d
	k.sup.Backoff, k.sup.MaxBackoff = time.Millisecond, time.Millisecond
	if err := k.sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.sup.Stop(context.Background()) })
	return k
}

func (k *keptAlive) lastPID(t *testing.T) int {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pids) == 0 {
		t.Fatal("the fake spawned no process")
	}
	return k.pids[len(k.pids)-1]
}

type keepAliveEngine struct {
	engine.Engine
	k *keptAlive
}

func (e *keepAliveEngine) Start(ctx context.Context, req engine.StartRequest, ev func(engine.LifecycleEvent)) error {
	e.k.starts.Add(1)
	if e.k.failAt.Load() {
		return engine.Errorf(engine.KindFailed, "start: CUDA error: out of memory")
	}
	if e.k.restartStops.Load() {
		_, _ = e.Engine.Stop(ctx, engine.StopRequest{})
	}
	return e.Engine.Start(ctx, req, ev)
}

// speak synthesizes text through the supervisor and reads the stream to
// its end.
func speak(t *testing.T, sup *Supervisor, text string) {
	t.Helper()
	st, err := sup.Engine().Synthesize(context.Background(), engine.SynthesisRequest{Input: text})
	if err != nil {
		t.Fatalf("synthesize: %v", err)
	}
	defer st.Close()
	for {
		if _, err := st.Next(); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("stream: %v", err)
		}
	}
}

// TestIdleEngineIsUnloadedAndLoadsOnDemand: with no request for the
// keep-alive time the engine's process is stopped and the status says
// unloaded (still ready: the next request loads it), the health watch
// restarts nothing, and the next request loads it again and is served;
// the plugin is opened once.
func TestIdleEngineIsUnloadedAndLoadsOnDemand(t *testing.T) {
	k := newKeptAlive(t, 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go k.sup.Watch(ctx, time.Millisecond)
	first := k.lastPID(t)
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
	if !enginetest.WaitGone(first, 10*time.Second) {
		t.Fatalf("the engine's process %d still runs after the unload", first)
	}
	st := k.sup.Status()
	if st.Phase != "unloaded" || !st.Ready || st.Loaded || !strings.Contains(st.Message, "loads on the next request") {
		t.Fatalf("status while unloaded: %+v", st)
	}
	if n := k.starts.Load(); n != 1 {
		t.Fatalf("%d starts while unloaded, want 1: something loaded it again", n)
	}
	speak(t, k.sup, "hello again")
	if n := k.starts.Load(); n != 2 {
		t.Fatalf("%d starts after a request, want 2", n)
	}
	if second := k.lastPID(t); second == first {
		t.Fatal("the request was served without a new process")
	}
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
	if n := k.opens.Load(); n != 1 {
		t.Fatalf("%d plugin opens, want 1", n)
	}
	if st := k.sup.Status(); st.Restarts != 0 {
		t.Fatalf("an unload counted as a restart: %+v", st)
	}
}

// TestALongStreamKeepsTheEngineLoaded: a stream that lasts many keep-alive
// times, and a stream held open unread, are never cut by the idle timer;
// the engine unloads once the stream is closed.
func TestALongStreamKeepsTheEngineLoaded(t *testing.T) {
	k := newKeptAlive(t, 2*time.Millisecond)
	k.fake.FrameDelay = time.Millisecond
	speak(t, k.sup, strings.Repeat("a long text ", 40)) // about 120 frames: 60 keep-alive times
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })

	st, err := k.sup.Engine().Synthesize(context.Background(), engine.SynthesisRequest{Input: "held open"})
	if err != nil {
		t.Fatal(err)
	}
	pid := k.lastPID(t)
	k.sup.idleTimerFires() // the keep-alive time passes with the stream open and unread
	if s := k.sup.State(); s != StateReady || !enginetest.Alive(pid) {
		t.Fatalf("state %s with a stream open, process alive %v: the idle timer cut a request in flight", s, enginetest.Alive(pid))
	}
	for {
		if _, err := st.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the stream held open failed: %v", err)
		}
	}
	st.Close()
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
}

// TestInUseHoldsTheEngine: a request holding the engine while it waits
// for its turn keeps it loaded; done lets it unload.
func TestInUseHoldsTheEngine(t *testing.T) {
	k := newKeptAlive(t, 2*time.Millisecond)
	done := k.sup.InUse()
	speak(t, k.sup, "held") // loaded, should the timer have come first
	k.sup.idleTimerFires()  // the keep-alive time passes while it is held
	if s := k.sup.State(); s != StateReady {
		t.Fatalf("state %s while in use, want ready", s)
	}
	done()
	done() // a second call changes nothing
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
	speak(t, k.sup, "again") // the count did not go below zero: the engine loads and unloads as before
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
}

// TestUnloadAtOnce unloads the engine as soon as the request ends.
func TestUnloadAtOnce(t *testing.T) {
	k := newKeptAlive(t, UnloadAtOnce)
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
	speak(t, k.sup, "one")
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
	if n := k.starts.Load(); n != 2 {
		t.Fatalf("%d starts, want 2", n)
	}
}

// TestNoKeepAliveNeverArmsTheTimer: the zero value keeps the engine loaded
// as before: no idle timer exists after a request.
func TestNoKeepAliveNeverArmsTheTimer(t *testing.T) {
	k := newKeptAlive(t, 0)
	speak(t, k.sup, "stay")
	if idle := k.sup.view().idle; idle != nil || k.sup.State() != StateReady {
		t.Fatalf("keep-alive 0 armed an idle timer (state %s)", k.sup.State())
	}
}

// TestVoicesWhileUnloadedLoadNothing: listing voices of an unloaded engine
// answers the list it gave when loaded.
func TestVoicesWhileUnloadedLoadNothing(t *testing.T) {
	k := newKeptAlive(t, 5*time.Millisecond)
	done := k.sup.InUse()
	loaded, err := k.sup.Engine().Voices(context.Background())
	done()
	if err != nil || len(loaded) != 2 {
		t.Fatalf("voices: %v %v", loaded, err)
	}
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
	got, err := k.sup.Engine().Voices(context.Background())
	if err != nil || len(got) != 2 || got[0].ID != loaded[0].ID {
		t.Fatalf("voices while unloaded: %v %v", got, err)
	}
	if n := k.starts.Load(); n != 1 || k.sup.State() != StateUnloaded {
		t.Fatalf("listing voices loaded the engine: %d starts, state %s", n, k.sup.State())
	}
}

// TestStopDuringALoadOnDemand: Stop cancels a load on demand; the waiting
// request is answered not ready, Stop returns, and no process is left.
func TestStopDuringALoadOnDemand(t *testing.T) {
	k := newKeptAlive(t, time.Millisecond)
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "unloaded" })
	k.fake.StartDelay = time.Hour
	errc := make(chan error, 1)
	go func() {
		_, err := k.sup.Engine().Synthesize(context.Background(), engine.SynthesisRequest{Input: "waits"})
		errc <- err
	}()
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == Phase(engine.PhaseSpawned.String()) })
	if st, s := k.sup.Status(), k.sup.State(); s != StateLoading || !st.Ready || st.Loaded || !strings.Contains(st.Message, "on demand") {
		t.Fatalf("state %s, status %+v during a load on demand; want loading, ready to queue, not loaded", s, st)
	}
	pid := k.lastPID(t)
	stopped := make(chan struct{})
	go func() { k.sup.Stop(context.Background()); close(stopped) }()
	within(t, stopped, "Stop did not end the load on demand")
	select {
	case err := <-errc:
		if !errors.Is(err, engine.ErrNotReady) {
			t.Fatalf("the waiting request got %v, want not ready", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request was not answered")
	}
	if !enginetest.WaitGone(pid, 10*time.Second) {
		t.Fatalf("process %d of the cancelled load still runs", pid)
	}
	if s := k.sup.State(); s != StateStopped {
		t.Fatalf("state %s after Stop", s)
	}
}

// TestAWaitingRequestMayLeave: a request that gives up while the engine
// loads leaves at once; the load goes on and the engine serves the next.
func TestAWaitingRequestMayLeave(t *testing.T) {
	k := newKeptAlive(t, time.Hour)
	k.sup.idleUnloadNow(t)
	k.fake.StartDelay = 40 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := k.sup.Engine().Synthesize(ctx, engine.SynthesisRequest{Input: "leaves"})
		errc <- err
	}()
	enginetest.WaitFor(t, func() bool { return k.sup.State() == StateLoading })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the request that left got %v", err)
	}
	enginetest.WaitFor(t, func() bool { return k.sup.State() == StateReady })
	speak(t, k.sup, "next")
	if n := k.starts.Load(); n != 2 {
		t.Fatalf("%d starts, want 2", n)
	}
}

// idleTimerFires runs what the idle timer runs once the keep-alive time
// has passed since the last use: the engine unloads unless a request
// holds it.
func (s *Supervisor) idleTimerFires() {
	s.update(func(st *state) { st.lastUse = time.Now().Add(-2 * max(s.KeepAlive, time.Millisecond)) })
	s.idleUnload()
}

// idleUnloadNow unloads the engine as the idle timer would.
func (s *Supervisor) idleUnloadNow(t *testing.T) {
	t.Helper()
	s.idleTimerFires()
	if st := s.State(); st != StateUnloaded {
		t.Fatalf("state %s after an idle unload", st)
	}
}

// TestAFailedLoadGoesToTheRestartPath: a load on demand that fails answers
// the waiting request not ready with the cause, and the restart loop takes
// over until the engine starts again.
func TestAFailedLoadGoesToTheRestartPath(t *testing.T) {
	k := newKeptAlive(t, time.Hour)
	k.sup.idleUnloadNow(t)
	k.failAt.Store(true)
	_, err := k.sup.Engine().Synthesize(context.Background(), engine.SynthesisRequest{Input: "fails"})
	if !errors.Is(err, engine.ErrNotReady) || !strings.Contains(err.Error(), "did not load") || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("a failed load answered %v", err)
	}
	enginetest.WaitFor(t, func() bool { return strings.Contains(k.sup.Status().Message, "attempt") })
	if st := k.sup.Status(); st.Ready || st.Loaded {
		t.Fatalf("status while restarting after a failed load: %+v", st)
	}
	k.failAt.Store(false)
	enginetest.WaitFor(t, func() bool { return k.sup.State() == StateReady })
	speak(t, k.sup, "served")
	if st := k.sup.Status(); st.Restarts != 1 {
		t.Fatalf("status after the restart: %+v, want 1 restart", st)
	}
}

// TestRestartWhileUnloadedLoads: a restart asked for (a catalog engine's
// new voice) while the engine is unloaded loads it, Prepare first.
func TestRestartWhileUnloadedLoads(t *testing.T) {
	k := newKeptAlive(t, time.Hour)
	var prepared atomic.Int32
	k.sup.Prepare = func(_ context.Context, _ engine.Engine, req engine.StartRequest) (engine.StartRequest, error) {
		prepared.Add(1)
		return req, nil
	}
	k.sup.idleUnloadNow(t)
	if err := k.sup.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s, n := k.sup.State(), prepared.Load(); s != StateReady || n != 1 {
		t.Fatalf("after a restart while unloaded: state %s, %d prepares; want ready and 1", s, n)
	}
}

// TestRestartDuringALoadWaitsForIt: a restart asked for while the engine
// loads on demand waits for the load and then restarts the loaded engine,
// never starting it twice at once.
func TestRestartDuringALoadWaitsForIt(t *testing.T) {
	k := newKeptAlive(t, time.Hour)
	k.sup.idleUnloadNow(t)
	k.fake.StartDelay = 40 * time.Millisecond
	listed := make(chan error, 1)
	go func() { _, err := k.sup.Engine().Voices(context.Background()); listed <- err }() // no list kept yet: it loads
	enginetest.WaitFor(t, func() bool { return k.sup.State() == StateLoading })
	k.restartStops.Store(true) // as the native engine's Start does, a start of a running engine stops it first
	if err := k.sup.Restart(context.Background()); err != nil {
		t.Fatalf("a restart during a load: %v", err)
	}
	if err := <-listed; err != nil {
		t.Fatalf("the call that loaded the engine: %v", err)
	}
	if n, s := k.starts.Load(), k.sup.State(); n != 3 || s != StateReady {
		t.Fatalf("%d starts, state %s; want 3 (start, load, restart) and ready", n, s)
	}
}

// TestRestartWaitsForTheStreamsUnderWay: a restart asked for (a catalog
// engine's new voice) while a synthesis streams waits for its stream to be
// closed, the stream is read to its end, and a synthesis asked for during
// the restart waits for it and is served by the restarted engine.
func TestRestartWaitsForTheStreamsUnderWay(t *testing.T) {
	k := newKeptAlive(t, time.Hour)
	k.restartStops.Store(true)
	st, err := k.sup.Engine().Synthesize(context.Background(), engine.SynthesisRequest{Input: "under way"})
	if err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- k.sup.Restart(context.Background()) }()
	enginetest.WaitFor(t, func() bool { return k.sup.Status().Phase == "restarting" })
	if st := k.sup.Status(); st.Ready || !strings.Contains(st.Message, "once the requests under way end") {
		t.Fatalf("status while the restart waits: %+v", st)
	}
	later := make(chan error, 1)
	go func() {
		st, err := k.sup.Engine().Synthesize(context.Background(), engine.SynthesisRequest{Input: "during the restart"})
		if err == nil {
			_, err = st.Next()
			st.Close()
		}
		later <- err
	}()
	// the synthesis asked for during the restart waits for it, holding the
	// engine beside the stream under way
	enginetest.WaitFor(t, func() bool { return k.sup.view().inUse == 2 })
	if n := k.starts.Load(); n != 1 {
		t.Fatalf("the engine started %d times with a stream open, want 1: the restart cut it", n)
	}
	for {
		if _, err := st.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the stream under way failed during the restart: %v", err)
		}
	}
	st.Close()
	if err := <-restarted; err != nil {
		t.Fatalf("the restart: %v", err)
	}
	if err := <-later; err != nil {
		t.Fatalf("the synthesis asked for during the restart: %v", err)
	}
	if n, s := k.starts.Load(), k.sup.State(); n != 2 || s != StateReady {
		t.Fatalf("%d starts, state %s; want 2 and ready", n, s)
	}
}

// TestARestartThatGivesUpTouchesNothing: a restart whose caller leaves
// while it waits for a stream restarts nothing and leaves the engine
// serving.
func TestARestartThatGivesUpTouchesNothing(t *testing.T) {
	k := newKeptAlive(t, time.Hour)
	st, err := k.sup.Engine().Synthesize(context.Background(), engine.SynthesisRequest{Input: "under way"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := k.sup.Restart(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a restart given up answered %v", err)
	}
	if n, s := k.starts.Load(), k.sup.Status(); n != 1 || s.Phase != "ready" || !s.Ready {
		t.Fatalf("%d starts, status %+v after a restart given up; want 1 and ready", n, s)
	}
	st.Close()
	speak(t, k.sup, "still served")
}

// TestAFailedPrepareLeavesTheEngineServing: a restart whose Prepare fails
// (a voice catalog that cannot be written) returns the error and leaves
// the engine it did not touch ready and serving, not stuck restarting.
func TestAFailedPrepareLeavesTheEngineServing(t *testing.T) {
	k := newKeptAlive(t, time.Hour)
	k.sup.Prepare = func(context.Context, engine.Engine, engine.StartRequest) (engine.StartRequest, error) {
		return engine.StartRequest{}, errors.New("catalog: disk full")
	}
	if err := k.sup.Restart(context.Background()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("a restart whose Prepare fails: %v", err)
	}
	if st := k.sup.Status(); st.Phase != "ready" || !st.Ready || !st.Loaded {
		t.Fatalf("status after a failed Prepare: %+v, want ready", st)
	}
	speak(t, k.sup, "still served")
	if n := k.starts.Load(); n != 1 {
		t.Fatalf("the engine started %d times, want 1", n)
	}
}

// TestStartsCountsEveryStart: Starts moves on with each start of the
// engine (at Start, Restart, a load on demand), each of which empties its
// prefix cache, and not with an unload.
func TestStartsCountsEveryStart(t *testing.T) {
	k := newKeptAlive(t, time.Hour)
	if n := k.sup.Starts(); n != 1 {
		t.Fatalf("%d starts after Start, want 1", n)
	}
	k.restartStops.Store(true)
	if err := k.sup.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	k.sup.idleUnloadNow(t)
	if n := k.sup.Starts(); n != 2 {
		t.Fatalf("%d starts after Restart and an unload, want 2", n)
	}
	speak(t, k.sup, "loads it")
	if n, m := k.sup.Starts(), k.starts.Load(); n != 3 || m != 3 {
		t.Fatalf("Starts %d after a load on demand, the engine started %d times; want 3 and 3", n, m)
	}
}
