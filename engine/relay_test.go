package engine

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// sliceStream hands out fixed chunks.
type sliceStream struct{ chunks [][]byte }

func (s *sliceStream) Header() AudioHeader { return AudioHeader{} }
func (s *sliceStream) Final() Final        { return Final{} }
func (s *sliceStream) Close() error        { return nil }
func (s *sliceStream) Next() ([]byte, error) {
	if len(s.chunks) == 0 {
		return nil, io.EOF
	}
	p := s.chunks[0]
	s.chunks = s.chunks[1:]
	return p, nil
}

// FuzzRelayPCM cuts data into chunks of the sizes given by sizes and wants
// the relay to pass on the same bytes in whole-sample chunks of at most
// MaxChunk, or fail on a stray byte at the end.
func FuzzRelayPCM(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6}, []byte{1, 3, 2})
	f.Add(bytes.Repeat([]byte{7}, 70000), []byte{255, 0, 200})
	f.Add([]byte{1, 2, 3}, []byte{3})
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		var chunks [][]byte
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(sizes) > 0 {
				n = min(len(rest), int(sizes[i%len(sizes)])*300+1)
			}
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		var got []byte
		samples, err := relayPCM(&sliceStream{chunks: chunks}, func(p []byte) error {
			if len(p) == 0 || len(p)%2 != 0 || len(p) > MaxChunk {
				t.Fatalf("chunk of %d bytes", len(p))
			}
			got = append(got, p...)
			return nil
		})
		if len(data)%2 != 0 {
			if !errors.Is(err, ErrFailed) {
				t.Fatalf("odd length %d: err = %v, want engine failed", len(data), err)
			}
			return
		}
		if err != nil || !bytes.Equal(got, data) || samples != int64(len(data)/2) {
			t.Fatalf("relay of %d bytes: got %d bytes, %d samples, err %v", len(data), len(got), samples, err)
		}
	})
}
