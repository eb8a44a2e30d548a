// Package pooltest gives tests a real engine/pool over engines they hold
// (tests only): New builds the pool, and a Member is one engine whose
// status the test sets and which counts the failures reported to it.
package pooltest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/supervise"
)

// Member is one engine of a pool for tests: it reaches the speech it was
// given, reports the status the test last set (ready and loaded until
// then), and counts the failures reported to it. Its engine is never
// unloaded nor started again.
type Member struct {
	speech engine.Speech
	// OnFailure, when set before the pool serves, is told of each failure
	// reported to the member once it is counted: a test whose engine is
	// restarted after a failure sets a status there, as a supervisor
	// would.
	OnFailure func(err error)

	mu       sync.Mutex
	st       supervise.Status
	failures int
}

var _ pool.Member = (*Member)(nil)

// NewMember returns a member over speech, ready.
func NewMember(speech engine.Speech) *Member {
	return &Member{speech: speech, st: supervise.Status{Phase: supervise.PhaseReady, Ready: true, Loaded: true}}
}

// Engine is the speech the member was given.
func (m *Member) Engine() engine.Speech { return m.speech }

// Status is the status the test last set.
func (m *Member) Status() supervise.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st
}

// Set sets the member's status.
func (m *Member) Set(st supervise.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st = st
}

// EngineFailed counts the failure, then tells OnFailure.
func (m *Member) EngineFailed(err error) {
	m.mu.Lock()
	m.failures++
	m.mu.Unlock()
	if m.OnFailure != nil {
		m.OnFailure(err)
	}
}

// Failures is how many failures were reported to the member.
func (m *Member) Failures() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failures
}

// InUse holds nothing: the member's engine is never unloaded.
func (m *Member) InUse() func() { return nil }

// Starts is 0: the member's engine is never started again.
func (m *Member) Starts() uint64 { return 0 }

// Loaded is true: the member's engine is never unloaded.
func (m *Member) Loaded() bool { return true }

// New returns a pool of members, named gpu0-0, gpu1-0, ... in order (as
// drama serve names one engine on each GPU), dispatching by opts; it is
// stopped when the test ends.
func New(t testing.TB, opts pool.Options, members ...pool.Member) *pool.Pool {
	t.Helper()
	named := make([]pool.Named, len(members))
	for i, m := range members {
		named[i] = pool.Named{Name: fmt.Sprintf("gpu%d-0", i), Member: m}
	}
	p, err := pool.New(named, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background()) })
	return p
}
