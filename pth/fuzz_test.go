package pth

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedFiles returns the small fixture files.
func seedFiles(f *testing.F) [][]byte {
	names, _ := filepath.Glob("testdata/*.pth")
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 64<<10 {
			out = append(out, b)
		}
	}
	return out
}

// fuzzLimits are small enough that the fuzzer reaches them.
var fuzzLimits = Limits{
	MaxRecords: 64, MaxDirectory: 1 << 16, MaxName: 256, MaxPickle: 1 << 16, MaxSmall: 64,
	MaxOps: 1 << 14, MaxStack: 1 << 10, MaxMarks: 32, MaxMemo: 1 << 10, MaxString: 1 << 10,
	MaxItems: 1 << 10, MaxRank: 8, MaxTensors: 256, MaxViewBytes: 1 << 20,
}

// FuzzReader feeds whole files (zip, legacy, anything) to the reader and,
// when it accepts one, reads every tensor. Nothing may panic (a panic the
// reader recovers from fails too), and every error must wrap one of the
// package's sentinels or be an I/O error.
func FuzzReader(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReaderLimits(bytes.NewReader(b), int64(len(b)), fuzzLimits)
		if err != nil {
			if strings.Contains(err.Error(), internalError) {
				t.Fatalf("the reader panicked: %v", err)
			}
			checkTyped(t, err)
			return
		}
		for _, x := range r.Tensors {
			n := min(x.Len(), 1<<16)
			if _, err := x.ReadAt(make([]byte, n), 0); err != nil && err != io.EOF {
				checkTyped(t, err)
			}
		}
		if ts, _, err := FoldWeightNorm(r.Tensors); err == nil {
			for _, x := range ts {
				x.ReadAt(make([]byte, min(x.Len(), 1<<12)), 0)
			}
		}
	})
}

// FuzzZipIndex feeds bytes to the zip indexer alone: directory, ZIP64
// records, local headers, prefix, duplicate and overlap checks. Whatever it
// accepts must describe records inside the file that do not overlap.
func FuzzZipIndex(f *testing.F) {
	for _, b := range seedFiles(f) {
		if bytes.HasPrefix(b, []byte("PK")) {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := indexZip(bytes.NewReader(b), int64(len(b)), fuzzLimits)
		if err != nil {
			checkTyped(t, err)
			return
		}
		for _, rec := range ix.records {
			if rec.DataOffset < 0 || rec.CompressedSize < 0 || rec.DataOffset+rec.CompressedSize > int64(len(b)) {
				t.Fatalf("record %q [%d, +%d) outside a %d-byte file", rec.Name, rec.DataOffset, rec.CompressedSize, len(b))
			}
			if _, err := readRecord(bytes.NewReader(b), rec, 1<<16); err != nil {
				checkTyped(t, err)
			}
		}
	})
}

// FuzzPickle runs the VM alone on data.pkl-like input, with a persistent
// loader that accepts any well-formed storage id.
func FuzzPickle(f *testing.F) {
	for _, b := range seedFiles(f) {
		r, err := NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil || r.Format != FormatZip {
			continue
		}
		for _, rec := range r.Records {
			if filepath.Base(rec.Name) == "data.pkl" {
				f.Add(b[rec.DataOffset : rec.DataOffset+rec.Size])
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		seen := map[string]*Storage{}
		m := &vm{buf: b, lim: fuzzLimits, persistentLoad: func(pid tuple) (any, error) {
			s, err := parsePID(pid, 5)
			if err != nil {
				return nil, err
			}
			if old := seen[s.Key]; old != nil {
				return old, sameStorage(old, s)
			}
			seen[s.Key] = s
			return s, nil
		}}
		if _, _, err := m.run(); err != nil {
			checkTyped(t, err)
		}
	})
}

var sentinels = []error{ErrFormat, ErrTorchScript, ErrTruncated, ErrLayout, ErrDuplicate, ErrOverlap, ErrCompressed,
	ErrByteOrder, ErrVersion, ErrMissingRecord, ErrLimit, ErrOpcode, ErrGlobal, ErrPickle, ErrArgs, ErrPersID, ErrKey,
	ErrKeyType, ErrDuplicateKey, ErrUnsupported, ErrRecordSize, ErrStorageConflict, ErrOutOfBounds, ErrOverflow,
	ErrNotStateDict, ErrWeightNorm, ErrChecksum}

func checkTyped(t *testing.T, err error) {
	t.Helper()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error wraps no sentinel: %v", err)
}
