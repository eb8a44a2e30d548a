// Package store keeps a directory of voice files that several drama serve
// may share: on one host, or on hosts that mount one file system (NFS,
// CephFS, a Kubernetes ReadWriteMany volume). It holds an index of the
// voices there, kept fresh by the file system's notices (inotify, kqueue)
// where they see every change and by a rescan at a bounded period where
// they do not (a network file system tells a host nothing of what another
// host did); it looks one voice up by reading the directory itself, for a
// voice another host made since; and it deletes.
//
// A voice is the file <dir>/<id>.json. Writers make it with
// atomicfile.Create (engine/clone does), so a reader on any host sees a
// whole file or none, and of two writers of one id exactly one wins.
package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/drama-tts/drama/voices"
)

// ErrNotFound is a voice that is not in the store (or no longer).
var ErrNotFound = errors.New("voice not found")

// DefaultRescan is the period of the rescan where the file system's
// notices do not see other hosts' changes.
const DefaultRescan = 2 * time.Second

// safetyRescan is the period of the rescan where notices are trusted: it
// catches what a full notice queue dropped.
const safetyRescan = 30 * time.Second

// Options configure how a store notices changes.
type Options struct {
	// Rescan is the period of the rescan where notices cannot be trusted
	// (a network file system, or NoNotify); 0: DefaultRescan.
	Rescan time.Duration
	// NoNotify does without the file system's notices: rescans alone,
	// as on a network file system.
	NoNotify bool
	// Logger, if set, is told how the store notices changes and of
	// notices that failed.
	Logger *slog.Logger
}

// Summary is what the index keeps of a voice: what a listing shows, not
// its codes (read again from the file when spoken).
type Summary struct {
	ID, Name   string
	Source     voices.SourceKind
	Consent    *voices.Consent
	References int
	Frames     int
	// Note and Created are the file's own (localrouter-voice-codes/1);
	// Updated is when the file was last written.
	Note    string
	Created time.Time
	Updated time.Time
}

// entry is one file of the index: its summary, or none when it does not
// parse (kept so that the rescan does not parse it again until it changes).
type entry struct {
	info    fs.FileInfo
	summary *Summary
}

// Store is a directory of voice files and its index. Its methods are safe
// for concurrent use.
type Store struct {
	dir  string
	opts Options

	mu      sync.Mutex
	index   map[string]*entry
	running bool // Run keeps the index fresh; without it List reads the directory
	scanned bool
}

// New returns the store of dir; nothing is read before the first use.
func New(dir string, opts Options) *Store {
	if opts.Rescan <= 0 {
		opts.Rescan = DefaultRescan
	}
	return &Store{dir: dir, opts: opts, index: map[string]*entry{}}
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Path is the file of voice id; the id must pass voices.CheckID.
func (s *Store) Path(id string) (string, error) {
	if err := voices.CheckID(id); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	return filepath.Join(s.dir, id+".json"), nil
}

// idOf is the voice id of a file name in the directory, "" for a file
// that is no voice (a temporary, spoken.list, another name).
func idOf(name string) string {
	id, ok := strings.CutSuffix(filepath.Base(name), ".json")
	if !ok || voices.CheckID(id) != nil {
		return ""
	}
	return id
}

// List returns the voices of the index, by id. Without Run keeping the
// index fresh, it reads the directory first.
func (s *Store) List() ([]Summary, error) {
	s.mu.Lock()
	stale := !s.running || !s.scanned
	s.mu.Unlock()
	if stale {
		if err := s.Scan(); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Summary, 0, len(s.index))
	for _, e := range s.index {
		if e.summary != nil {
			out = append(out, *e.summary)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Lookup reads the store itself for voice id, not the index: another host
// may have made or deleted it since the index last looked. The index
// follows what it finds.
func (s *Store) Lookup(id string) (Summary, bool) {
	p, err := s.Path(id)
	if err != nil {
		return Summary{}, false
	}
	fi, err := os.Stat(p)
	if err != nil {
		s.forget(id)
		return Summary{}, false
	}
	e := s.refresh(id, p, fi)
	if e.summary == nil {
		return Summary{}, false
	}
	return *e.summary, true
}

// Read reads voice id from its file. A voice deleted, on this host or
// another, is ErrNotFound, and leaves the index.
func (s *Store) Read(id string) (*voices.Voice, error) {
	p, err := s.Path(id)
	if err != nil {
		return nil, err
	}
	v, err := voices.ReadFile(p, nil)
	if errors.Is(err, fs.ErrNotExist) {
		s.forget(id)
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return v, err
}

// Delete removes voice id's file; ErrNotFound when there is none.
func (s *Store) Delete(id string) error {
	p, err := s.Path(id)
	if err != nil {
		return err
	}
	err = os.Remove(p)
	s.forget(id)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return err
}

func (s *Store) forget(id string) {
	s.mu.Lock()
	delete(s.index, id)
	s.mu.Unlock()
}

// refresh brings the index's entry for id in line with the file p of
// info fi, parsing it only when it changed.
func (s *Store) refresh(id, p string, fi fs.FileInfo) *entry {
	s.mu.Lock()
	old := s.index[id]
	s.mu.Unlock()
	if old != nil && same(old.info, fi) {
		return old
	}
	e := &entry{info: fi}
	if v, err := voices.ReadFile(p, nil); err == nil && v.ID == id {
		frames := v.TotalFrames()
		e.summary = &Summary{ID: v.ID, Name: v.Name, Source: v.Source, Consent: v.Consent, References: len(v.References), Frames: frames,
			Note: v.Note, Created: v.Created, Updated: fi.ModTime()}
	} else if errors.Is(err, fs.ErrNotExist) {
		s.forget(id)
		return e
	}
	s.mu.Lock()
	s.index[id] = e
	s.mu.Unlock()
	return e
}

// same reports whether two looks at a file saw the same file unchanged.
func same(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// Scan reads the directory and brings the whole index in line with it: new
// and changed files are parsed, deleted ones leave. A missing directory
// holds no voice.
func (s *Store) Scan() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("voice store %s: %w", s.dir, err)
	}
	seen := map[string]bool{}
	for _, de := range ents {
		id := idOf(de.Name())
		if id == "" || !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // deleted meanwhile
		}
		seen[id] = true
		s.refresh(id, filepath.Join(s.dir, de.Name()), fi)
	}
	s.mu.Lock()
	for id := range s.index {
		if !seen[id] {
			delete(s.index, id)
		}
	}
	s.scanned = true
	s.mu.Unlock()
	return nil
}

// notice says how the store notices changes on its directory: "inotify" (or the
// platform's notices) where they see every change, else "rescan".
func (s *Store) notice() (watch bool, why string) {
	switch {
	case s.opts.NoNotify:
		return false, "notices turned off"
	case remoteFS(s.dir):
		return false, "a network file system: notices do not see other hosts' changes"
	}
	return true, ""
}

// Run keeps the index fresh until ctx ends: the file system's notices
// where they see every change, with a rescan every 30 s for what a full
// notice queue drops; elsewhere a rescan every Options.Rescan. It creates
// the directory (mode 0700) if need be.
func (s *Store) Run(ctx context.Context) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("voice store: %w", err)
	}
	log := s.opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var events chan fsnotify.Event
	var errs chan error
	period := s.opts.Rescan
	if watch, why := s.notice(); watch {
		w, err := fsnotify.NewWatcher()
		if err == nil {
			err = w.Add(s.dir)
			if err != nil {
				w.Close()
			}
		}
		if err == nil {
			defer w.Close()
			events, errs, period = w.Events, w.Errors, safetyRescan
			log.Info("voice store: changes noticed as they happen", "dir", s.dir, "notices", "inotify", "rescan", period.String())
		} else {
			log.Warn("voice store: no file system notices, rescanning instead", "dir", s.dir, "err", err, "rescan", period.String())
		}
	} else {
		log.Info("voice store: rescanned at a period", "dir", s.dir, "why", why, "rescan", period.String())
	}
	if err := s.Scan(); err != nil {
		log.Warn("voice store: scan", "err", err)
	}
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := s.Scan(); err != nil {
				log.Warn("voice store: scan", "err", err)
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			s.noticed(ev.Name)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// a full queue: what was dropped is read now
			log.Warn("voice store: notices", "err", err)
			if err := s.Scan(); err != nil {
				log.Warn("voice store: scan", "err", err)
			}
		}
	}
}

// noticed refreshes the index for the file a notice named.
func (s *Store) noticed(name string) {
	id := idOf(name)
	if id == "" || filepath.Dir(name) != filepath.Clean(s.dir) {
		return
	}
	s.Lookup(id)
}
