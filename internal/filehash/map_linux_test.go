package filehash

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readCalls returns this process's count of read system calls so far.
func readCalls(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("no read-call count on this system: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "syscr: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("/proc/self/io has no syscr line")
	return 0
}

// TestSHA256MapsLargeFiles counts the read system calls of hashing a
// 64 MiB file. A worker blocked in a read of a large block gives its
// processor slot to the scheduler, which starts a spinning thread that
// competes with the hashing workers; hashing a mapped file makes no read
// call at all (the count allows a few for the runtime and /proc itself).
func TestSHA256MapsLargeFiles(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	writeRandom(t, name, 64<<20)
	before := readCalls(t)
	if _, _, err := SHA256(context.Background(), name, nil); err != nil {
		t.Fatal(err)
	}
	after := readCalls(t)
	if n := after - before - 1; n > 8 { // one read is readCalls' own
		t.Fatalf("hashing a 64 MiB file made %d read calls; want it mapped, with at most 8", n)
	}
}

// rssFile returns the process's resident file-backed memory (RssFile of
// /proc/self/status) in bytes.
func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("/proc/self/status has no RssFile line")
	return 0
}

// TestSHA256BoundsResident hashes a 128 MiB file in the page cache and
// samples the process's resident file pages after every block: mapping the
// file one window at a time, each unmapped once hashed, keeps them within
// a window (plus slack), where a mapping of the whole file would hold all
// 128 MiB by the end.
func TestSHA256BoundsResident(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 1<<20)
	for i := range 128 {
		block[0] = byte(i)
		f.Write(block)
	}
	f.Close()
	os.ReadFile(name) // into the page cache (and this buffer is garbage)
	base := rssFile(t)
	var peak int64
	if _, _, err := SHA256(context.Background(), name, func(int64) { peak = max(peak, rssFile(t)-base) }); err != nil {
		t.Fatal(err)
	}
	if peak > mapWindow+8<<20 {
		t.Fatalf("resident file pages grew by %d MiB while hashing a 128 MiB file; want at most a %d MiB window", peak>>20, mapWindow>>20)
	}
	t.Logf("resident file pages grew by at most %d MiB", peak>>20)
}
