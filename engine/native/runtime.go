package native

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// RuntimeFile is the runtime file the engine of flavor (cuda, metal; * in
// a glob pattern) keeps in its runtime directory dir.
func RuntimeFile(dir, flavor string) string { return filepath.Join(dir, "engine-"+flavor+".json") }

// LogFile is the log the engine of flavor writes in its runtime directory
// dir.
func LogFile(dir, flavor string) string { return filepath.Join(dir, "engine-"+flavor+".log") }

// RuntimeRecord names a running engine child, so a later start can find a
// leftover one after a crash of its supervisor.
type RuntimeRecord struct {
	PID        int       `json:"pid"`
	StartTime  uint64    `json:"start_time"` // as the OS reports it (clock ticks since boot on Linux)
	Exe        string    `json:"exe"`        // the executable as the OS reports it
	Port       int       `json:"port,omitempty"`
	Started    time.Time `json:"started"`
	Owner      int       `json:"owner"`       // the supervisor's pid
	OwnerStart uint64    `json:"owner_start"` // the supervisor's start time, as StartTime
}

// ErrInUse: the runtime file names an engine whose supervisor still runs.
var ErrInUse = errors.New("native: the engine named by the runtime file is still supervised")

// WriteRuntimeFile writes rec to path atomically.
func WriteRuntimeFile(path string, rec RuntimeRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("native: runtime file: %w", err)
	}
	return writeFile(path, append(b, '\n'), 0o600)
}

// ReadRuntimeFile reads a runtime file; a missing file is fs.ErrNotExist.
func ReadRuntimeFile(path string) (RuntimeRecord, error) {
	var rec RuntimeRecord
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, fmt.Errorf("native: runtime file: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.PID <= 0 {
		return rec, fmt.Errorf("native: runtime file %s: not a runtime record (remove it): %v", path, err)
	}
	return rec, nil
}

// Leftover says what StopLeftover found.
type Leftover struct {
	Found   bool   // a runtime file named a process
	Stopped bool   // that process was our engine child and was stopped
	Killed  bool   // it needed SIGKILL
	PID     int    // the pid named
	Reason  string // why nothing was signalled, when Found && !Stopped
}

// StopLeftover reads the runtime file at path and, when it names a process
// that is still the recorded engine (same executable and start time), stops
// its process group: SIGTERM, grace, SIGKILL. A process that does not match
// (a recycled pid) is never signalled. The file is removed afterwards.
func StopLeftover(path string, grace time.Duration) (Leftover, error) {
	rec, err := ReadRuntimeFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Leftover{}, nil
	}
	if err != nil {
		os.Remove(path)
		return Leftover{}, err
	}
	out := Leftover{Found: true, PID: rec.PID}
	if reason := identityMismatch(rec); reason != "" {
		out.Reason = reason
		return out, removeRuntime(path)
	}
	if ownerAlive(rec) {
		out.Reason = fmt.Sprintf("its supervisor, pid %d, still runs", rec.Owner)
		return out, fmt.Errorf("%w: engine pid %d of supervisor pid %d (%s); stop that one first or use another runtime directory",
			ErrInUse, rec.PID, rec.Owner, path)
	}
	out.Killed, err = stopGroup(rec, grace)
	if err != nil {
		return out, fmt.Errorf("native: stop leftover engine pid %d: %w", rec.PID, err)
	}
	out.Stopped = true
	return out, removeRuntime(path)
}

// identityMismatch returns why the process named by rec is not the
// recorded engine, or "" when it is.
func identityMismatch(rec RuntimeRecord) string {
	exe, start, err := procIdentity(rec.PID)
	switch {
	case err != nil:
		return fmt.Sprintf("pid %d is gone", rec.PID)
	case !sameExe(rec.Exe, exe):
		return fmt.Sprintf("pid %d is now %s, not %s", rec.PID, exe, rec.Exe)
	case start != rec.StartTime:
		return fmt.Sprintf("pid %d started at %d, not %d: a recycled pid", rec.PID, start, rec.StartTime)
	}
	return ""
}

// ownerAlive reports whether the supervisor named by rec, other than this
// process, still runs (same pid and start time).
func ownerAlive(rec RuntimeRecord) bool {
	if rec.Owner <= 0 || rec.Owner == os.Getpid() {
		return false
	}
	_, start, err := procIdentity(rec.Owner)
	return err == nil && start == rec.OwnerStart
}

// stopGroup signals the leftover's group, checking its identity again
// before the SIGKILL.
func stopGroup(rec RuntimeRecord, grace time.Duration) (killed bool, err error) {
	if err := signalGroup(rec.PID, sigTerm); err != nil {
		return false, err
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if identityMismatch(rec) != "" {
			return false, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	if identityMismatch(rec) != "" {
		return false, nil
	}
	if err := signalGroup(rec.PID, sigKill); err != nil {
		return true, err
	}
	for i := 0; i < 100 && identityMismatch(rec) == ""; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	return true, nil
}

func removeRuntime(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("native: runtime file: %w", err)
	}
	return nil
}
