// Package atomicfile writes files and directories so that a reader sees the
// old content or all of the new, never part of it: a temporary beside the
// target, the file synced, a rename over the target, the directory synced.
// Create is the write that never replaces: a link in place of the rename.
//
// Every temporary names its owner: ".NAME.tmp-PID-START-RANDOM", where PID is
// the writing process and START its start time. Sweep removes the
// temporaries whose owner is gone (no such process, or a process of that pid
// started at another time), so a run killed mid-write leaves nothing for
// ever; it never touches a live run's.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Marker sits between a target's name and its owner in a temporary's name:
// ".NAME" + Marker + "PID-START-RANDOM".
const Marker = ".tmp-"

var (
	selfOnce  sync.Once
	selfStart string
)

// self returns this process's pid and start time as they appear in its
// temporaries' names.
func self() (int, string) {
	selfOnce.Do(func() {
		s, ok := startTime(os.Getpid())
		if !ok {
			s = "0"
		}
		selfStart = s
	})
	return os.Getpid(), selfStart
}

// pattern is the os.CreateTemp pattern of a temporary for target.
func pattern(target string) string {
	pid, start := self()
	return "." + filepath.Base(target) + Marker + strconv.Itoa(pid) + "-" + start + "-*"
}

// Write creates a temporary file beside path, lets fill write it, gives it
// mode perm (0 means 0644), syncs and closes it, renames it over path and
// syncs the directory. When fill or any step fails the temporary is removed,
// path is untouched and the error is returned (fill's as it is). Before it
// starts it sweeps the temporaries a dead run left for path (see Sweep).
func Write(path string, perm os.FileMode, fill func(f *os.File) error) error {
	tmp, err := temp(path, perm, fill)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// Create is Write that never replaces: the synced temporary is linked to
// path (link(2) fails when path exists, on NFS too) and then removed, so of
// several writers racing for one path, on one host or on hosts sharing the
// file system, exactly one wins and a reader sees its whole file. When path
// exists the error wraps fs.ErrExist and path is untouched. A file system
// without hard links gets an error that says so.
func Create(path string, perm os.FileMode, fill func(f *os.File) error) error {
	tmp, err := temp(path, perm, fill)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("create %s: the file system must support hard links (link(2)) for a write that never replaces: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// CreateFile writes data to path as Create does.
func CreateFile(path string, data []byte, perm os.FileMode) error {
	return Create(path, perm, writeData(path, data))
}

// temp writes a synced, closed temporary beside path as Write describes and
// returns its name; on failure nothing is left.
func temp(path string, perm os.FileMode, fill func(f *os.File) error) (name string, err error) {
	_, _ = Sweep(filepath.Dir(path), filepath.Base(path)) // best effort: what a dead run left is no reason to fail
	f, err := os.CreateTemp(filepath.Dir(path), pattern(path))
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return "", err
	}
	if perm == 0 {
		perm = 0o644
	}
	if err := f.Chmod(perm); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", path, err)
	}
	return f.Name(), nil
}

// WriteFile writes data to path as Write does.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, writeData(path, data))
}

func writeData(path string, data []byte) func(f *os.File) error {
	return func(f *os.File) error {
		if _, err := f.Write(data); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
}

// TempDir creates an empty temporary directory beside target (mode 0755)
// for a whole directory to be built in and then moved with RenameDir.
// The caller removes it when the build fails. Before it starts it sweeps
// the temporaries a dead run left for target (see Sweep).
func TempDir(target string) (string, error) {
	target = filepath.Clean(target)
	_, _ = Sweep(filepath.Dir(target), filepath.Base(target)) // best effort, as in Write
	tmp, err := os.MkdirTemp(filepath.Dir(target), pattern(target))
	if err != nil {
		return "", fmt.Errorf("create a directory beside %s: %w", target, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it private
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// RenameDir moves the directory tmp (made by TempDir) to target and syncs
// their parent. Target must not exist or be an empty directory.
func RenameDir(tmp, target string) error {
	target = filepath.Clean(target)
	os.Remove(target) // an empty directory is replaced; any other stays and fails the rename
	if err := os.Rename(tmp, target); err != nil {
		return err
	}
	syncDir(filepath.Dir(target))
	return nil
}

// syncDir makes a rename in dir durable. Not every filesystem syncs
// directories; the rename is done either way.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Temp is one temporary found in a directory.
type Temp struct {
	Path   string // the temporary's path
	Target string // the name it was to be renamed to, in the same directory
	Pid    int    // its owner's pid; 0 when the name does not say (an older drama's)
	Start  string // its owner's start time
}

// Owned reports whether the name says who wrote the temporary.
func (t Temp) Owned() bool { return t.Pid > 0 }

// Alive reports whether the temporary's owner still runs. A temporary that
// does not name its owner counts as alive: nobody can say it is abandoned.
func (t Temp) Alive() bool {
	if !t.Owned() {
		return true
	}
	start, ok := startTime(t.Pid)
	if !ok {
		return false
	}
	return t.Start == "0" || start == "0" || start == t.Start
}

// Parse reads a temporary's file name (".NAME.tmp-PID-START-RANDOM", or an
// older drama's ".NAME.tmp-RANDOM" with no owner). ok is false for any other
// name.
func Parse(name string) (t Temp, ok bool) {
	base := filepath.Base(name)
	if !strings.HasPrefix(base, ".") {
		return Temp{}, false
	}
	i := strings.LastIndex(base, Marker)
	if i <= 1 {
		return Temp{}, false
	}
	t = Temp{Path: name, Target: filepath.Join(filepath.Dir(name), base[1:i])}
	f := strings.Split(base[i+len(Marker):], "-")
	if len(f) == 3 && f[2] != "" {
		if pid, err := strconv.Atoi(f[0]); err == nil && pid > 0 && digits(f[1]) {
			t.Pid, t.Start = pid, f[1]
		}
	}
	return t, true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Find lists the temporaries in dir. With base set, only those meant for
// dir/base. A missing dir holds none.
func Find(dir, base string) ([]Temp, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Temp
	for _, e := range ents {
		t, ok := Parse(filepath.Join(dir, e.Name()))
		if ok && (base == "" || filepath.Base(t.Target) == base) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Sweep removes the temporaries in dir (those meant for dir/base, or all
// when base is "") whose owner is gone: a run killed while writing. A live
// run's temporaries, and those that do not name their owner, are kept. It
// returns what it removed; files or directories alike.
func Sweep(dir, base string) ([]Temp, error) {
	temps, err := Find(dir, base)
	if err != nil {
		return nil, err
	}
	var gone []Temp
	var errs []error
	for _, t := range temps {
		if t.Alive() {
			continue
		}
		if err := os.RemoveAll(t.Path); err != nil {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, t)
	}
	return gone, errors.Join(errs...)
}
