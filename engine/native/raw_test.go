package native_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drama-tts/drama/engine/native"
)

// rawServer answers each connection, once it has read the request's head,
// with answer(n) for the n-th request (from 1), then closes.
func rawServer(t *testing.T, answer func(n int64) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var requests atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				conn.Write([]byte(answer(requests.Add(1))))
			}()
		}
	}()
	return ln.Addr().String()
}

// cannedServer answers every connection with reply after reading the
// request, then closes.
func cannedServer(t *testing.T, reply string) string {
	t.Helper()
	return rawServer(t, func(int64) string { return reply })
}

func canned(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "\n", "\r\n")
}

const streamHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Finish-Reason\r\n\r\n"

func TestRawReplies(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		format      string
		wantBytes   int
		wantReason  string
		wantErr     error
	}{
		{"trailer", canned(t, "stream-length.http"), "pcm", 6, "length", nil},
		{"split samples", streamHead + "3\r\nabc\r\n1\r\nd\r\n0\r\n\r\n", "pcm", 4, "stop", nil},
		{"extension", streamHead + "4;x=y\r\nabcd\r\n0\r\n\r\n", "pcm", 4, "stop", nil},
		{"no terminating chunk", streamHead + "4\r\nabcd\r\n", "pcm", 4, "", native.ErrTruncated},
		{"cut inside chunk", streamHead + "8\r\nabcd", "pcm", 4, "", native.ErrTruncated},
		{"no blank line after last chunk", streamHead + "4\r\nabcd\r\n0\r\n", "pcm", 4, "", native.ErrTruncated},
		{"bad size", streamHead + "zz\r\nabcd\r\n0\r\n\r\n", "pcm", 0, "", native.ErrProtocol},
		{"missing CRLF", streamHead + "2\r\nabXX2\r\ncd\r\n0\r\n\r\n", "pcm", 2, "", native.ErrProtocol},
		{"odd total", streamHead + "3\r\nabc\r\n0\r\n\r\n", "pcm", 2, "", native.ErrProtocol},
		{"bad reason", streamHead + "2\r\nab\r\n0\r\nX-Finish-Reason: done\r\n\r\n", "pcm", 2, "", native.ErrProtocol},
		{"short wav", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nX-Finish-Reason: stop\r\n\r\n" + string(native.WAVHeader(56)) + "abcd", "wav", 4, "", native.ErrTruncated},
		{"not a wav", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", "wav", 0, "", native.ErrProtocol},
		{"wav cut in header", "HTTP/1.1 200 OK\r\nContent-Length: 44\r\n\r\nRIFF", "wav", 0, "", native.ErrTruncated},
		{"server error", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops", "wav", 0, "", native.ErrServer},
		{"garbage", "SSH-2.0-OpenSSH\r\n\r\n", "wav", 0, "", native.ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := native.NewClient(cannedServer(t, tc.reply))
			got := 0
			res, err := c.Synthesize(context.Background(), &native.SpeechRequest{Input: "x", ResponseFormat: tc.format}, func(p []byte) error {
				got += len(p)
				return nil
			})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if res.FinishReason != tc.wantReason {
				t.Errorf("finish %q, want %q", res.FinishReason, tc.wantReason)
			}
			if got != tc.wantBytes {
				t.Errorf("delivered %d bytes, want %d", got, tc.wantBytes)
			}
		})
	}
}

func TestServerWords(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"input too long"}}`: "input too long",
		`{"error":"voice not found"}`:            "voice not found",
		`plain words`:                            "plain words",
	} {
		reply := "HTTP/1.1 400 Bad Request\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		c := native.NewClient(cannedServer(t, reply))
		_, err := c.Synthesize(context.Background(), &native.SpeechRequest{Input: "x"}, func([]byte) error { return nil })
		var se *native.StatusError
		if !errors.As(err, &se) || se.Message != want || !errors.Is(err, native.ErrInvalid) {
			t.Errorf("body %s: err %v, want ErrInvalid %q", body, err, want)
		}
	}
}

func TestParseLongFormSegments(t *testing.T) {
	for in, want := range map[string]int{"": 0, "1;": 1, "3;100,200": 3, " 2 ; 7 ": 2} {
		n, _, err := native.ParseLongFormSegments(in)
		if err != nil || n != want {
			t.Errorf("%q: n=%d err=%v, want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"x", "0;", "2;", "2;a", "2;1,2", "-1;", "2;-5"} {
		if _, _, err := native.ParseLongFormSegments(in); !errors.Is(err, native.ErrProtocol) {
			t.Errorf("%q: err %v, want ErrProtocol", in, err)
		}
	}
}

// TestBufferedSaysWhatHasArrived: a whole reply that came in one burst is
// there to take without waiting (Buffered above 0 until its last bytes),
// never more than what is left of its audio, and 0 at its end.
func TestBufferedSaysWhatHasArrived(t *testing.T) {
	const size = 300_000
	pcm := make([]byte, size)
	body := string(native.WAVHeader(size)) + string(pcm)
	addr := cannedServer(t, "HTTP/1.1 200 OK\r\nContent-Type: audio/wav\r\nX-Finish-Reason: stop\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	st, err := native.NewClient(addr).Open(context.Background(), &native.SpeechRequest{Input: "x", ResponseFormat: native.FormatWAV})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, sawMore := 0, false
	for {
		p, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got += len(p)
		b := st.Buffered()
		if b > size-got {
			t.Fatalf("after %d bytes Buffered says %d, more than the %d left", got, b, size-got)
		}
		sawMore = sawMore || b > 0
	}
	if got != size || !sawMore || st.Buffered() != 0 {
		t.Fatalf("read %d of %d bytes, saw more buffered %v, Buffered at the end %d", got, size, sawMore, st.Buffered())
	}
}
