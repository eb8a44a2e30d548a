package voices

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// npyFile builds a version 1.0 .npy file with the given header dict and data.
func npyFile(dict string, data []byte) []byte {
	hdr := dict
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic + "\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	b.Write(data)
	return b.Bytes()
}

func TestReadNPYInt16(t *testing.T) {
	data := make([]byte, 10*2*2)
	binary.LittleEndian.PutUint16(data[2:], 0xffff) // codebook 0, frame 1: -1 as <i2
	c, err := ReadNPY(bytes.NewReader(npyFile("{'descr': '<i2', 'fortran_order': False, 'shape': (10, 2), }", data)))
	if err != nil {
		t.Fatal(err)
	}
	if c[0][1] != -1 {
		t.Errorf("c[0][1] = %d, want -1", c[0][1])
	}
	v := &Voice{Format: FormatCUDA, ID: "n", Name: "N", References: []Reference{{Text: "x", Codes: c}}}
	if err := v.Validate(nil); !errors.Is(err, ErrCodeRange) {
		t.Errorf("negative code: err = %v, want ErrCodeRange", err)
	}
}

func TestReadNPYErrors(t *testing.T) {
	ok := "{'descr': '<i8', 'fortran_order': False, 'shape': (10, 2), }"
	data := make([]byte, 10*2*8)
	cases := map[string][]byte{
		"no magic":        []byte("not a numpy file at all"),
		"float dtype":     npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (10, 2), }", data[:80]),
		"big endian":      npyFile("{'descr': '>i8', 'fortran_order': False, 'shape': (10, 2), }", data),
		"wrong shape":     npyFile("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 10), }", data),
		"one dimension":   npyFile("{'descr': '<i8', 'fortran_order': False, 'shape': (20,), }", data),
		"too many frames": npyFile(fmt.Sprintf("{'descr': '<i8', 'fortran_order': False, 'shape': (10, %d), }", MaxFrames+1), data),
		"zero frames":     npyFile("{'descr': '<i8', 'fortran_order': False, 'shape': (10, 0), }", nil),
		"short data":      npyFile(ok, data[:100]),
		"extra data":      npyFile(ok, append(data, 0)),
		"bad order":       npyFile("{'descr': '<i8', 'fortran_order': 0, 'shape': (10, 2), }", data),
		"missing shape":   npyFile("{'descr': '<i8', 'fortran_order': False, }", data),
		"extra key":       npyFile("{'descr': '<i8', 'fortran_order': False, 'shape': (10, 2), 'x': 1, }", data),
		"not a dict":      npyFile("[1, 2]", data),
		"version 9":       append([]byte(npyMagic+"\x09\x00"), 0, 0),
	}
	for name, file := range cases {
		if _, err := ReadNPY(bytes.NewReader(file)); !errors.Is(err, ErrNPY) {
			t.Errorf("%s: err = %v, want ErrNPY", name, err)
		}
	}
}

func TestReadFishReferenceMissingLab(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "fish", "ref0.npy"))
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "clip.npy")
	if err := os.WriteFile(name, src, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFishReference(name)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "clip.lab") {
		t.Errorf("err = %v, want a missing clip.lab", err)
	}
}
