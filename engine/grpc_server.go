package engine

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	pb "github.com/drama-tts/drama/engine/enginepb"
	"github.com/drama-tts/drama/engine/pcmlink"
)

// grpcServer serves an Engine over the engine gRPC service.
type grpcServer struct {
	pb.UnimplementedEngineServer
	impl Engine
	link *pcmlink.Sender // the host's PCM link; nil without one
}

func (s *grpcServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.Description, error) {
	d, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, toStatus("describe", err)
	}
	return descriptionToPB(d), nil
}

func (s *grpcServer) Start(req *pb.StartRequest, stream pb.Engine_StartServer) error {
	var sendErr error
	err := s.impl.Start(stream.Context(), startFromPB(req), func(e LifecycleEvent) {
		if sendErr == nil {
			sendErr = stream.Send(eventToPB(e))
		}
	})
	if err != nil {
		return toStatus("start", err)
	}
	return sendErr
}

func (s *grpcServer) Health(ctx context.Context, _ *pb.HealthRequest) (*pb.HealthStatus, error) {
	h, err := s.impl.Health(ctx)
	if err != nil {
		return nil, toStatus("health", err)
	}
	return healthToPB(h), nil
}

func (s *grpcServer) Stop(ctx context.Context, req *pb.StopRequest) (*pb.StopResult, error) {
	r, err := s.impl.Stop(ctx, StopRequest{Grace: msDuration(req.GetGraceMs())})
	if err != nil {
		return nil, toStatus("stop", err)
	}
	return stopResultToPB(r), nil
}

func (s *grpcServer) Voices(ctx context.Context, _ *pb.VoicesRequest) (*pb.VoicesResponse, error) {
	vs, err := s.impl.Voices(ctx)
	if err != nil {
		return nil, toStatus("voices", err)
	}
	return voicesToPB(vs), nil
}

// Synthesize relays one synthesis. PCM is regrouped into chunks of whole
// samples of at most MaxChunk bytes whatever the engine hands over; an
// error after the header ends the stream non-OK, never with a final event,
// and so does an end other than a sized header said (AudioHeader.CheckEnd).
// A sized synthesis (whole, made before its first byte) goes over the
// host's PCM link when the request offers it and no other synthesis holds
// it: its bytes then skip gRPC's framing, encryption and copies.
func (s *grpcServer) Synthesize(req *pb.SynthesisRequest, stream pb.Engine_SynthesizeServer) error {
	as, err := s.impl.Synthesize(stream.Context(), synthesisFromPB(req))
	if err != nil {
		return toStatus("synthesize", err)
	}
	defer as.Close()
	h := as.Header()
	send := func(p []byte) error {
		return stream.Send(&pb.SynthesisEvent{Event: &pb.SynthesisEvent_Audio{Audio: &pb.AudioChunk{Pcm: p}}})
	}
	var link *pcmlink.Send
	if h.Sized {
		if w, ok := s.link.Take(req.GetPcmLinkId()); ok {
			defer w.Release() // an abort mark unless it ended
			// audio the engine says has arrived goes in one frame with
			// what came before it
			buffered, _ := as.(interface{ Buffered() int })
			link = w
			send = func(p []byte) error { return w.Write(p, buffered != nil && buffered.Buffered() > 0) }
		}
	}
	header := headerToPB(h)
	header.PcmLink = link != nil
	if err := stream.Send(&pb.SynthesisEvent{Event: &pb.SynthesisEvent_Header{Header: header}}); err != nil {
		return err
	}
	samples, err := relayPCM(as, send)
	if err != nil {
		return toStatus("synthesize", err)
	}
	f := as.Final()
	if f.Samples == 0 {
		f.Samples = samples
	}
	if err := h.CheckEnd(samples, f); err != nil {
		return toStatus("synthesize", err)
	}
	if link != nil {
		// the final event goes with the end mark: the host hands on the
		// reply's last bytes without waiting for this stream
		final, err := proto.Marshal(finalToPB(f))
		if err == nil {
			err = link.End(final)
		}
		if err != nil {
			return toStatus("synthesize", Errorf(KindFailed, "synthesize: %v", err))
		}
		return nil
	}
	return stream.Send(&pb.SynthesisEvent{Event: &pb.SynthesisEvent_Final{Final: finalToPB(f)}})
}

// relayPCM reads as to its end and hands send chunks of whole samples, at
// most MaxChunk bytes each. It returns the number of samples sent.
func relayPCM(as AudioStream, send func([]byte) error) (int64, error) {
	var buf []byte // an odd byte carried over from the previous chunk
	var total int64
	for {
		p, err := as.Next()
		if errors.Is(err, io.EOF) {
			if len(buf) != 0 {
				return total, Errorf(KindFailed, "audio ends inside a sample: %d stray byte", len(buf))
			}
			return total, nil
		}
		if err != nil {
			return total, err
		}
		if len(buf) != 0 {
			p = append(buf, p...)
		}
		whole := len(p) &^ 1
		for off := 0; off < whole; off += MaxChunk {
			end := min(off+MaxChunk, whole)
			if err := send(p[off:end]); err != nil {
				return total, err
			}
			total += int64(end-off) / 2
		}
		buf = append(buf[:0], p[whole:]...)
	}
}

// Encode streams progress as the engine reports it, then the clips.
func (s *grpcServer) Encode(req *pb.EncodeRequest, stream pb.Engine_EncodeServer) error {
	var sendErr error
	clips, err := s.impl.Encode(stream.Context(), encodeFromPB(req), func(p EncodeProgress) {
		if sendErr == nil {
			sendErr = stream.Send(&pb.EncodeEvent{Event: &pb.EncodeEvent_Progress{Progress: progressToPB(p)}})
		}
	})
	if err != nil {
		return toStatus("encode", err)
	}
	if sendErr != nil {
		return sendErr
	}
	for _, c := range clips {
		if err := stream.Send(&pb.EncodeEvent{Event: &pb.EncodeEvent_Clip{Clip: encodedToPB(c)}}); err != nil {
			return err
		}
	}
	return nil
}

func registerEngine(s grpc.ServiceRegistrar, impl Engine, link *pcmlink.Sender) {
	pb.RegisterEngineServer(s, &grpcServer{impl: impl, link: link})
}
