package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/drama-tts/drama/engine"
	pb "github.com/drama-tts/drama/engine/enginepb"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/pcmlink"
)

// linked serves impl as a plugin does, with a PCM link between the two
// sides, and returns the host's Engine and a count of the audio and final
// events that crossed gRPC instead.
func linked(t testing.TB, impl engine.Engine) (engine.Engine, *atomic.Int64) {
	e, events, _ := linkedRecv(t, impl)
	return e, events
}

// linkedRecv is linked, with the host's end of the link.
func linkedRecv(t testing.TB, impl engine.Engine) (engine.Engine, *atomic.Int64, *pcmlink.Receiver) {
	t.Helper()
	recv, f, err := pcmlink.Pair()
	if err != nil {
		t.Fatal(err)
	}
	send, err := pcmlink.NewSenderFile(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { send.Close(); recv.Close() })
	var events atomic.Int64
	count := grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, &countingStream{ServerStream: ss, audio: &events})
	})
	cc := dialService(t, func(s *grpc.Server) { pb.RegisterEngineServer(s, engine.NewGRPCServer(impl, send)) }, count)
	return engine.NewLinkedGRPCClient(cc, recv), &events, recv
}

type countingStream struct {
	grpc.ServerStream
	audio *atomic.Int64
}

func (s *countingStream) SendMsg(m any) error {
	if ev, ok := m.(*pb.SynthesisEvent); ok && (ev.GetAudio() != nil || ev.GetFinal() != nil) {
		s.audio.Add(1)
	}
	return s.ServerStream.SendMsg(m)
}

func sizedStub(pcm []byte, chunk int) *stub {
	h := engine.AudioHeader{SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16, Sized: true,
		Samples: int64(len(pcm) / 2), Reason: engine.FinishStop}
	s := &stub{header: &h, final: engine.Final{Reason: engine.FinishStop}}
	for off := 0; off < len(pcm); off += chunk {
		s.chunks = append(s.chunks, pcm[off:min(off+chunk, len(pcm))])
	}
	return s
}

func noise(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*31 + i>>8)
	}
	return p
}

// TestSizedAudioTakesTheLink: a sized synthesis's audio and its final
// event (with the end mark) cross the PCM link, none of it as gRPC
// events, and arrive whole.
func TestSizedAudioTakesTheLink(t *testing.T) {
	want := noise(650_000)
	e, events := linked(t, sizedStub(want, 40_000)) // the engine's chunks split at MaxChunk
	for range 3 {
		r, err := enginetest.Synthesize(context.Background(), e, engine.SynthesisRequest{Input: "x"})
		if err != nil || !bytes.Equal(r.PCM, want) || r.Final.Reason != engine.FinishStop {
			t.Fatalf("got %d bytes (%v), %v; want %d, stop", len(r.PCM), r.Final.Reason, err, len(want))
		}
	}
	if n := events.Load(); n != 0 {
		t.Fatalf("%d audio or final events crossed gRPC beside the link", n)
	}
}

// TestUnsizedAudioStaysOnGRPC: a stream (size not known ahead) keeps to
// gRPC's flow control, which bounds what an engine makes ahead of a
// client.
func TestUnsizedAudioStaysOnGRPC(t *testing.T) {
	want := noise(100_000)
	s := sizedStub(want, 30_000)
	s.header = nil
	e, events := linked(t, s)
	r, err := enginetest.Synthesize(context.Background(), e, engine.SynthesisRequest{Input: "x", Stream: true})
	if err != nil || !bytes.Equal(r.PCM, want) {
		t.Fatalf("got %d bytes, %v", len(r.PCM), err)
	}
	if events.Load() == 0 {
		t.Fatal("an unsized stream went over the link")
	}
}

// TestLinkHeldGoesGRPC: while one synthesis holds the link (its reader
// has not read), another goes over gRPC; both arrive whole.
func TestLinkHeldGoesGRPC(t *testing.T) {
	want := noise(4 << 20) // far more than the link and its queue hold
	e, events := linked(t, sizedStub(want, engine.MaxChunk))
	first, err := e.Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	r, err := enginetest.Synthesize(context.Background(), e, engine.SynthesisRequest{Input: "x"})
	if err != nil || !bytes.Equal(r.PCM, want) {
		t.Fatalf("second: %d bytes, %v", len(r.PCM), err)
	}
	if events.Load() == 0 {
		t.Fatal("the second synthesis did not go over gRPC")
	}
	rest, err := enginetest.Read(first)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rest.PCM, want) {
		t.Fatalf("first: %d bytes, want %d", len(rest.PCM), len(want))
	}
}

// TestClientGoneFreesTheLink: a host that closes a synthesis halfway (its
// client left) lets the plugin finish, and the next synthesis gets the
// link.
func TestClientGoneFreesTheLink(t *testing.T) {
	want := noise(4 << 20)
	e, events := linked(t, sizedStub(want, engine.MaxChunk))
	as, err := e.Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.Next(); err != nil {
		t.Fatal(err)
	}
	as.Close()
	for range 5 {
		before := events.Load()
		r, err := enginetest.Synthesize(context.Background(), e, engine.SynthesisRequest{Input: "x"})
		if err != nil || !bytes.Equal(r.PCM, want) {
			t.Fatalf("after a closed synthesis: %d bytes, %v", len(r.PCM), err)
		}
		if events.Load() != before {
			// the plugin may still be finishing the closed one: a
			// synthesis over gRPC meanwhile is fine, a later one must
			// have the link
			continue
		}
		return
	}
	t.Fatal("five syntheses after a closed one never got the link back")
}

// TestFailureOnTheLinkIsNeverComplete: an engine that fails after some
// audio ends the link's audio with its abort mark; the host reports the
// engine's error, not a short reply.
func TestFailureOnTheLinkIsNeverComplete(t *testing.T) {
	s := sizedStub(noise(100_000), 20_000)
	s.header.Samples = 100_000 // says 200,000 bytes, makes 100,000
	e, _ := linked(t, s)
	r, err := enginetest.Synthesize(context.Background(), e, engine.SynthesisRequest{Input: "x"})
	if err == nil || !strings.Contains(err.Error(), "header that said") {
		t.Fatalf("got %d bytes, %v; want the broken header named", len(r.PCM), err)
	}
	s2 := sizedStub(noise(100_000), 20_000)
	s2.failErr = engine.Errorf(engine.KindFailed, "engine crashed")
	e2, _ := linked(t, s2)
	if _, err := enginetest.Synthesize(context.Background(), e2, engine.SynthesisRequest{Input: "x"}); err == nil || !strings.Contains(err.Error(), "engine crashed") {
		t.Fatalf("got %v, want the engine's error", err)
	}
}

// TestMoreThanSizedOverTheLinkRefused: audio past what the header said is
// refused by the host before it is handed on.
func TestMoreThanSizedOverTheLinkRefused(t *testing.T) {
	s := sizedStub(noise(100_000), 20_000)
	s.header.Samples = 20_000
	e, _ := linked(t, s)
	r, err := enginetest.Synthesize(context.Background(), e, engine.SynthesisRequest{Input: "x"})
	if err == nil || !strings.Contains(err.Error(), "more than the 20000 samples") || len(r.PCM) > 40_000 {
		t.Fatalf("got %d bytes, %v; want a refusal within 40,000 bytes", len(r.PCM), err)
	}
}

// TestLinkNotOfferedRefused plays a plugin that says its audio comes over
// a link the host never offered.
func TestLinkNotOfferedRefused(t *testing.T) {
	h := &pb.AudioHeader{SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16, PcmLink: true}
	e := serveRaw(t, headerEvent(h), finalEvent(pb.FinishReason_FINISH_REASON_STOP, 0))
	if _, err := e.Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"}); err == nil || !strings.Contains(err.Error(), "did not offer") {
		t.Fatalf("got %v, want the unoffered link refused", err)
	}
}

// TestBurstCrossesInLargeFrames: audio that has all arrived (a whole
// reply's burst) is gathered into frames of up to pcmlink.MaxFrame; audio
// the engine had to wait for goes a chunk a frame, at once. Either way the
// host hands on chunks of at most engine.MaxChunk.
func TestBurstCrossesInLargeFrames(t *testing.T) {
	want := noise(650_000)
	for _, c := range []struct {
		burst  bool
		frames int64
	}{{true, (650_000 + pcmlink.MaxFrame - 1) / pcmlink.MaxFrame}, {false, (650_000 + engine.MaxChunk - 1) / engine.MaxChunk}} {
		s := sizedStub(want, engine.MaxChunk)
		s.burst = c.burst
		e, _, recv := linkedRecv(t, s)
		r, err := enginetest.Synthesize(context.Background(), e, engine.SynthesisRequest{Input: "x"}) // chunks within engine.MaxChunk
		if err != nil || !bytes.Equal(r.PCM, want) {
			t.Fatalf("burst %v: got %d bytes, %v; want %d", c.burst, len(r.PCM), err, len(want))
		}
		if recv.Frames() != c.frames {
			t.Fatalf("burst %v: %d frames, want %d", c.burst, recv.Frames(), c.frames)
		}
	}
}

// BenchmarkRelayWholeReply moves a whole reply's burst (0.65 MB, about
// 7.4 s of audio, all arrived at once as the native engine's whole reply
// does) from an engine served as a plugin serves it to the host, over
// gRPC alone ("grpc") and over the PCM link ("link"), both ends in this
// process: the relay's own cost, without TLS (go-plugin's AutoMTLS adds
// to gRPC's).
func BenchmarkRelayWholeReply(b *testing.B) {
	want := noise(650_000)
	for _, way := range []string{"grpc", "link"} {
		b.Run(way, func(b *testing.B) {
			s := sizedStub(want, engine.MaxChunk)
			s.burst = true
			e := serve(b, s)
			if way == "link" {
				e, _ = linked(b, s)
			}
			b.SetBytes(int64(len(want)))
			for b.Loop() {
				if n, err := drain(e); err != nil || n != len(want) {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
}

// drain reads a synthesis to its end and counts its bytes, keeping none:
// the relay's benchmark times the link, not a copy of the audio
// (enginetest.Synthesize keeps it).
func drain(e engine.Engine) (int, error) {
	as, err := e.Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"})
	if err != nil {
		return 0, err
	}
	defer as.Close()
	n := 0
	for {
		p, err := as.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += len(p)
	}
}
