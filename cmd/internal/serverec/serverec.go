// Package serverec records the running drama serve processes of a root, so
// that drama status can list them and a second drama serve can name the one
// already serving.
//
// Each drama serve writes <root>/run/serve-<pid>.json when it starts
// listening and removes it when it stops. A record whose process is gone, or
// is another program now holding the same pid, is stale: List skips it and
// Prune removes it.
package serverec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/internal/proc"
)

// DefaultAddr is where drama serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8793"

// Record describes one running drama serve.
type Record struct {
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time,omitempty"` // as /proc/PID/stat reports it; 0 where unknown
	Addr      string    `json:"addr"`                 // host:port it listens on
	Variant   string    `json:"variant"`
	Root      string    `json:"root"`
	Engine    string    `json:"engine,omitempty"` // the engine plugin's name (cuda, metal)
	Started   time.Time `json:"started"`
	LogFile   string    `json:"log_file,omitempty"`
	// EngineLog is the first engine's native log: the one log a record
	// written before drama serve ran several engines names. Engines names
	// them all.
	EngineLog string `json:"engine_log,omitempty"`
	// Engines are the engines drama serve runs, in order (one, or those of
	// --gpus and --engines-per-gpu), each with its native engine's log.
	Engines []EngineLog `json:"engines,omitempty"`
	// KeepAlive is drama serve's --keep-alive: how long an idle engine
	// stays loaded ("forever", or a duration).
	KeepAlive string `json:"keep_alive,omitempty"`
	// Grace is drama serve's --grace (a duration): how long, after
	// SIGTERM, the requests in flight may finish; drama stop waits for it.
	Grace string `json:"grace,omitempty"`
}

// EngineLog names one engine of a drama serve (as GET /ready's per_engine
// and the engine label of /metrics name it) and its native engine's log.
type EngineLog struct {
	Name string `json:"name"`
	Log  string `json:"log"`
}

// EngineLogs returns the engines of rec with their logs: Engines, or for a
// record written before drama serve named each engine, its one EngineLog
// under no name.
func (rec Record) EngineLogs() []EngineLog {
	if len(rec.Engines) > 0 || rec.EngineLog == "" {
		return rec.Engines
	}
	return []EngineLog{{Log: rec.EngineLog}}
}

// Dir returns the directory of a root's serve records.
func Dir(root string) string { return filepath.Join(root, "run") }

// Path returns where the record of pid lives under root.
func Path(root string, pid int) string {
	return filepath.Join(Dir(root), "serve-"+strconv.Itoa(pid)+".json")
}

// Write records rec under root (temp file, fsync, rename) and returns its
// path. The records that dead runs left (a drama serve killed with
// SIGKILL removes none) are removed first.
func Write(root string, rec Record) (string, error) {
	if rec.StartTime == 0 {
		rec.StartTime = StartTime(rec.PID)
	}
	if err := os.MkdirAll(Dir(root), 0o700); err != nil {
		return "", fmt.Errorf("serve record: %w", err)
	}
	if _, err := Prune(root); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", fmt.Errorf("serve record: %w", err)
	}
	path := Path(root, rec.PID)
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("serve record: %w", err)
	}
	return path, nil
}

// Remove deletes the record of pid under root; a missing record is no error.
func Remove(root string, pid int) error {
	if err := os.Remove(Path(root, pid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("serve record: %w", err)
	}
	return nil
}

// List returns the records under root whose process still runs, oldest
// first. A record that cannot be read is skipped.
func List(root string) ([]Record, error) {
	recs, _, err := scan(root)
	return recs, err
}

// Prune removes the records under root whose process is gone and returns
// how many it removed.
func Prune(root string) (int, error) {
	_, stale, err := scan(root)
	n := 0
	for _, p := range stale {
		if os.Remove(p) == nil {
			n++
		}
	}
	return n, err
}

func scan(root string) (live []Record, stale []string, err error) {
	entries, err := os.ReadDir(Dir(root))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("serve records: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "serve-") || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(Dir(root), name)
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			continue
		}
		var rec Record
		if json.Unmarshal(b, &rec) != nil || rec.PID <= 0 {
			stale = append(stale, path)
			continue
		}
		if !Alive(rec) {
			stale = append(stale, path)
			continue
		}
		live = append(live, rec)
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Started.Before(live[j].Started) })
	return live, stale, nil
}

// Alive reports whether rec's process still runs and is the same process
// (same start time, where the OS reports one).
func Alive(rec Record) bool {
	if rec.PID <= 0 {
		return false
	}
	if err := syscall.Kill(rec.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if rec.StartTime != 0 {
		if st := StartTime(rec.PID); st != 0 && st != rec.StartTime {
			return false
		}
	}
	return true
}

// StartTime returns a process's start time in clock ticks since boot from
// /proc/PID/stat, or 0 where that is not available.
func StartTime(pid int) uint64 {
	st, _ := proc.Read(pid)
	return st.StartTime
}
