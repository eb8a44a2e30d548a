// Package pool puts several engines, each kept serving by its own
// supervisor, behind one first-in first-out queue, and hands each request
// an engine: one that holds the request's voice in its prefix cache first
// (a cold voice costs its prefill before the first audio), else any idle
// engine, waiting at most Options.AffinityWait for a warm engine while
// another is idle. An engine that fails is restarted by its own supervisor
// while the others serve. At most MaxQueue requests wait, the rest are
// refused at once (ErrQueueFull); a request whose context ends leaves the
// queue; Drain sends every waiter away (ErrDraining). How requests are
// spread over engines: docs/serve.md ("Several engines").
package pool

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/supervise"
)

// Member is one engine of a pool and what keeps it serving.
// engine/supervise's Supervisor is one.
type Member interface {
	// Engine reaches the current engine's speech.
	Engine() engine.Speech
	// Status reports its state; the pool hands out only ready engines.
	Status() supervise.Status
	// EngineFailed is told that a call into the engine failed.
	EngineFailed(err error)
	// InUse holds the engine in use until done is called: a lease holds
	// it from its handing out to its release, so that an engine unloaded
	// when idle (a Supervisor with KeepAlive) is not unloaded between one
	// request and the next. done may be nil.
	InUse() (done func())
	// Starts counts the engine's starts: a start, be it a restart after a
	// failure or a load after an unload for idleness, empties the
	// engine's prefix cache. A member that never starts its engine again
	// returns 0.
	Starts() uint64
	// Loaded reports whether the engine holds the model. An unloaded
	// engine loads on demand, so it is handed out, but last.
	Loaded() bool
}

var _ Member = (*supervise.Supervisor)(nil)

// Policy is how the pool picks among idle engines.
type Policy string

// Policies.
const (
	// Affinity prefers an idle engine that holds the request's voice, and
	// waits up to AffinityWait for a busy one that does.
	Affinity Policy = "affinity"
	// RoundRobin takes the next idle engine in turn, whatever it holds
	// (kept for comparison and for engines without a prefix cache).
	RoundRobin Policy = "round-robin"
)

// Policies lists the policies by name.
var Policies = []Policy{Affinity, RoundRobin}

// Defaults of Options.
const (
	DefaultAffinityWait = 250 * time.Millisecond
	DefaultWarmVoices   = 2
	// poll is how often waiters look again for an engine that became
	// ready without a release telling them.
	poll = 100 * time.Millisecond
)

// Options configure a Pool.
type Options struct {
	// MaxQueue is how many requests may wait; 0 none (a request that
	// finds no idle engine is refused at once).
	MaxQueue int
	// AffinityWait is the longest a request waits for a busy engine that
	// holds its voice while another is idle; 0 means DefaultAffinityWait,
	// negative no wait.
	AffinityWait time.Duration
	// WarmVoices is how many voices an engine keeps warm (its prefix
	// cache); 0 means DefaultWarmVoices, negative none.
	WarmVoices int
	// Policy is Affinity when empty.
	Policy Policy
}

// ErrQueueFull is returned by Acquire when MaxQueue requests wait already.
var ErrQueueFull = errors.New("pool: the queue is full")

// ErrDraining is returned by Acquire once Drain has run.
var ErrDraining = errors.New("pool: the server is stopping")

// ErrNoEngine is returned to the waiters when every engine has failed (its
// supervisor gave up for now; see supervise.Status's phase "failed").
var ErrNoEngine = errors.New("pool: every engine has failed")

// slot is one engine and what the pool knows of it.
type slot struct {
	name     string
	m        Member
	busy     bool
	voices   []string // warm voices, most recent first (see warmLocked)
	starts   uint64   // the engine's start they were prefilled in (see Member.Starts)
	lastUsed time.Time
	served   uint64
	warmHits uint64
	hold     func() // ends the lease's hold on the engine (see Member.InUse)

	// the member's state at the last lookLocked, for the decisions of one
	// dispatch
	ready, failed, unloaded bool
}

// waiter is one request in the queue; done is closed once it has an
// engine (got) or was sent away (err).
type waiter struct {
	voice   string
	arrived time.Time
	done    chan struct{}
	got     *slot
	warm    bool
	err     error
}

// Pool dispatches requests to its engines. Create it with New; it is safe
// for concurrent use.
type Pool struct {
	opts  Options
	slots []*slot

	mu       sync.Mutex
	waiting  *list.List // of *waiter
	draining bool
	next     int // round robin: where the next search begins
	timer    *time.Timer
}

// Named is a member with the name it is reported under (e.g. "gpu0-0").
type Named struct {
	Name   string
	Member Member
}

// New returns a pool of members, dispatching by opts.
func New(members []Named, opts Options) (*Pool, error) {
	if len(members) == 0 {
		return nil, errors.New("pool: no engines")
	}
	switch opts.Policy {
	case "":
		opts.Policy = Affinity
	case Affinity, RoundRobin:
	default:
		return nil, fmt.Errorf("pool: policy %q: want %s or %s", opts.Policy, Affinity, RoundRobin)
	}
	if opts.AffinityWait == 0 {
		opts.AffinityWait = DefaultAffinityWait
	}
	if opts.WarmVoices == 0 {
		opts.WarmVoices = DefaultWarmVoices
	}
	opts.MaxQueue = max(opts.MaxQueue, 0)
	p := &Pool{opts: opts, waiting: list.New()}
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m.Name] {
			return nil, fmt.Errorf("pool: two engines named %q", m.Name)
		}
		seen[m.Name] = true
		p.slots = append(p.slots, &slot{name: m.Name, m: m.Member})
	}
	return p, nil
}

// Options returns the pool's options, defaults filled in.
func (p *Pool) Options() Options { return p.opts }

// Lease is an engine handed to one request. Release it when the request
// is done with the engine.
type Lease struct {
	p    *Pool
	s    *slot
	warm bool
	once sync.Once
}

// Engine is the leased engine.
func (l *Lease) Engine() engine.Speech { return l.s.m.Engine() }

// Name is the leased engine's name.
func (l *Lease) Name() string { return l.s.name }

// Warm reports whether the engine held the request's voice when it was
// handed out.
func (l *Lease) Warm() bool { return l.warm }

// Failed tells the engine's supervisor that a call into it failed; an
// engine that is restarted comes back with its prefix cache empty.
func (l *Lease) Failed(err error) {
	l.s.m.EngineFailed(err)
	if !l.s.m.Status().Ready {
		l.p.mu.Lock()
		l.s.voices = nil
		l.p.mu.Unlock()
	}
}

// Release gives the engine back to the pool; later calls do nothing.
func (l *Lease) Release() {
	l.once.Do(func() {
		p := l.p
		p.mu.Lock()
		defer p.mu.Unlock()
		l.s.busy = false
		l.s.lastUsed = time.Now()
		done := l.s.hold
		l.s.hold = nil
		p.dispatchLocked()
		if done != nil {
			// after the next waiter, if any, took the engine and its own
			// hold: an engine unloaded when idle stays loaded between them
			done()
		}
	})
}

// Acquire waits, first in first out, for an engine for voice (a key of
// the voice and the references the engine prefills: the same voice gives
// the same key) and returns it leased. It returns ErrQueueFull at once
// when MaxQueue requests wait already and no engine is idle, ErrDraining
// once Drain has run and no engine is idle, or ctx's error when ctx ends
// first (the request then leaves the queue).
func (p *Pool) Acquire(ctx context.Context, voice string) (*Lease, error) {
	p.mu.Lock()
	w := &waiter{voice: voice, arrived: time.Now(), done: make(chan struct{})}
	el := p.waiting.PushBack(w)
	if p.draining {
		p.lookLocked()
	} else {
		p.dispatchLocked()
	}
	if w.got == nil && w.err == nil && (p.draining || p.waiting.Len() > p.opts.MaxQueue) {
		// a request that may not wait takes any idle engine, warm or not,
		// or is sent away: over the bound, and once Drain has run (a
		// stopping server still serves a request that finds an engine
		// free, which a load balancer that has not yet seen /ready turn
		// 503 sends)
		s := p.pickLocked(w, true)
		if s == nil {
			p.waiting.Remove(el)
			err := ErrQueueFull
			if p.draining {
				err = ErrDraining
			}
			p.mu.Unlock()
			return nil, err
		}
		p.assignLocked(el, s)
	}
	p.mu.Unlock()

	select {
	case <-w.done:
	case <-ctx.Done():
		p.mu.Lock()
		select {
		case <-w.done: // handed an engine (or sent away) just as ctx ended
			p.mu.Unlock()
			if w.got != nil {
				(&Lease{p: p, s: w.got}).Release()
			}
		default:
			p.waiting.Remove(el)
			p.mu.Unlock()
		}
		return nil, ctx.Err()
	}
	if w.err != nil {
		return nil, w.err
	}
	return &Lease{p: p, s: w.got, warm: w.warm}, nil
}

// dispatchLocked hands idle engines to waiters in queue order, and has the
// queue looked at again when a waiter's wait for a warm engine ends or an
// engine may have become ready. p.mu is held.
func (p *Pool) dispatchLocked() {
	if p.waiting.Len() == 0 {
		return
	}
	p.lookLocked()
	if !slices.ContainsFunc(p.slots, func(s *slot) bool { return !s.failed }) {
		for el := p.waiting.Front(); el != nil; el = p.waiting.Front() {
			w := p.waiting.Remove(el).(*waiter)
			w.err = ErrNoEngine
			close(w.done)
		}
		return
	}
	next := time.Duration(-1)
	for el := p.waiting.Front(); el != nil; {
		after := el.Next()
		w := el.Value.(*waiter)
		if s := p.pickLocked(w, false); s != nil {
			p.assignLocked(el, s)
		} else if left := p.opts.AffinityWait - time.Since(w.arrived); left > 0 && p.idleLocked() {
			if next < 0 || left < next {
				next = left
			}
		}
		el = after
	}
	if p.waiting.Len() == 0 {
		return
	}
	if next < 0 && !slices.ContainsFunc(p.slots, func(s *slot) bool { return !s.ready }) {
		return // every engine serves: the next release looks again
	}
	if next < 0 || next > poll {
		next = poll
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(next, p.kick)
	} else {
		p.timer.Reset(next)
	}
}

func (p *Pool) kick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dispatchLocked()
}

// assignLocked hands s to the waiter at el.
func (p *Pool) assignLocked(el *list.Element, s *slot) {
	w := p.waiting.Remove(el).(*waiter)
	warm := slices.Contains(s.voices, w.voice)
	if s.unloaded {
		// the request loads the engine: that start's prefix cache begins
		// empty and with the request's voice
		warm, s.voices, s.starts = false, nil, s.m.Starts()+1
	}
	w.got, w.warm = s, warm
	s.busy = true
	s.hold = s.m.InUse()
	s.served++
	if w.warm {
		s.warmHits++
	}
	if keep := p.opts.WarmVoices; keep > 0 {
		if i := slices.Index(s.voices, w.voice); i >= 0 {
			s.voices = slices.Delete(s.voices, i, i+1)
		}
		s.voices = slices.Insert(s.voices, 0, w.voice)
		s.voices = s.voices[:min(len(s.voices), keep)]
	}
	close(w.done)
}

// warmLocked returns the voices s's engine holds warm, forgetting those of
// an earlier start of the engine first (s.starts runs one ahead while the
// engine loads for the request handed it). p.mu is held.
func (s *slot) warmLocked() []string {
	if n := s.m.Starts(); n > s.starts {
		s.voices, s.starts = nil, n
	}
	return s.voices
}

// lookLocked reads each member's state once (a member's Status and Loaded
// take its own lock), and forgets the voices of an engine started again.
// p.mu is held.
func (p *Pool) lookLocked() {
	for _, s := range p.slots {
		st := s.m.Status()
		s.ready, s.failed, s.unloaded = st.Ready, st.Phase == supervise.PhaseFailed, !s.m.Loaded()
		s.warmLocked()
	}
}

// available reports whether s can take a request now, as of the last
// lookLocked.
func available(s *slot) bool { return !s.busy && (s.ready || s.unloaded) }

func (p *Pool) idleLocked() bool {
	return slices.ContainsFunc(p.slots, available)
}

// pickLocked chooses an idle engine for w, or none: under Affinity, one
// that holds w's voice; else, once w has waited AffinityWait, or at once
// when no ready engine holds the voice (or force is set), the idle engine
// whose warm voices the other waiters want least, loaded before unloaded,
// the longest idle first. Under RoundRobin, the next idle engine in turn.
// It goes by the engines' state at the last lookLocked.
func (p *Pool) pickLocked(w *waiter, force bool) *slot {
	if p.opts.Policy == RoundRobin {
		for i := range p.slots {
			k := (p.next + i) % len(p.slots)
			if available(p.slots[k]) {
				p.next = k + 1
				return p.slots[k]
			}
		}
		return nil
	}
	var idle []*slot
	warmBusy := false
	for _, s := range p.slots {
		warm := slices.Contains(s.voices, w.voice)
		switch {
		case available(s) && warm && !s.unloaded:
			return s
		case available(s):
			idle = append(idle, s)
		case warm && s.ready:
			warmBusy = true
		}
	}
	if len(idle) == 0 {
		return nil
	}
	if warmBusy && !force && time.Since(w.arrived) < p.opts.AffinityWait {
		return nil
	}
	wanted := func(s *slot) int {
		n := 0
		for el := p.waiting.Front(); el != nil; el = el.Next() {
			if o := el.Value.(*waiter); o != w && slices.Contains(s.voices, o.voice) {
				n++
			}
		}
		return n
	}
	best := idle[0]
	for _, s := range idle[1:] {
		bl, sl := !best.unloaded, !s.unloaded
		bw, sw := wanted(best), wanted(s)
		switch {
		case bl != sl:
			if sl {
				best = s
			}
		case bw != sw:
			if sw < bw {
				best = s
			}
		case slices.Contains(s.voices, w.voice) && !slices.Contains(best.voices, w.voice):
			best = s // warm but unloaded: its cache is gone, yet no worse
		case s.lastUsed.Before(best.lastUsed):
			best = s
		}
	}
	return best
}

// Drain sends every waiting request away with ErrDraining, and every later
// one that finds no engine idle; requests holding an engine keep it.
func (p *Pool) Drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draining = true
	for el := p.waiting.Front(); el != nil; el = p.waiting.Front() {
		w := p.waiting.Remove(el).(*waiter)
		w.err = ErrDraining
		close(w.done)
	}
}

// Draining reports whether Drain has run.
func (p *Pool) Draining() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.draining
}

// Depth is the number of requests waiting for an engine.
func (p *Pool) Depth() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting.Len()
}

// Len is the number of engines.
func (p *Pool) Len() int { return len(p.slots) }

// EngineState is one engine as the pool reports it (drama serve's GET
// /ready lists them under per_engine, GET /metrics by engine): its name,
// its supervisor's Status, whether it serves a request now, and what the
// pool handed it.
type EngineState struct {
	Name string `json:"name"`
	supervise.Status
	Busy bool `json:"busy"`
	// Voices are the voices it holds warm, most recent first.
	Voices []string `json:"-"`
	// Served counts the requests it was handed; WarmHits those that found
	// their voice warm.
	Served   uint64 `json:"-"`
	WarmHits uint64 `json:"-"`
}

// Engines reports every engine, in the pool's order.
func (p *Pool) Engines() []EngineState {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]EngineState, len(p.slots))
	for i, s := range p.slots {
		out[i] = EngineState{Name: s.name, Status: s.m.Status(), Busy: s.busy,
			Voices: slices.Clone(s.warmLocked()), Served: s.served, WarmHits: s.warmHits}
	}
	return out
}

// Ready is the number of engines ready to serve.
func (p *Pool) Ready() int {
	n := 0
	for _, s := range p.slots {
		if s.m.Status().Ready {
			n++
		}
	}
	return n
}

// Status is the pool's state as one: ready while any engine is; else the
// state of the first engine that is not failed (it may still serve), or of
// the first engine. Restarts are summed over the engines.
func (p *Pool) Status() supervise.Status {
	var first, live *supervise.Status
	restarts := 0
	for i, s := range p.slots {
		st := s.m.Status()
		restarts += st.Restarts
		switch {
		case st.Ready:
			if live == nil || !live.Ready {
				live = &st
			}
		case st.Phase != supervise.PhaseFailed && live == nil:
			live = &st
		}
		if i == 0 {
			first = &st
		}
	}
	st := *first
	if live != nil {
		st = *live
	}
	st.Restarts = restarts
	return st
}

// Any returns an engine that forwards each call to a ready engine of the
// pool (the first one, else the first engine), outside the queue: for
// calls that make no speech, such as Describe, Voices and Encode.
func (p *Pool) Any() engine.Speech { return anyEngine{p} }

type anyEngine struct{ p *Pool }

var _ engine.Speech = anyEngine{}

func (a anyEngine) pick() engine.Speech {
	for _, s := range a.p.slots {
		if s.m.Status().Ready {
			return s.m.Engine()
		}
	}
	return a.p.slots[0].m.Engine()
}

func (a anyEngine) Describe(ctx context.Context) (engine.Description, error) {
	return a.pick().Describe(ctx)
}

func (a anyEngine) Voices(ctx context.Context) ([]engine.Voice, error) { return a.pick().Voices(ctx) }

func (a anyEngine) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	return a.pick().Synthesize(ctx, req)
}

func (a anyEngine) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	return a.pick().Encode(ctx, req, progress)
}

// Supervised is a member the pool starts, watches, restarts and stops:
// engine/supervise's Supervisor is one.
type Supervised interface {
	Member
	Start(ctx context.Context) error
	Restart(ctx context.Context) error
	Watch(ctx context.Context, interval time.Duration)
	Stop(ctx context.Context)
}

var _ Supervised = (*supervise.Supervisor)(nil)

// Start starts the supervised engines one after another, so that each
// one's memory admission sees the memory of those before it, calling
// started after each; waiters are served as soon as the first is ready. It
// returns the first error, naming the engine when there are several.
func (p *Pool) Start(ctx context.Context, started func(name string)) error {
	for _, s := range p.slots {
		sup, ok := s.m.(Supervised)
		if !ok {
			continue
		}
		if err := sup.Start(ctx); err != nil {
			if len(p.slots) > 1 {
				return fmt.Errorf("engine %s: %w", s.name, err)
			}
			return err
		}
		p.kick()
		if started != nil {
			started(s.name)
		}
	}
	return nil
}

// Watch polls each supervised engine's health every interval until ctx
// ends (see supervise.Supervisor.Watch); it returns at once.
func (p *Pool) Watch(ctx context.Context, interval time.Duration) {
	for _, s := range p.slots {
		if sup, ok := s.m.(Supervised); ok {
			go sup.Watch(ctx, interval)
		}
	}
}

// Restart starts every supervised engine again, one after another (a
// catalog engine reads a newly published voice this way), and returns the
// first error. Their prefix caches start empty.
func (p *Pool) Restart(ctx context.Context) error {
	for _, s := range p.slots {
		sup, ok := s.m.(Supervised)
		if !ok {
			continue
		}
		p.mu.Lock()
		s.voices = nil
		p.mu.Unlock()
		if err := sup.Restart(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops every supervised engine at once and waits for them (within
// ctx); no restart follows.
func (p *Pool) Stop(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range p.slots {
		if sup, ok := s.m.(Supervised); ok {
			wg.Add(1)
			go func() { defer wg.Done(); sup.Stop(ctx) }()
		}
	}
	wg.Wait()
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
}
