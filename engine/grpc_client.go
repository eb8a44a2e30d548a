package engine

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	pb "github.com/drama-tts/drama/engine/enginepb"
	"github.com/drama-tts/drama/engine/pcmlink"
)

// grpcClient is an Engine reached over the engine gRPC service.
type grpcClient struct {
	c    pb.EngineClient
	link *pcmlink.Receiver // the PCM link to the plugin; nil without one
}

// NewGRPCClient returns an Engine that calls the engine service on conn.
// The host package uses it through go-plugin; tests may use it directly.
func NewGRPCClient(conn grpc.ClientConnInterface) Engine {
	return &grpcClient{c: pb.NewEngineClient(conn)}
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

func (c *grpcClient) Describe(ctx context.Context) (Description, error) {
	d, err := c.c.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return Description{}, fromStatus(ctx, "describe", err)
	}
	return descriptionFromPB(d), nil
}

// Start relays lifecycle events until the plugin's stream ends. A stream
// that ends without a ready event is an engine failure.
func (c *grpcClient) Start(ctx context.Context, req StartRequest, events func(LifecycleEvent)) error {
	stream, err := c.c.Start(ctx, startToPB(req))
	if err != nil {
		return fromStatus(ctx, "start", err)
	}
	ready := false
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if !ready {
				return Errorf(KindFailed, "start: the plugin ended the start without a ready event")
			}
			return nil
		}
		if err != nil {
			return fromStatus(ctx, "start", err)
		}
		e := eventFromPB(ev)
		ready = e.Phase == PhaseReady
		if events != nil {
			events(e)
		}
	}
}

func (c *grpcClient) Health(ctx context.Context) (Health, error) {
	h, err := c.c.Health(ctx, &pb.HealthRequest{})
	if err != nil {
		return Health{}, fromStatus(ctx, "health", err)
	}
	return healthFromPB(h), nil
}

func (c *grpcClient) Stop(ctx context.Context, req StopRequest) (StopResult, error) {
	r, err := c.c.Stop(ctx, &pb.StopRequest{GraceMs: req.Grace.Milliseconds()})
	if err != nil {
		return StopResult{}, fromStatus(ctx, "stop", err)
	}
	return stopResultFromPB(r), nil
}

func (c *grpcClient) Voices(ctx context.Context) ([]Voice, error) {
	r, err := c.c.Voices(ctx, &pb.VoicesRequest{})
	if err != nil {
		return nil, fromStatus(ctx, "voices", err)
	}
	return voicesFromPB(r), nil
}

// Synthesize opens the stream and waits for its header, so that errors
// before the audio (invalid input, busy, not ready) come back here. With a
// PCM link, the request offers it; the header says whether the plugin
// took it.
func (c *grpcClient) Synthesize(ctx context.Context, req SynthesisRequest) (AudioStream, error) {
	sctx, cancel := context.WithCancel(ctx)
	preq := synthesisToPB(req)
	var link *pcmlink.Reader
	if c.link != nil {
		link = c.link.Open()
		preq.PcmLinkId = link.ID()
	}
	fail := func(err error) (AudioStream, error) {
		cancel()
		if link != nil {
			link.Close()
		}
		return nil, err
	}
	stream, err := c.c.Synthesize(sctx, preq)
	if err != nil {
		return fail(fromStatus(ctx, "synthesize", err))
	}
	ev, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fail(Errorf(KindFailed, "synthesize: the plugin ended the stream before the audio header"))
		}
		return fail(fromStatus(ctx, "synthesize", err))
	}
	h := ev.GetHeader()
	if h == nil {
		return fail(Errorf(KindFailed, "synthesize: first event: want audio header, got %T", ev.GetEvent()))
	}
	switch {
	case h.GetPcmLink() && link == nil:
		return fail(Errorf(KindFailed, "synthesize: the plugin sends its audio over a PCM link the host did not offer"))
	case !h.GetPcmLink() && link != nil:
		link.Close() // the audio comes here: another synthesis holds the link, or an older plugin
		link = nil
	}
	return &clientStream{ctx: ctx, stream: stream, cancel: cancel, header: headerFromPB(h), link: link}, nil
}

// clientStream is the host's view of a Synthesize stream. It holds a
// plugin to its sized header's word: more audio than the header said, or
// another end, is a failure before the audio or the end is handed on.
type clientStream struct {
	ctx      context.Context
	stream   pb.Engine_SynthesizeClient
	cancel   context.CancelFunc
	header   AudioHeader
	link     *pcmlink.Reader // the audio's way until its end mark; nil: events
	linkRest []byte          // what is left of the link's last frame
	// linkDone: the link's end or abort mark came; aborted: it was abort
	linkDone, aborted bool
	final             Final
	bytes             int64 // PCM received
	done              bool
	err               error
}

func (s *clientStream) Header() AudioHeader { return s.header }
func (s *clientStream) Final() Final        { return s.final }

// Next returns the next chunk; io.EOF only after a final event followed by a
// clean end of the stream.
func (s *clientStream) Next() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.link != nil && !s.linkDone {
		if p, err := s.nextLinked(); err != errOnStream {
			return p, err
		}
	}
	ev, err := s.stream.Recv()
	switch {
	case errors.Is(err, io.EOF):
		s.err = Errorf(KindFailed, "synthesize: the plugin ended the stream without a final event")
		return nil, s.err
	case err != nil:
		s.err = fromStatus(s.ctx, "synthesize", err)
		return nil, s.err
	}
	switch e := ev.GetEvent().(type) {
	case *pb.SynthesisEvent_Audio:
		if s.link != nil {
			s.err = Errorf(KindFailed, "synthesize: the plugin sent audio events after its PCM link's audio")
			return nil, s.err
		}
		return s.take(e.Audio.GetPcm())
	case *pb.SynthesisEvent_Final:
		if s.aborted {
			s.err = Errorf(KindFailed, "synthesize: the plugin ended its PCM link's audio unfinished, then the stream as complete")
			return nil, s.err
		}
		return nil, s.finish(e.Final)
	}
	s.err = Errorf(KindFailed, "synthesize: want audio or final event, got %T", ev.GetEvent())
	return nil, s.err
}

// errOnStream is nextLinked's word that what follows is on the stream.
var errOnStream = errors.New("the rest is on the stream")

// nextLinked returns the link's next PCM, or its end (io.EOF once the
// final event it carried holds); errOnStream after an abort mark: why is
// on the stream.
func (s *clientStream) nextLinked() ([]byte, error) {
	if len(s.linkRest) > 0 {
		return s.split(s.linkRest)
	}
	p, err := s.link.Next(s.ctx)
	switch {
	case err == nil:
		if _, err := s.take(p); err != nil {
			return nil, err
		}
		return s.split(p)
	case errors.Is(err, io.EOF):
		s.linkDone = true
		if err := s.finishLinked(s.link.Trailer()); !errors.Is(err, io.EOF) {
			s.err = err
			return nil, err
		}
		return nil, io.EOF
	case errors.Is(err, pcmlink.ErrAborted):
		s.linkDone, s.aborted = true, true
		return nil, errOnStream
	default: // the context ended, or the link broke
		s.err = fromStatus(s.ctx, "synthesize", err)
		return nil, s.err
	}
}

// finishLinked takes the final event the link's end mark carried; the
// gRPC stream has nothing after it.
func (s *clientStream) finishLinked(trailer []byte) error {
	var f pb.Final
	if err := proto.Unmarshal(trailer, &f); err != nil {
		return Errorf(KindFailed, "synthesize: the final event on the PCM link: %v", err)
	}
	return s.end(&f)
}

// split returns p's first MaxChunk bytes and keeps the rest for the next
// call: a link frame may be larger than a chunk.
func (s *clientStream) split(p []byte) ([]byte, error) {
	n := min(len(p), MaxChunk)
	s.linkRest = p[n:]
	return p[:n], nil
}

// take counts p against the sized header's word.
func (s *clientStream) take(p []byte) ([]byte, error) {
	s.bytes += int64(len(p))
	if s.header.Sized && s.bytes > 2*s.header.Samples {
		s.err = Errorf(KindFailed, "synthesize: the plugin sent more than the %d samples its header said", s.header.Samples)
		return nil, s.err
	}
	return p, nil
}

// finish records the final event and checks that the stream ends cleanly
// after it.
func (s *clientStream) finish(f *pb.Final) error {
	if _, err := s.stream.Recv(); !errors.Is(err, io.EOF) {
		if err == nil {
			s.err = Errorf(KindFailed, "synthesize: events after the final event")
		} else {
			s.err = fromStatus(s.ctx, "synthesize", err)
		}
		return s.err
	}
	if err := s.end(f); !errors.Is(err, io.EOF) {
		s.err = err
		return err
	}
	return io.EOF
}

// end holds the final event f to the sized header's word and records it:
// io.EOF when it holds.
func (s *clientStream) end(f *pb.Final) error {
	final := finalFromPB(f)
	if err := s.header.CheckEnd(s.bytes/2, final); err != nil {
		return err
	}
	s.final, s.done = final, true
	return io.EOF
}

func (s *clientStream) Close() error {
	s.cancel()
	if s.link != nil {
		s.link.Close()
	}
	return nil
}

// Encode relays progress and collects the clips.
func (c *grpcClient) Encode(ctx context.Context, req EncodeRequest, progress func(EncodeProgress)) ([]EncodedClip, error) {
	stream, err := c.c.Encode(ctx, encodeToPB(req))
	if err != nil {
		return nil, fromStatus(ctx, "encode", err)
	}
	var out []EncodedClip
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fromStatus(ctx, "encode", err)
		}
		switch e := ev.GetEvent().(type) {
		case *pb.EncodeEvent_Progress:
			if progress != nil {
				progress(progressFromPB(e.Progress))
			}
		case *pb.EncodeEvent_Clip:
			out = append(out, encodedFromPB(e.Clip))
		}
	}
	if len(out) != len(req.Clips) {
		return nil, Errorf(KindFailed, "encode: want %d clips back, got %d", len(req.Clips), len(out))
	}
	return out, nil
}
