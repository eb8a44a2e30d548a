package pcmlink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pair returns a started link, both ends.
func pair(t *testing.T) (*Receiver, *Sender) {
	t.Helper()
	r, f, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSenderFile(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); r.Close() })
	return r, s
}

// sendOne sends pcm as one synthesis and checks that it arrives, alone
// and whole.
func sendOne(t *testing.T, r *Receiver, s *Sender, pcm []byte) {
	t.Helper()
	rd := r.Open()
	defer rd.Close()
	w, ok := s.Take(rd.ID())
	if !ok {
		t.Fatal("the link is not free")
	}
	w.Write(pcm, false)
	w.End(nil)
	w.Release()
	if got, err := readAll(t, rd); !errors.Is(err, io.EOF) || !bytes.Equal(got, pcm) {
		t.Fatalf("got %v, %v; want %v, the end", got, err, pcm)
	}
}

func within(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// readAll reads rd to its end mark.
func readAll(t *testing.T, rd *Reader) ([]byte, error) {
	t.Helper()
	var got []byte
	for {
		p, err := rd.Next(within(t))
		if err != nil {
			return got, err
		}
		got = append(got, p...)
	}
}

func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) + seed
	}
	return p
}

func TestAudioCrossesInOrder(t *testing.T) {
	r, s := pair(t)
	for round, size := range []int{0, 2, MaxFrame, 3*MaxFrame + 10, 650_000} {
		rd := r.Open()
		want := pattern(size, byte(round))
		w, ok := s.Take(rd.ID())
		if !ok {
			t.Fatalf("round %d: link not free", round)
		}
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			defer w.Release()
			for off := 0; off < len(want); off += 32 << 10 {
				if err := w.Write(want[off:min(off+32<<10, len(want))], false); err != nil {
					t.Error(err)
					return
				}
			}
			w.End(nil)
		}()
		got, err := readAll(t, rd)
		<-sent
		if !errors.Is(err, io.EOF) {
			t.Fatalf("round %d: end: %v", round, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: got %d bytes, want %d, or other bytes", round, len(got), len(want))
		}
		rd.Close()
	}
}

func TestWriteSplitsIntoFrames(t *testing.T) {
	r, s := pair(t)
	rd := r.Open()
	w, _ := s.Take(rd.ID())
	go func() { w.Write(make([]byte, 2*MaxFrame+4), false); w.End(nil); w.Release() }()
	var sizes []int
	for {
		p, err := rd.Next(within(t))
		if err != nil {
			break
		}
		sizes = append(sizes, len(p))
	}
	if len(sizes) != 3 || sizes[0] != MaxFrame || sizes[1] != MaxFrame || sizes[2] != 4 {
		t.Fatalf("frames %v, want [%d %d 4]", sizes, MaxFrame, MaxFrame)
	}
}

// TestWriteGathersWhileMoreComes: chunks written with more go in one
// frame up to MaxFrame; the last, without, sends what was gathered; End
// sends what is still gathered; an abort drops it.
func TestWriteGathersWhileMoreComes(t *testing.T) {
	r, s := pair(t)
	rd := r.Open()
	w, _ := s.Take(rd.ID())
	want := pattern(5*(32<<10), 3)
	for off := 0; off < len(want); off += 32 << 10 {
		w.Write(want[off:off+32<<10], off+32<<10 < len(want))
	}
	w.Write([]byte{9, 9}, true) // gathered, sent by End
	w.End(nil)
	w.Release()
	got, err := readAll(t, rd)
	if !errors.Is(err, io.EOF) || !bytes.Equal(got, append(want, 9, 9)) {
		t.Fatalf("got %d bytes, %v", len(got), err)
	}
	if n := r.Frames(); n != 3 { // 128 KiB, 32 KiB, 2 bytes
		t.Fatalf("%d frames, want 3", n)
	}
	rd2 := r.Open()
	w2, _ := s.Take(rd2.ID())
	w2.Write([]byte{1, 2}, true)
	w2.Release()
	if got, err := readAll(t, rd2); !errors.Is(err, ErrAborted) || len(got) != 0 {
		t.Fatalf("an abort after gathered audio: %v, %v; want nothing, ErrAborted", got, err)
	}
}

func TestReleaseWithoutEndAborts(t *testing.T) {
	r, s := pair(t)
	rd := r.Open()
	w, _ := s.Take(rd.ID())
	w.Write([]byte{1, 2}, false)
	w.Release()
	got, err := readAll(t, rd)
	if !errors.Is(err, ErrAborted) || len(got) != 2 {
		t.Fatalf("got %d bytes, %v; want 2, ErrAborted", len(got), err)
	}
	sendOne(t, r, s, []byte{3, 4}) // the link stays usable
}

// TestEndGivesTheLinkBack: the next synthesis may take the link as soon
// as the end mark went, before the last one's Release.
func TestEndGivesTheLinkBack(t *testing.T) {
	_, s := pair(t)
	w, _ := s.Take(1)
	w.End(nil)
	next, ok := s.Take(2)
	if !ok {
		t.Fatal("the link is still held after its end mark")
	}
	w.Release() // a no-op: it must not give back the link next holds
	if _, ok := s.Take(3); ok {
		t.Fatal("a Release after End gave back a link another synthesis holds")
	}
	next.Release()
}

func TestOneSynthesisHoldsTheLink(t *testing.T) {
	_, s := pair(t)
	w, ok := s.Take(1)
	if !ok {
		t.Fatal("free link refused")
	}
	if _, ok := s.Take(2); ok {
		t.Fatal("a second synthesis took a held link")
	}
	w.Release()
	w3, ok := s.Take(3)
	if !ok {
		t.Fatal("released link refused")
	}
	w3.Release()
	if _, ok := s.Take(0); ok {
		t.Fatal("id 0 (no link offered) took the link")
	}
	var none *Sender
	if _, ok := none.Take(4); ok {
		t.Fatal("a plugin without a link took one")
	}
}

// TestStrayFramesAreDropped: frames of an id nobody waits for (a
// synthesis the host gave up, a plugin's mistake) never reach another
// synthesis's reader.
func TestStrayFramesAreDropped(t *testing.T) {
	r, s := pair(t)
	stray, _ := s.Take(1000)
	stray.Write(pattern(3*MaxFrame, 9), false)
	stray.End(nil)
	stray.Release()
	sendOne(t, r, s, []byte{5, 6})
}

// TestClosedReaderDoesNotHoldThePlugin: a host that gives up a synthesis
// (its client went away) keeps draining the link, so the plugin's writes
// of many times the socket's buffers complete and the next synthesis
// gets the link.
func TestClosedReaderDoesNotHoldThePlugin(t *testing.T) {
	r, s := pair(t)
	rd := r.Open()
	rd.Close()
	w, _ := s.Take(rd.ID())
	done := make(chan error, 1)
	go func() {
		for range 200 {
			if err := w.Write(make([]byte, MaxFrame), false); err != nil {
				done <- err
				return
			}
		}
		done <- w.End(nil)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the plugin's writes waited on a reader the host had closed")
	}
	w.Release()
	sendOne(t, r, s, []byte{7, 8})
}

func TestNextEndsWithItsContext(t *testing.T) {
	r, _ := pair(t)
	rd := r.Open()
	defer rd.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rd.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// rawPeer is a plugin end that writes whatever bytes it is given.
func rawPeer(t *testing.T) (*Receiver, net.Conn) {
	t.Helper()
	r, s := pair(t)
	return r, s.conn
}

// TestOversizedFramesBreakTheLink plays a plugin announcing a frame of
// PCM, or an end mark's trailer, over the bounds (up to 2 GiB): the host
// allocates nothing of it, and every reader learns the link is broken and
// why. So does an empty frame, which no plugin sends.
func TestOversizedFramesBreakTheLink(t *testing.T) {
	for _, c := range []struct {
		n    uint32
		want string
	}{
		{MaxFrame + 1, "where a frame holds 1 to " + strconv.Itoa(MaxFrame)},
		{endFlag - 1, "a frame of 2147483647 bytes"},
		{0, "a frame of 0 bytes"},
		{endFlag | (MaxTrailer + 1), "over the " + strconv.Itoa(MaxTrailer)},
		{lengthAbort - 1, "a trailer of 2147483646 bytes"},
	} {
		r, conn := rawPeer(t)
		rd := r.Open()
		var h [headerSize]byte
		putHeader(&h, rd.ID(), c.n)
		conn.Write(h[:])
		_, err := rd.Next(within(t))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("length word %#x: got %v, want %q", c.n, err, c.want)
		}
		later := r.Open()
		if _, err := later.Next(within(t)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("length word %#x: a reader opened after the break: %v", c.n, err)
		}
	}
}

// TestEndMarkCarriesItsTrailer: the plugin's final event comes with the
// end mark.
func TestEndMarkCarriesItsTrailer(t *testing.T) {
	r, s := pair(t)
	for _, trailer := range [][]byte{nil, []byte("final event"), make([]byte, MaxTrailer)} {
		rd := r.Open()
		w, _ := s.Take(rd.ID())
		w.Write([]byte{1, 2}, false)
		if err := w.End(trailer); err != nil {
			t.Fatal(err)
		}
		w.Release()
		if _, err := readAll(t, rd); !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if !bytes.Equal(rd.Trailer(), trailer) {
			t.Fatalf("trailer of %d bytes came as %d", len(trailer), len(rd.Trailer()))
		}
		rd.Close()
	}
	w, _ := s.Take(99)
	defer w.Release()
	if err := w.End(make([]byte, MaxTrailer+1)); err == nil {
		t.Fatal("a trailer over the bound was sent")
	}
}

func TestTruncatedFrameBreaksTheLink(t *testing.T) {
	r, conn := rawPeer(t)
	rd := r.Open()
	var h [headerSize]byte
	putHeader(&h, rd.ID(), 100)
	conn.Write(append(h[:], 1, 2, 3))
	conn.Close()
	if _, err := rd.Next(within(t)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestPluginGoneEndsReaders(t *testing.T) {
	r, conn := rawPeer(t)
	rd := r.Open()
	conn.Close()
	if _, err := rd.Next(within(t)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("got %v, want the plugin's close named", err)
	}
}

func TestReceiverCloseEndsReaders(t *testing.T) {
	r, _ := pair(t)
	rd := r.Open()
	r.Close()
	if _, err := rd.Next(within(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

func TestWriteAfterEndRefused(t *testing.T) {
	_, s := pair(t)
	w, _ := s.Take(1)
	defer w.Release()
	w.End(nil)
	if err := w.Write([]byte{1, 2}, false); err == nil {
		t.Fatal("a write after the end was taken")
	}
}

func TestFromEnvWithoutLink(t *testing.T) {
	t.Setenv(EnvFD, "")
	os.Unsetenv(EnvFD)
	s, err := FromEnv()
	if s != nil || err != nil {
		t.Fatalf("got %v, %v; want no link and no error", s, err)
	}
}

func TestFromEnvRefusesBadDescriptors(t *testing.T) {
	file, err := os.CreateTemp(t.TempDir(), "not-a-socket")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, v := range []string{"x", "-1", "0", "2", strconv.Itoa(int(file.Fd())), "987654"} {
		t.Setenv(EnvFD, v)
		s, err := FromEnv()
		if s != nil || err == nil || !strings.Contains(err.Error(), EnvFD) {
			t.Errorf("%s=%s: got %v, %v; want an error naming the variable", EnvFD, v, s, err)
		}
		if _, still := os.LookupEnv(EnvFD); still {
			t.Errorf("%s=%s: the variable is left for the engine process", EnvFD, v)
		}
	}
}
