package filehash

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/internal/emutest"
)

func writeRandom(t *testing.T, name string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSHA256Sizes checks SHA256's digest and size against crypto/sha256
// on both sides of the size from which files are mapped, with the progress
// calls adding up to the size.
func TestSHA256Sizes(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, hashBufSize - 1, hashBufSize + 1, 4<<20 - 1, 4 << 20, 4<<20 + 12345, 9 << 20} {
		name := filepath.Join(dir, "f")
		b := writeRandom(t, name, n)
		want := sha256.Sum256(b)
		var seen int64
		sum, size, err := SHA256(context.Background(), name, func(k int64) { seen += k })
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if sum != hex.EncodeToString(want[:]) || size != int64(n) || seen != int64(n) {
			t.Errorf("%d bytes: got %s, size %d, progress %d; want %x", n, sum, size, seen, want)
		}
	}
}

// TestSHA256Shrinks truncates a file while it is hashed: SHA256 must
// return an error (not crash on the fault past the new end) or, at least,
// never report the old size.
func TestSHA256Shrinks(t *testing.T) {
	emutest.SkipEmulated(t, "qemu-user reports a read of a mapped file past its end as a fault at address 0, which Go raises as a nil dereference, not as the fault the mapped hash recovers from")
	name := filepath.Join(t.TempDir(), "f")
	writeRandom(t, name, 16<<20)
	var seen int64
	_, size, err := SHA256(context.Background(), name, func(k int64) {
		if seen += k; seen == hashBufSize {
			if err := os.Truncate(name, 2*hashBufSize); err != nil {
				t.Error(err)
			}
		}
	})
	if err == nil && size == 16<<20 {
		t.Fatalf("hashing a file truncated to 2 MiB: no error and the old size %d", size)
	}
	t.Logf("size %d, error %v", size, err)
}

// TestSHA256Grows appends to a file while it is hashed: the digest and
// size cover what is there at the end, as a reader to EOF would see.
func TestSHA256Grows(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	b := writeRandom(t, name, 8<<20)
	tail := make([]byte, 3<<20)
	rand.Read(tail)
	var seen int64
	sum, size, err := SHA256(context.Background(), name, func(k int64) {
		if seen += k; seen == hashBufSize {
			f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(tail)
			f.Close()
		}
	})
	want := sha256.Sum256(append(b, tail...))
	if err != nil || size != int64(len(b)+len(tail)) || sum != hex.EncodeToString(want[:]) {
		t.Fatalf("got %s, %d bytes, %v; want %x, %d bytes", sum, size, err, want, len(b)+len(tail))
	}
}

// TestSHA256Cancelled stops at the next block once ctx is done.
func TestSHA256Cancelled(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	writeRandom(t, name, 16<<20)
	ctx, cancel := context.WithCancel(context.Background())
	_, size, err := SHA256(ctx, name, func(int64) { cancel() })
	if err == nil || size != hashBufSize {
		t.Fatalf("cancelled after the first block: size %d, error %v", size, err)
	}
}

// TestSHA256At hashes the first size bytes of an open file (mapped from
// 4 MiB on where the system allows it) and of a reader that is not a
// file, on both sides of the mapping's threshold, a prefix of a longer
// file included.
func TestSHA256At(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	b := writeRandom(t, name, 9<<20+4321)
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int{0, 1, hashBufSize + 1, 4<<20 - 1, 4<<20 + 12345, 9 << 20, len(b)} {
		want := sha256.Sum256(b[:n])
		for _, r := range []io.ReaderAt{f, bytes.NewReader(b)} {
			var seen int64
			sum, err := SHA256At(context.Background(), r, int64(n), func(k int64) { seen += k })
			if err != nil || sum != hex.EncodeToString(want[:]) || seen != int64(n) {
				t.Errorf("%T, first %d bytes: got %s, %v, progress %d; want %x", r, n, sum, err, seen, want)
			}
		}
	}
}

// TestSHA256AtShort asks for more bytes than the reader has: an error
// naming the file and the offset where its bytes ended, never a digest.
func TestSHA256AtShort(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	writeRandom(t, name, 3<<20)
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := SHA256At(context.Background(), f, 3<<20+1, nil)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "at offset 3145728") {
		t.Errorf("3 MiB read as 3 MiB and a byte: %s, %v; want an error naming %s and offset 3145728", sum, err, name)
	}
	emutest.SkipEmulated(t, "qemu-user reports a read of a mapped file past its end as a fault at address 0, which Go raises as a nil dereference, not as the fault the mapped hash recovers from")
	if sum, err := SHA256At(context.Background(), f, 9<<20, nil); err == nil {
		t.Errorf("3 MiB read as 9 MiB (mapped where it can be): %s, no error", sum)
	}
}

// TestSHA256AtCancelled stops with the cause ctx was cancelled with.
func TestSHA256AtCancelled(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	writeRandom(t, name, 16<<20)
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	why := errors.New("the conversion failed")
	ctx, cancel := context.WithCancelCause(context.Background())
	if _, err := SHA256At(ctx, f, 16<<20, func(int64) { cancel(why) }); !errors.Is(err, why) {
		t.Fatalf("cancelled after the first block: %v, want %v", err, why)
	}
}
