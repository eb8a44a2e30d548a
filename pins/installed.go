package pins

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// Install is one variant installed under a root: a directory
// <root>/<variant> holding the lock file a verified fetch writes.
type Install struct {
	Variant string
	Dir     string
	Pins    *Pins // the lock file; nil when it does not parse
	Err     error // why the lock file does not parse
}

// Installed lists the variants installed under root, sorted by name: every
// directory of root holding LockFileName. A lock file that does not parse
// is listed with its error.
func Installed(root string) ([]Install, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Install
	for _, e := range entries {
		if !e.IsDir() || e.Name() == StateDirName {
			continue
		}
		dir := filepath.Join(root, e.Name())
		lock := filepath.Join(dir, LockFileName)
		if _, err := os.Stat(lock); err != nil {
			continue
		}
		in := Install{Variant: e.Name(), Dir: dir}
		in.Pins, in.Err = ReadFile(lock)
		if in.Pins != nil {
			in.Variant = in.Pins.Variant
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Variant < out[j].Variant })
	return out, nil
}

// VerifiedState is what the verified-state record of a directory says of a
// file list, without reading any file's content.
type VerifiedState struct {
	// Level is sha256 when the record vouches for every file (each
	// unchanged since it was hashed), size when every file is present
	// with its pinned size, and empty when a file is missing or differs.
	Level Level `json:"level,omitempty"`
	// When is when the record was last written; zero without a record.
	When time.Time `json:"when,omitzero"`
	// Missing and Differ count files absent or of another size.
	Missing int `json:"missing,omitempty"`
	Differ  int `json:"size_mismatch,omitempty"`
}

// StateOf reads what dir's verified-state record and a stat of each file
// say of p: the cheap check drama list shows. It never hashes.
func StateOf(dir string, p *Pins) VerifiedState {
	var vs VerifiedState
	recPath := filepath.Join(dir, StateDirName, StateFileName)
	state := loadState(recPath)
	if fi, err := os.Stat(recPath); err == nil {
		vs.When = fi.ModTime().UTC()
	}
	hashed := 0
	for _, f := range p.Files {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		switch {
		case err != nil || !fi.Mode().IsRegular():
			vs.Missing++
			continue
		case fi.Size() != f.Size:
			vs.Differ++
			continue
		}
		if sum, ok := state.lookup(f.Path, identityOf(fi)); ok && sum == f.SHA256 {
			hashed++
		}
	}
	switch {
	case vs.Missing+vs.Differ > 0:
	case hashed == len(p.Files) && len(p.Files) > 0:
		vs.Level = LevelSHA256
	default:
		vs.Level = LevelSize
	}
	return vs
}

// FileID identifies a file's content on disk: its device and inode, so
// that hard links and symlinks to one file count once.
type FileID struct {
	Dev, Ino uint64
}

// IDOf returns the identity of fi's content and its hard-link count.
func IDOf(fi os.FileInfo) (FileID, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, uint64(st.Nlink)
	}
	return FileID{}, 1
}
