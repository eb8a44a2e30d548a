package pins

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

// TestHashFileMapsLargeFiles counts the read system calls of hashing a
// 64 MiB file. A worker blocked in a read of a large block gives its
// processor slot to the scheduler, which starts a spinning thread that
// competes with the hashing workers; hashing a mapped file makes no read
// call at all (the count allows a few for the runtime and /proc itself).
func TestHashFileMapsLargeFiles(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	writeRandom(t, name, 64<<20)
	before := readCalls(t)
	if _, _, err := HashFile(context.Background(), name, nil); err != nil {
		t.Fatal(err)
	}
	after := readCalls(t)
	if n := after - before - 1; n > 8 { // one read is readCalls' own
		t.Fatalf("hashing a 64 MiB file made %d read calls; want it mapped, with at most 8", n)
	}
}
