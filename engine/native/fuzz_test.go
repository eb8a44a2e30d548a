package native

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func seedFiles(f *testing.F, pattern string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", pattern))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")))
	}
}

// FuzzReadResponse feeds arbitrary replies to the response parser and the
// chunked reader: no panic, whole samples only, and a clean end only after
// a terminating chunk or a complete length-delimited body.
func FuzzReadResponse(f *testing.F) {
	seedFiles(f, "*.http")
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab"))
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := readResponse(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		n, err := io.Copy(io.Discard, io.LimitReader(resp.body, 1<<20))
		if err == nil && resp.chunks != nil && !resp.chunks.done && n < 1<<20 {
			t.Fatalf("chunked body ended cleanly without its terminating chunk")
		}
		if err == nil {
			var res Result
			_ = resp.finish(&res)
		}
	})
}

// FuzzReadWAVHeader: no panic, and a header that parses describes mono
// 16-bit 44.1 kHz audio.
func FuzzReadWAVHeader(f *testing.F) {
	f.Add(WAVHeader(0))
	f.Add(append(WAVHeader(4), 1, 2, 3, 4))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEdata\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ReadWAVHeader(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrWAV) {
				t.Fatalf("error %v does not wrap ErrWAV", err)
			}
			return
		}
		if info.Channels != 1 || info.Bits != 16 || info.SampleRate != SampleRate {
			t.Fatalf("accepted %+v", info)
		}
	})
}

// FuzzParseLongFormSegments: no panic; a value that parses has N-1 starts.
func FuzzParseLongFormSegments(f *testing.F) {
	for _, s := range []string{"", "1;", "3;10,20", "2;x", strings.Repeat("9", 30)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, starts, err := ParseLongFormSegments(s)
		if err == nil && s != "" && len(starts) != n-1 {
			t.Fatalf("%q: n=%d starts=%v", s, n, starts)
		}
	})
}
