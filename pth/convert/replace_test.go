package convert

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/internal/emutest"
	"github.com/drama-tts/drama/pth"
)

// TestReplaceKeepsOldOutputOnError converts over an existing output from a
// source that fails: the old output is still there, byte for byte, and
// nothing else is left in the directory.
func TestReplaceKeepsOldOutputOnError(t *testing.T) {
	r, err := pth.OpenReader(testdata + "proto4.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "o.safetensors")
	old := make([]byte, 3<<20)
	rand.Read(old)
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := New(&r.Reader, bytes.NewReader(nil), 10, "x", Options{DType: F16})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(context.Background(), out); err == nil {
		t.Fatal("want an error converting a short source")
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("the old output was not kept as it was (%v)", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left %v behind", ents)
	}
}

// TestReplaceReplacesOldOutput converts over an existing output: the new
// output is in place and equals a conversion to a fresh path.
func TestReplaceReplacesOldOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.safetensors")
	if err := os.WriteFile(out, bytes.Repeat([]byte("old"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(path string) []byte {
		r, err := pth.OpenReader(testdata + "proto4.pth")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		f, _ := os.Open(testdata + "proto4.pth")
		defer f.Close()
		fi, _ := f.Stat()
		p, err := New(&r.Reader, f, fi.Size(), "proto4.pth", Options{DType: F16})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Write(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		return b
	}
	if got, want := write(out), write(filepath.Join(dir, "fresh.safetensors")); !bytes.Equal(got, want) {
		t.Fatal("the replaced output differs from a conversion to a new path")
	}
}

// TestHashFileMatches hashes a source of a few MiB (mapped where the
// system allows it) and a source shorter than the size asked for.
func TestHashFileMatches(t *testing.T) {
	name := filepath.Join(t.TempDir(), "src")
	b := make([]byte, 3<<20+12345)
	rand.Read(b)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := sha256.Sum256(b)
	if h := hashFile(context.Background(), f, int64(len(b))); h.err != nil || h.sum != hex.EncodeToString(want[:]) {
		t.Fatalf("got %s, %v; want %x", h.sum, h.err, want)
	}
	emutest.SkipEmulated(t, "qemu-user reports a read of a mapped file past its end as a fault at address 0, which Go raises as a nil dereference, not as the fault the mapped hash recovers from")
	if err := os.Truncate(name, 2<<20); err != nil {
		t.Fatal(err)
	}
	if h := hashFile(context.Background(), f, int64(len(b))); h.err == nil {
		t.Fatal("hashing past the end of a truncated source: no error")
	}
}
