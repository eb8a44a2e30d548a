package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/voices"
)

// voiceFile is a small valid cloned voice id as the clone pipeline writes it.
func voiceFile(t *testing.T, id string) []byte {
	t.Helper()
	codes := make(voices.Codes, voices.NumCodebooks)
	for c := range codes {
		codes[c] = []int{c, c + 1, c + 2}
	}
	v := &voices.Voice{Format: voices.FormatCloned, ID: id, Name: "Voice " + id, Source: voices.SourceSynthetic,
		Created:    time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		References: []voices.Reference{{Text: "Hello there, " + id + ".", Samples: 3 * voices.SamplesPerFrame, Codes: codes}}}
	data, err := voices.Marshal(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func create(t *testing.T, dir, id string) {
	t.Helper()
	if err := atomicfile.CreateFile(filepath.Join(dir, id+".json"), voiceFile(t, id), 0o600); err != nil {
		t.Fatal(err)
	}
}

func listed(t *testing.T, s *Store, id string) bool {
	t.Helper()
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range list {
		if v.ID == id {
			return true
		}
	}
	return false
}

func isRunning(s *Store) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// within waits up to d for cond, polling.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// TestTwoHostsNotice: two stores on one directory, as two hosts sharing a
// file system, each kept fresh by Run: a voice one makes is listed by the
// other within the bound, and one it deletes leaves the other's list; with
// the file system's notices and with rescans alone.
func TestTwoHostsNotice(t *testing.T) {
	for _, noNotify := range []bool{false, true} {
		name := map[bool]string{false: "notices", true: "rescans"}[noNotify]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := Options{NoNotify: noNotify, Rescan: 100 * time.Millisecond}
			a, b := New(dir, opts), New(dir, opts)
			done := make(chan struct{}, 2)
			for _, s := range []*Store{a, b} {
				go func() { s.Run(ctx); done <- struct{}{} }()
			}
			if !within(5*time.Second, func() bool { return isRunning(a) && isRunning(b) }) {
				t.Fatal("Run never started")
			}
			if listed(t, b, "anna") {
				t.Fatal("listed before it was made")
			}
			began := time.Now()
			create(t, dir, "anna")
			// notices come at once; rescans within their period; 5 s is
			// the bound a client is promised ("within a few seconds")
			if !within(5*time.Second, func() bool { return listed(t, b, "anna") }) {
				t.Fatalf("the other host did not list a new voice within 5 s (%s)", name)
			}
			t.Logf("%s: new voice listed by the other store after %v", name, time.Since(began).Round(time.Millisecond))
			if err := a.Delete("anna"); err != nil {
				t.Fatal(err)
			}
			if !within(5*time.Second, func() bool { return !listed(t, b, "anna") }) {
				t.Fatalf("the other host still lists a deleted voice after 5 s (%s)", name)
			}
			cancel()
			<-done
			<-done
		})
	}
}

// TestLookupReadsTheStore: a voice made or deleted on another host is
// found, or not, by Lookup and Read at once, before any notice or rescan.
func TestLookupReadsTheStore(t *testing.T) {
	dir := t.TempDir()
	s := New(dir, Options{})
	s.running, s.scanned = true, true // as under Run, with no rescan due
	if _, ok := s.Lookup("anna"); ok {
		t.Fatal("found before it was made")
	}
	create(t, dir, "anna")
	if listed(t, s, "anna") {
		t.Fatal("the test needs an index that has not seen the voice")
	}
	sum, ok := s.Lookup("anna")
	if !ok || sum.Name != "Voice anna" || sum.References != 1 || sum.Frames != 3 {
		t.Fatalf("Lookup: %+v, %v", sum, ok)
	}
	if !listed(t, s, "anna") {
		t.Error("a voice Lookup found is not in the index")
	}
	os.Remove(filepath.Join(dir, "anna.json")) // another host deletes it
	if _, err := s.Read("anna"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read of a voice deleted elsewhere: %v, want ErrNotFound", err)
	}
	if listed(t, s, "anna") {
		t.Error("a voice Read found deleted is still in the index")
	}
	if err := s.Delete("anna"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete of a voice deleted elsewhere: %v, want ErrNotFound", err)
	}
	if _, ok := s.Lookup("../etc/passwd"); ok {
		t.Error("a path that is no id was looked up")
	}
}

// TestScanSkips: temporaries, files that are no voice, voices that do not
// parse and a voice whose file names another id are not listed.
func TestScanSkips(t *testing.T) {
	dir := t.TempDir()
	create(t, dir, "anna")
	os.WriteFile(filepath.Join(dir, ".bert.json.tmp-1-2-3"), voiceFile(t, "bert"), 0o600)
	os.WriteFile(filepath.Join(dir, "spoken.list"), []byte("anna\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(dir, "carl.json"), voiceFile(t, "dora"), 0o600)
	list, err := New(dir, Options{}).List()
	if err != nil || len(list) != 1 || list[0].ID != "anna" {
		t.Fatalf("List: %+v, %v; want anna alone", list, err)
	}
}
