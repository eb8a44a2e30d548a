package pth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
)

func TestVerifyChecksums(t *testing.T) {
	b, err := os.ReadFile("testdata/dtypes.pth")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.VerifyChecksums(context.Background())
	if err != nil || n != len(r.Records) {
		t.Fatalf("intact file: checked %d of %d: %v", n, len(r.Records), err)
	}
	// Flip one byte of a tensor record.
	x := r.Tensor("f32")
	b[x.FileOffset()] ^= 0x40
	r, _ = NewReader(bytes.NewReader(b), int64(len(b)))
	_, err = r.VerifyChecksums(context.Background())
	var re *RecordError
	if !errors.Is(err, ErrChecksum) || !errors.As(err, &re) || re.Name != x.Storage.Record.Name {
		t.Errorf("flipped byte: want ErrChecksum naming %s, got %v", x.Storage.Record.Name, err)
	}
	l, err := OpenReader("testdata/legacy.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, err := l.VerifyChecksums(context.Background()); n != 0 || err != nil {
		t.Errorf("legacy: %d, %v", n, err)
	}
}
