package convert

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/pth"
	"github.com/drama-tts/drama/pth/pthtest"
	"github.com/drama-tts/drama/safetensors"
)

// planFile plans the conversion of the checkpoint at path.
func planFile(t *testing.T, path string, opts Options) (*Plan, error) {
	t.Helper()
	r, err := pth.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, _ := f.Stat()
	return New(&r.Reader, f, fi.Size(), fi.Name(), opts)
}

// TestBroadcastViewsRefused plays the hostile codec.pth: stride-0 views,
// each within the reader's view limit, over a 4-byte storage. Scaled up
// (64 views of 256 MiB) it asked for a 16 GiB output; here 4 views of
// 4 MiB, which convert refuses before writing anything.
func TestBroadcastViewsRefused(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "codec.pth")
	pthtest.WriteArchive(t, src, []float32{1.5}, pthtest.Broadcasts(4, 1<<20)...)
	out := filepath.Join(dir, "out.safetensors")

	p, err := planFile(t, src, Options{})
	var ee *ExpandError
	if !errors.As(err, &ee) || !errors.Is(err, ErrExpand) {
		if err == nil {
			p.Write(context.Background(), out)
		}
		t.Fatalf("want an *ExpandError, got %v", err)
	}
	if ee.Output != 4*4<<20 || ee.Stored != 4 || ee.Worst == nil || ee.Worst.Name != "b3" && ee.Worst.Name != "b0" {
		t.Errorf("got %+v", ee)
	}
	for _, want := range []string{"codec.pth", strconv.Itoa(4 * 4 << 20), "from 4 bytes", `"b0"`, "shape [1048576]", "strides [0]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output made: %v", err)
	}

	// Allowed, the views are written out in full.
	p, err = planFile(t, src, Options{AllowExpand: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x, err := st.Tensor("b2")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := x.Bytes()
	if len(b) != 4<<20 || string(b[len(b)-4:]) != "\x00\x00\xc0\x3f" {
		t.Errorf("b2: %d bytes ending % x", len(b), b[len(b)-4:])
	}
}

// TestCastWiderIsNoExpansion converts an F16 checkpoint whose two tied
// views read their storage twice over (an embedding and its head) to F32:
// four times the storage's bytes, but a cast alone is no expansion, so it
// is not refused; a third view is.
func TestCastWiderIsNoExpansion(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "tied.pth")
	half := make([]byte, 2000)
	tied := []pthtest.View{{Name: "emb", Shape: []int64{10, 100}, Stride: []int64{100, 1}}, {Name: "head", Shape: []int64{10, 100}, Stride: []int64{100, 1}}}
	pthtest.Write(t, src, pthtest.ArchiveOf(t, "HalfStorage", 2, half, tied...))
	for _, target := range []Target{Keep, F32, BF16} {
		p, err := planFile(t, src, Options{DType: target})
		if err != nil {
			t.Errorf("%s: %v", target, err)
		} else if target == F32 && p.Layout.DataSize() != 4*2000 {
			t.Errorf("f32: %d bytes of data, want 8000", p.Layout.DataSize())
		}
	}
	third := pthtest.View{Name: "third", Shape: []int64{1000}, Stride: []int64{1}}
	pthtest.Write(t, src, pthtest.ArchiveOf(t, "HalfStorage", 2, half, append(tied, third)...))
	for _, target := range []Target{Keep, F32} {
		if _, err := planFile(t, src, Options{DType: target}); !errors.Is(err, ErrExpand) {
			t.Errorf("%s, three views of one storage: want ErrExpand, got %v", target, err)
		}
	}
}

// TestNoSpaceBeforeTheFirstByte: a file system without room for the output
// refuses the write before the temporary is made, naming both sizes.
func TestNoSpaceBeforeTheFirstByte(t *testing.T) {
	old := freeBytes
	t.Cleanup(func() { freeBytes = old })
	dir := t.TempDir()
	src := filepath.Join(dir, "codec.pth")
	pthtest.WriteArchive(t, src, make([]float32, 1000), pthtest.View{Name: "w", Shape: []int64{1000}, Stride: []int64{1}})
	p, err := planFile(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	freeBytes = func(string) (int64, error) { return p.Layout.Size - 1, nil }
	out := filepath.Join(dir, "out.safetensors")
	err = p.Write(context.Background(), out)
	var se *atomicfile.SpaceError
	if !errors.As(err, &se) || !errors.Is(err, atomicfile.ErrNoSpace) || se.Need != p.Layout.Size || se.Free != p.Layout.Size-1 {
		t.Fatalf("want a SpaceError for %d bytes, got %v", p.Layout.Size, err)
	}
	if !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), strconv.FormatInt(p.Layout.Size, 10)) {
		t.Errorf("error %q does not name the output and the bytes it needs", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dir holds %d entries, want the source alone", len(ents))
	}
	freeBytes = func(string) (int64, error) { return p.Layout.Size, nil }
	if err := p.Write(context.Background(), out); err != nil {
		t.Errorf("room for exactly the output: %v", err)
	}
}
