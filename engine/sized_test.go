package engine_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/drama-tts/drama/engine"
	pb "github.com/drama-tts/drama/engine/enginepb"
)

// rawPlugin is a plugin's gRPC service that sends the events it is given,
// as a plugin of another build (older, or broken) may: nothing checks them
// on the way out.
type rawPlugin struct {
	pb.UnimplementedEngineServer
	events []*pb.SynthesisEvent
}

func (p *rawPlugin) Synthesize(_ *pb.SynthesisRequest, stream pb.Engine_SynthesizeServer) error {
	for _, ev := range p.events {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	return nil
}

// serveRaw serves a rawPlugin over a unix socket and returns the host's
// Engine for it.
func serveRaw(t *testing.T, events ...*pb.SynthesisEvent) engine.Engine {
	t.Helper()
	return engine.NewGRPCClient(dialService(t, func(s *grpc.Server) {
		pb.RegisterEngineServer(s, &rawPlugin{events: events})
	}))
}

func headerEvent(h *pb.AudioHeader) *pb.SynthesisEvent {
	return &pb.SynthesisEvent{Event: &pb.SynthesisEvent_Header{Header: h}}
}

func audioEvent(pcm []byte) *pb.SynthesisEvent {
	return &pb.SynthesisEvent{Event: &pb.SynthesisEvent_Audio{Audio: &pb.AudioChunk{Pcm: pcm}}}
}

func finalEvent(reason pb.FinishReason, samples int64) *pb.SynthesisEvent {
	return &pb.SynthesisEvent{Event: &pb.SynthesisEvent_Final{Final: &pb.Final{Reason: reason, Samples: samples}}}
}

// TestSizedHeaderCrossesTheWire: an engine's sized header (length, finish
// reason, long-form segments known before the audio) reaches the host as
// it was, and the synthesis that keeps its word ends cleanly.
func TestSizedHeaderCrossesTheWire(t *testing.T) {
	h := engine.AudioHeader{SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16, LongFormSegments: 2,
		Sized: true, Samples: 3, Reason: engine.FinishLength, SegmentOffsets: []int64{2}}
	s := &stub{header: &h, chunks: [][]byte{{1, 2, 3, 4}, {5, 6}}}
	s.final = engine.Final{Reason: engine.FinishLength, LongFormSegments: 2, SegmentOffsets: []int64{2}}
	as, err := serve(t, s).Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	got := as.Header()
	if !got.Sized || got.Samples != 3 || got.Reason != engine.FinishLength || got.LongFormSegments != 2 || len(got.SegmentOffsets) != 1 || got.SegmentOffsets[0] != 2 {
		t.Fatalf("header on the host: %+v, want %+v", got, h)
	}
	for {
		_, err := as.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("a synthesis that kept its header's word failed: %v", err)
		}
	}
}

// TestOlderPluginHeaderIsUnsized: a plugin older than the header's size
// fields (none sent), or one that sends a size without a finish reason or
// a negative one, gives a header whose length is known only at the end,
// and its audio and end pass as before.
func TestOlderPluginHeaderIsUnsized(t *testing.T) {
	for name, h := range map[string]*pb.AudioHeader{
		"absent":           {SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16},
		"no finish reason": {SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16, Samples: proto.Int64(1)},
		"negative":         {SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16, Samples: proto.Int64(-1), Reason: pb.FinishReason_FINISH_REASON_STOP},
	} {
		e := serveRaw(t, headerEvent(h), audioEvent([]byte{1, 2, 3, 4}), finalEvent(pb.FinishReason_FINISH_REASON_STOP, 2))
		as, err := e.Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if as.Header().Sized {
			t.Errorf("%s: header %+v is sized", name, as.Header())
		}
		n := 0
		for {
			p, err := as.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			n += len(p)
		}
		if n != 4 || as.Final().Reason != engine.FinishStop {
			t.Errorf("%s: %d bytes, final %+v", name, n, as.Final())
		}
		as.Close()
	}
}

// TestPluginBreakingItsSizedHeaderFails plays a plugin whose audio or end
// differs from its sized header: the host hands on no audio past the
// length the header said, and ends the stream with an engine failure, not
// io.EOF, so no reply built on the header can pass for complete.
func TestPluginBreakingItsSizedHeaderFails(t *testing.T) {
	sized := &pb.AudioHeader{SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16, Samples: proto.Int64(2), Reason: pb.FinishReason_FINISH_REASON_STOP}
	for name, c := range map[string]struct {
		events []*pb.SynthesisEvent
		taken  int // bytes handed on before the failure
		want   string
	}{
		"more audio":   {[]*pb.SynthesisEvent{audioEvent([]byte{1, 2, 3, 4}), audioEvent([]byte{5, 6}), finalEvent(pb.FinishReason_FINISH_REASON_STOP, 3)}, 4, "more than the 2 samples"},
		"less audio":   {[]*pb.SynthesisEvent{audioEvent([]byte{1, 2}), finalEvent(pb.FinishReason_FINISH_REASON_STOP, 1)}, 2, "sent 1 samples after a header that said 2"},
		"other reason": {[]*pb.SynthesisEvent{audioEvent([]byte{1, 2, 3, 4}), finalEvent(pb.FinishReason_FINISH_REASON_LENGTH, 2)}, 4, `finish reason "length" after a header that said "stop"`},
	} {
		e := serveRaw(t, append([]*pb.SynthesisEvent{headerEvent(sized)}, c.events...)...)
		as, err := e.Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"})
		if err != nil {
			t.Fatal(err)
		}
		taken := 0
		for {
			p, err := as.Next()
			if err == nil {
				taken += len(p)
				continue
			}
			if errors.Is(err, io.EOF) || !errors.Is(err, engine.ErrFailed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s: the stream ended with %v, want an engine failure saying %q", name, err, c.want)
			}
			break
		}
		if taken != c.taken {
			t.Errorf("%s: %d bytes handed on, want %d", name, taken, c.taken)
		}
		as.Close()
	}
}

// TestEngineBreakingItsSizedHeaderFailsInThePlugin: an engine whose audio
// is shorter than its sized header said gets no final event from the
// plugin (read here as the wire carries it): the stream ends with an
// engine failure.
func TestEngineBreakingItsSizedHeaderFailsInThePlugin(t *testing.T) {
	h := engine.AudioHeader{SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16, Sized: true, Samples: 4, Reason: engine.FinishLength}
	conn := dialService(t, func(s *grpc.Server) {
		pb.RegisterEngineServer(s, engine.NewGRPCServer(&stub{header: &h, chunks: [][]byte{{1, 2, 3, 4}}}, nil))
	})
	stream, err := pb.NewEngineClient(conn).Synthesize(context.Background(), &pb.SynthesisRequest{Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "sent 2 samples after a header that said 4") {
				t.Fatalf("the stream ended with %v, want a failure naming the header's length", err)
			}
			return
		}
		if ev.GetFinal() != nil {
			t.Fatalf("the plugin sent a final event after 2 of the 4 samples its engine's header said")
		}
	}
}
