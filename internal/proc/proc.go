// Package proc reads what /proc/PID/stat says of a process: its state, its
// parent and when it started. It is the one reader of that file in drama,
// imports nothing but the standard library, and every package may import
// it. Off Linux there is no /proc: Read fails with an error that wraps
// fs.ErrNotExist, and callers fall back on what the OS offers (a signal 0).
package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrFormat is wrapped by the error of a stat line that cannot be read: no
// command name in parentheses, or too few fields.
var ErrFormat = errors.New("proc: not a /proc/PID/stat line")

// Stat is the part of /proc/PID/stat that drama uses (fields 1, 3, 4 and 22
// of proc_pid_stat(5)).
type Stat struct {
	PID   int
	State byte // R, S, D, T, Z (a zombie), X (dead), ...
	PPID  int
	// StartTime is when the process started, in clock ticks after boot:
	// with the pid, it names one process even after the pid is reused.
	StartTime uint64
}

// Exited reports whether the process has stopped running: a zombie waiting
// to be reaped, or dead.
func (s Stat) Exited() bool { return s.State == 'Z' || s.State == 'X' }

// Read reads what /proc/PID/stat says of process pid. A pid that names no
// process, or a system without /proc, gives an error wrapping
// fs.ErrNotExist; a line that cannot be read, one wrapping ErrFormat.
//
// It reads the stat file of the process's main thread, /proc/PID/task/PID/stat,
// whose state, parent and start time are the process's own: the same as
// /proc/PID/stat on every kernel. A user-mode emulator (qemu-user, as
// make test-arm64 runs) answers /proc/self/stat and /proc/<its own
// pid>/stat itself, with a start time of its own making that no other
// process reads; the main thread's file it leaves to the kernel, so a
// process reads the start time that others read of it.
func Read(pid int) (Stat, error) {
	if pid <= 0 {
		return Stat{}, fmt.Errorf("proc: pid %d: %w", pid, os.ErrNotExist)
	}
	p := strconv.Itoa(pid)
	b, err := os.ReadFile("/proc/" + p + "/task/" + p + "/stat")
	if err != nil {
		return Stat{}, fmt.Errorf("proc: %w", err)
	}
	return Parse(b)
}

// Parse reads one /proc/PID/stat line. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so the fields
// after it are counted from the last ')'.
func Parse(line []byte) (Stat, error) {
	s := string(line)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return Stat{}, fmt.Errorf("%w: no command name in parentheses", ErrFormat)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return Stat{}, fmt.Errorf("%w: pid %q", ErrFormat, strings.TrimSpace(s[:open]))
	}
	f := strings.Fields(s[close+1:])
	// After the name: state is field 3, ppid field 4, starttime field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("%w: want 22 fields or more, got %d", ErrFormat, len(f)+2)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("%w: ppid %q", ErrFormat, f[1])
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("%w: starttime %q", ErrFormat, f[19])
	}
	return Stat{PID: pid, State: f[0][0], PPID: ppid, StartTime: start}, nil
}

// Mounted reports whether this system has /proc to read.
func Mounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// All returns the stat of every process /proc lists that is still there
// when read (none where there is no /proc).
func All() []Stat {
	paths, _ := filepath.Glob("/proc/[0-9]*")
	out := make([]Stat, 0, len(paths))
	for _, p := range paths {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		if st, err := Read(pid); err == nil {
			out = append(out, st)
		} // else gone meanwhile
	}
	return out
}
