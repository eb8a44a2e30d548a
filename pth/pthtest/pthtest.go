// Package pthtest writes small torch zip checkpoints for tests: F32 views
// of one storage, laid out as torch.save writes them (data.pkl, byteorder,
// data/0, version), so that a test can build the hostile archive it plays
// without torch.
package pthtest

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strconv"
	"testing"
)

// View is one tensor of the archive: a view of the shared storage.
type View struct {
	Name          string
	Offset        int64 // storage offset, in elements
	Shape, Stride []int64
}

// Archive returns a torch zip checkpoint (archive prefix "archive") whose
// state dict holds views, in order, of one FloatStorage holding values.
func Archive(t testing.TB, values []float32, views ...View) []byte {
	t.Helper()
	data := make([]byte, 4*len(values))
	for i, x := range values {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	return ArchiveOf(t, "FloatStorage", 4, data, views...)
}

// ArchiveOf is Archive for a storage of another class (torch.HalfStorage,
// say) of elements of size bytes each, holding data.
func ArchiveOf(t testing.TB, class string, size int, data []byte, views ...View) []byte {
	t.Helper()
	p := &pickle{}
	p.op(0x80, 2).global("collections", "OrderedDict").op(')', 'R', '(')
	for _, v := range views {
		p.str(v.Name)
		p.global("torch._utils", "_rebuild_tensor_v2").op('(')
		p.op('(').str("storage").global("torch", class).str("0").str("cpu").int(int64(len(data)/size)).op('t', 'Q')
		p.int(v.Offset).ints(v.Shape).ints(v.Stride)
		p.op(0x89).global("collections", "OrderedDict").op(')', 'R', 't', 'R')
	}
	p.op('u', '.')
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range []struct {
		name string
		data []byte
	}{{"archive/data.pkl", p.Bytes()}, {"archive/byteorder", []byte("little")}, {"archive/data/0", data}, {"archive/version", []byte("3\n")}} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// WriteArchive writes Archive(values, views...) to path.
func WriteArchive(t testing.TB, path string, values []float32, views ...View) {
	t.Helper()
	Write(t, path, Archive(t, values, views...))
}

// Write writes an archive's bytes to path.
func Write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Broadcasts returns n views named "b0", "b1", ... of elems elements each
// with stride 0: every one repeats the storage's first value.
func Broadcasts(n int, elems int64) []View {
	vs := make([]View, n)
	for i := range vs {
		vs[i] = View{Name: "b" + strconv.Itoa(i), Shape: []int64{elems}, Stride: []int64{0}}
	}
	return vs
}

// pickle builds protocol-2 pickle bytes.
type pickle struct{ bytes.Buffer }

func (p *pickle) op(b ...byte) *pickle { p.Write(b); return p }

func (p *pickle) global(mod, name string) *pickle {
	p.WriteString("c" + mod + "\n" + name + "\n")
	return p
}

func (p *pickle) str(s string) *pickle {
	p.WriteByte('X')
	_ = binary.Write(p, binary.LittleEndian, uint32(len(s)))
	p.WriteString(s)
	return p
}

func (p *pickle) int(v int64) *pickle {
	if v >= 0 && v < 256 {
		return p.op('K', byte(v))
	}
	p.op(0x8a, 8)
	_ = binary.Write(p, binary.LittleEndian, v)
	return p
}

func (p *pickle) ints(vs []int64) *pickle {
	p.op('(')
	for _, v := range vs {
		p.int(v)
	}
	return p.op('t')
}
