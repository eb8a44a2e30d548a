package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/supervise"
)

// member is a fake engine's supervisor: its status is set by the test.
type member struct {
	mu       sync.Mutex
	st       supervise.Status
	failures int
	unloaded bool
}

func ready() *member { return &member{st: supervise.Status{Phase: "ready", Ready: true}} }

func (m *member) Engine() engine.Speech { return nil }
func (m *member) Status() supervise.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st
}
func (m *member) EngineFailed(error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failures++
	m.st = supervise.Status{Phase: "restarting"}
}
func (m *member) set(st supervise.Status) { m.mu.Lock(); m.st = st; m.mu.Unlock() }

// InUse, Starts and Loaded: a member whose engine is never unloaded nor
// started again (holding, counted and unloadable say otherwise).
func (m *member) InUse() func()  { return nil }
func (m *member) Starts() uint64 { return 0 }
func (m *member) Loaded() bool   { return true }

// unloadable is a member that can have its engine unloaded.
type unloadable struct{ *member }

func (u unloadable) Loaded() bool { u.mu.Lock(); defer u.mu.Unlock(); return !u.unloaded }

func newPool(t *testing.T, opts Options, ms ...Member) *Pool {
	t.Helper()
	named := make([]Named, len(ms))
	for i, m := range ms {
		named[i] = Named{Name: string(rune('A' + i)), Member: m}
	}
	p, err := New(named, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background()) })
	return p
}

func acquire(t *testing.T, p *Pool, voice string) *Lease {
	t.Helper()
	l, err := p.Acquire(context.Background(), voice)
	if err != nil {
		t.Fatalf("acquire %s: %v", voice, err)
	}
	return l
}

// got runs Acquire in the background and delivers its lease.
func got(p *Pool, ctx context.Context, voice string) <-chan *Lease {
	ch := make(chan *Lease, 1)
	go func() {
		l, err := p.Acquire(ctx, voice)
		if err != nil {
			l = nil
		}
		ch <- l
	}()
	return ch
}

func TestAffinityPrefersTheWarmEngine(t *testing.T) {
	p := newPool(t, Options{MaxQueue: 4}, ready(), ready())
	steps := []struct {
		voice, engine string
		warm          bool
	}{
		{"a", "A", false}, // both cold: the first
		{"b", "B", false}, // A holds a: B, idle longer
		{"a", "A", true},
		{"b", "B", true},
		{"a", "A", true},
		{"c", "B", false}, // A was used last: B takes c, keeping b
		{"b", "B", true},  // B holds c, b
		{"a", "A", true},
	}
	for i, s := range steps {
		l := acquire(t, p, s.voice)
		if l.Name() != s.engine || l.Warm() != s.warm {
			t.Errorf("step %d, voice %s: engine %s warm %v, want %s warm %v", i, s.voice, l.Name(), l.Warm(), s.engine, s.warm)
		}
		l.Release()
	}
	es := p.Engines()
	if es[0].Served != 4 || es[0].WarmHits != 3 || es[1].WarmHits != 2 {
		t.Errorf("engines %+v", es)
	}
}

func TestWarmVoicesAreTheLastTwo(t *testing.T) {
	p := newPool(t, Options{}, ready())
	for _, v := range []string{"a", "b", "c"} {
		acquire(t, p, v).Release()
	}
	if l := acquire(t, p, "a"); l.Warm() {
		t.Error("a warm after b and c: the engine keeps two voices")
	} else {
		l.Release()
	}
	if l := acquire(t, p, "c"); !l.Warm() {
		t.Error("c cold: it was among the last two")
	}
}

func TestQueueFIFOAndBound(t *testing.T) {
	p := newPool(t, Options{MaxQueue: 3}, ready())
	hold := acquire(t, p, "x")
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := p.Acquire(context.Background(), []string{"a", "x", "b"}[i])
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			l.Release()
		}()
		enginetest.WaitFor(t, func() bool { return p.Depth() == i+1 })
	}
	if _, err := p.Acquire(context.Background(), "x"); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("4th waiter: %v, want ErrQueueFull", err)
	}
	hold.Release()
	wg.Wait()
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("order %v, want [0 1 2]: one engine serves first in first out", order)
	}
}

func TestBoundedWaitForAWarmEngine(t *testing.T) {
	t.Run("warm engine frees in time", func(t *testing.T) {
		p := newPool(t, Options{MaxQueue: 4, AffinityWait: time.Hour}, ready(), ready())
		a := acquire(t, p, "a") // A holds a
		ch := got(p, context.Background(), "a")
		enginetest.WaitFor(t, func() bool { return p.Depth() == 1 }) // waits for A although B is idle
		a.Release()
		if l := <-ch; l == nil || l.Name() != "A" || !l.Warm() {
			t.Fatalf("lease %+v, want warm A", l)
		}
	})
	t.Run("bound passes", func(t *testing.T) {
		p := newPool(t, Options{MaxQueue: 4, AffinityWait: 5 * time.Millisecond}, ready(), ready())
		a := acquire(t, p, "a")
		defer a.Release()
		if l := <-got(p, context.Background(), "a"); l == nil || l.Name() != "B" || l.Warm() {
			t.Fatalf("lease %+v, want cold B once the wait is over", l)
		}
	})
	t.Run("no engine holds the voice", func(t *testing.T) {
		p := newPool(t, Options{MaxQueue: 4, AffinityWait: time.Hour}, ready(), ready())
		a := acquire(t, p, "a")
		defer a.Release()
		if l := acquire(t, p, "z"); l.Name() != "B" {
			t.Fatalf("engine %s, want B at once", l.Name())
		}
	})
	t.Run("no queue: no wait", func(t *testing.T) {
		p := newPool(t, Options{MaxQueue: 0, AffinityWait: time.Hour}, ready(), ready())
		a := acquire(t, p, "a")
		if l := acquire(t, p, "a"); l.Name() != "B" {
			t.Fatalf("engine %s, want B: with no queue a request may not wait", l.Name())
		}
		if _, err := p.Acquire(context.Background(), "a"); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("both busy: %v, want ErrQueueFull", err)
		}
		a.Release()
	})
}

func TestRoundRobinIgnoresVoices(t *testing.T) {
	p := newPool(t, Options{Policy: RoundRobin}, ready(), ready(), ready())
	var names string
	for range 4 {
		l := acquire(t, p, "a")
		names += l.Name()
		l.Release()
	}
	if names != "ABCA" {
		t.Fatalf("engines %s, want ABCA", names)
	}
	if _, err := New([]Named{{"x", ready()}}, Options{Policy: "fastest"}); err == nil {
		t.Fatal("an unknown policy was taken")
	}
}

func TestWaiterLeavesAndDrain(t *testing.T) {
	p := newPool(t, Options{MaxQueue: 4}, ready())
	hold := acquire(t, p, "a")
	ctx, cancel := context.WithCancel(context.Background())
	ch := got(p, ctx, "a")
	enginetest.WaitFor(t, func() bool { return p.Depth() == 1 })
	cancel()
	if l := <-ch; l != nil {
		t.Fatal("a cancelled waiter got an engine")
	}
	if p.Depth() != 0 {
		t.Fatal("a waiter that left is still queued")
	}
	errc := make(chan error, 1)
	go func() { _, err := p.Acquire(context.Background(), "a"); errc <- err }()
	enginetest.WaitFor(t, func() bool { return p.Depth() == 1 })
	p.Drain()
	if err := <-errc; !errors.Is(err, ErrDraining) {
		t.Fatalf("waiter at drain: %v", err)
	}
	if _, err := p.Acquire(context.Background(), "a"); !errors.Is(err, ErrDraining) {
		t.Fatalf("after drain, every engine busy: %v", err)
	}
	hold.Release()
	hold.Release() // twice is harmless
	// a draining server still serves a request that finds an engine idle
	// (a load balancer that has not seen /ready turn 503 yet sends it)
	l, err := p.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatalf("after drain, an engine idle: %v", err)
	}
	if _, err := p.Acquire(context.Background(), "b"); !errors.Is(err, ErrDraining) {
		t.Fatalf("after drain, the engine taken again: %v", err)
	}
	l.Release()
}

func TestNotReadyEngineIsSkipped(t *testing.T) {
	a, b := ready(), ready()
	p := newPool(t, Options{MaxQueue: 4}, a, b)
	l := acquire(t, p, "v") // A
	l.Failed(errors.New("gone"))
	l.Release()
	if a.failures != 1 {
		t.Fatal("the failure did not reach the engine's supervisor")
	}
	for range 3 {
		l := acquire(t, p, "v")
		if l.Name() != "B" {
			t.Fatalf("engine %s, want B while A restarts", l.Name())
		}
		l.Release()
	}
	if p.Ready() != 1 || !p.Status().Ready {
		t.Fatalf("ready %d, status %+v", p.Ready(), p.Status())
	}
	// B busy, A restarting: the waiter gets A once it is ready again,
	// cold for the voice it held before it failed
	hold := acquire(t, p, "v")
	ch := got(p, context.Background(), "v")
	enginetest.WaitFor(t, func() bool { return p.Depth() == 1 })
	a.set(supervise.Status{Phase: "ready", Ready: true, Restarts: 1})
	if l := <-ch; l == nil || l.Name() != "A" || l.Warm() {
		t.Fatalf("lease %+v, want A (restarted, its cache empty)", l)
	}
	hold.Release()
	b.set(supervise.Status{Phase: "failed", Message: "gave up"})
	a.set(supervise.Status{Phase: "failed", Restarts: 1})
	if st := p.Status(); st.Ready || st.Phase != "failed" || st.Restarts != 1 {
		t.Fatalf("status %+v", st)
	}
}

func TestUnloadedEngineLast(t *testing.T) {
	cold := unloadable{&member{st: supervise.Status{Phase: "unloaded"}, unloaded: true}}
	p := newPool(t, Options{MaxQueue: 4}, cold, ready())
	first := acquire(t, p, "a")
	if first.Name() != "B" {
		t.Fatalf("engine %s, want the loaded B first", first.Name())
	}
	if l := acquire(t, p, "b"); l.Name() != "A" {
		t.Fatalf("engine %s, want the unloaded A once B is busy", l.Name())
	}
	first.Release()
}

// flaky is an engine whose health the test sets; Start waits for gate.
type flaky struct {
	engine.Engine
	healthy atomic.Bool
	gate    chan struct{}
	starts  atomic.Int32
}

func (f *flaky) Start(ctx context.Context, _ engine.StartRequest, _ func(engine.LifecycleEvent)) error {
	if f.starts.Add(1) > 1 {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.healthy.Store(true)
	return nil
}
func (f *flaky) Health(context.Context) (engine.Health, error) {
	return engine.Health{Ready: f.healthy.Load()}, nil
}
func (f *flaky) Stop(context.Context, engine.StopRequest) (engine.StopResult, error) {
	f.healthy.Store(false)
	return engine.StopResult{}, nil
}

// TestFailedEngineRestartsAloneWhileOthersServe: real supervisors, one
// engine crashes; it is restarted by its own supervisor, the other serves
// meanwhile, and the restarted one serves again.
func TestFailedEngineRestartsAloneWhileOthersServe(t *testing.T) {
	engines := []*flaky{{gate: make(chan struct{})}, {gate: make(chan struct{})}}
	var named []Named
	for i, f := range engines {
		sup := supervise.New(func(context.Context) (engine.Engine, func(), error) { return f, func() {}, nil }, engine.StartRequest{}, nil)
		sup.Backoff = time.Millisecond
		named = append(named, Named{Name: []string{"gpu0-0", "gpu1-0"}[i], Member: sup})
	}
	p, err := New(named, Options{MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	var started []string
	if err := p.Start(context.Background(), func(n string) { started = append(started, n) }); err != nil {
		t.Fatal(err)
	}
	if len(started) != 2 || p.Ready() != 2 {
		t.Fatalf("started %v, ready %d", started, p.Ready())
	}
	l := acquire(t, p, "v")
	if l.Name() != "gpu0-0" {
		t.Fatalf("first engine %s", l.Name())
	}
	engines[0].healthy.Store(false) // it crashed mid-request
	l.Failed(engine.Errorf(engine.KindFailed, "the engine exited"))
	l.Release()
	enginetest.WaitFor(t, func() bool { return engines[0].starts.Load() == 2 }) // its restart waits at the gate
	for range 3 {
		l := acquire(t, p, "v")
		if l.Name() != "gpu1-0" {
			t.Fatalf("engine %s served while gpu0-0 restarts", l.Name())
		}
		l.Release()
	}
	if engines[1].starts.Load() != 1 {
		t.Fatal("the healthy engine was restarted too")
	}
	if st := p.Engines()[0].Status; st.Phase != "restarting" || st.Ready {
		t.Fatalf("gpu0-0 %+v while restarting", st)
	}
	close(engines[0].gate)
	enginetest.WaitFor(t, func() bool { return p.Ready() == 2 })
	hold := acquire(t, p, "v") // gpu1-0 holds v
	if l := acquire(t, p, "w"); l.Name() != "gpu0-0" {
		t.Fatalf("engine %s, want the restarted gpu0-0", l.Name())
	}
	hold.Release()
	if st := p.Status(); st.Restarts != 1 || !st.Ready {
		t.Fatalf("status %+v", st)
	}
}

// holding is a member that counts the holds on its engine, as a
// supervisor that unloads an idle engine does, and records when the count
// fell to none.
type holding struct {
	*member
	open, idle atomic.Int32
}

func (h *holding) InUse() func() {
	h.open.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			if h.open.Add(-1) == 0 {
				h.idle.Add(1)
			}
		})
	}
}

// TestALeaseHoldsItsEngine: a lease holds its engine from its handing out
// to its release, and a release that hands the engine to the next waiter
// lets the next hold begin first, so that the engine is never without a
// hold between the two requests.
func TestALeaseHoldsItsEngine(t *testing.T) {
	h := &holding{member: ready()}
	p := newPool(t, Options{MaxQueue: 4}, h)
	first := acquire(t, p, "narrator")
	if n := h.open.Load(); n != 1 {
		t.Fatalf("%d holds with one lease, want 1", n)
	}
	next := got(p, context.Background(), "narrator")
	enginetest.WaitFor(t, func() bool { return p.Depth() == 1 })
	first.Release()
	second := <-next
	if n, idle := h.open.Load(), h.idle.Load(); n != 1 || idle != 0 {
		t.Fatalf("after the hand-over: %d holds, the engine without one %d times; want 1 and 0", n, idle)
	}
	second.Release()
	second.Release()
	if n, idle := h.open.Load(), h.idle.Load(); n != 0 || idle != 1 {
		t.Fatalf("after the last release: %d holds, %d times without one; want 0 and 1", n, idle)
	}
}

// counted is a member that counts its engine's starts, as a supervisor
// does; the test moves the count on for a restart or a load.
type counted struct {
	unloadable
	starts atomic.Uint64
}

func (c *counted) Starts() uint64 { return c.starts.Load() }

// TestAStartedEngineHoldsNoVoice: an engine started again without a failed
// call telling the pool (the health watch restarted it, or it was unloaded
// for idleness and loaded again) holds none of its earlier voices; a
// request that loads an unloaded engine finds it cold, and the next one of
// its voice warm.
func TestAStartedEngineHoldsNoVoice(t *testing.T) {
	c := &counted{unloadable: unloadable{ready()}}
	c.starts.Store(1)
	p := newPool(t, Options{}, c)
	acquire(t, p, "a").Release()
	if l := acquire(t, p, "a"); !l.Warm() {
		t.Fatal("a cold on the engine that just spoke it")
	} else {
		l.Release()
	}
	c.starts.Add(1) // restarted by its health watch
	if l := acquire(t, p, "a"); l.Warm() {
		t.Fatal("a warm on an engine restarted since it spoke a")
	} else {
		l.Release()
	}
	if v := p.Engines()[0].Voices; len(v) != 1 || v[0] != "a" {
		t.Fatalf("warm voices %q, want a", v)
	}

	c.mu.Lock()
	c.unloaded = true // unloaded for idleness
	c.mu.Unlock()
	l := acquire(t, p, "a")
	if l.Warm() {
		t.Fatal("a warm on an unloaded engine: its load begins with an empty cache")
	}
	c.mu.Lock()
	c.unloaded = false // the request loaded it
	c.mu.Unlock()
	c.starts.Add(1)
	l.Release()
	if l := acquire(t, p, "a"); !l.Warm() {
		t.Fatal("a cold on the engine loaded for a")
	} else {
		l.Release()
	}
	if es := p.Engines(); es[0].Served != 5 || es[0].WarmHits != 2 {
		t.Fatalf("engines %+v", es)
	}
}

// TestAQueueBehindServingEnginesIsNotPolled: while every engine is ready,
// a request waits for a release, with no timer looking again meanwhile;
// while one is not ready, a timer looks again for it.
func TestAQueueBehindServingEnginesIsNotPolled(t *testing.T) {
	m := ready()
	p := newPool(t, Options{MaxQueue: 4}, m)
	hold := acquire(t, p, "a")
	ch := got(p, context.Background(), "a")
	enginetest.WaitFor(t, func() bool { return p.Depth() == 1 })
	p.mu.Lock()
	armed := p.timer != nil
	p.mu.Unlock()
	if armed {
		t.Fatal("a timer polls a queue whose engine serves")
	}
	m.set(supervise.Status{Phase: "restarting"})
	hold.Release()
	p.mu.Lock()
	armed = p.timer != nil
	p.mu.Unlock()
	if !armed {
		t.Fatal("no timer looks again for the restarting engine")
	}
	m.set(supervise.Status{Phase: "ready", Ready: true, Restarts: 1})
	if l := <-ch; l == nil {
		t.Fatal("the waiter got no engine once it was ready again")
	} else {
		l.Release()
	}
}

// BenchmarkAcquireRelease: requests of 16 voices from 64 goroutines
// through a pool of 8 engines, a queue building behind them.
func BenchmarkAcquireRelease(b *testing.B) {
	named := make([]Named, 8)
	for i := range named {
		named[i] = Named{Name: string(rune('A' + i)), Member: ready()}
	}
	p, err := New(named, Options{MaxQueue: 1 << 20, AffinityWait: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop(context.Background())
	voices := make([]string, 16)
	for i := range voices {
		voices[i] = string(rune('a' + i))
	}
	var n atomic.Int64
	b.SetParallelism(8) // 8 x GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := p.Acquire(context.Background(), voices[n.Add(1)%16])
			if err != nil {
				b.Error(err)
				return
			}
			l.Release()
		}
	})
}
