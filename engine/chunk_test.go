package engine_test

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/drama-tts/drama/engine"
	pb "github.com/drama-tts/drama/engine/enginepb"
)

// TestAudioEventFitsGRPCBuffer: the largest audio event a plugin sends (a
// chunk of MaxChunk bytes) fits a buffer of gRPC's that is no more than
// twice its size. gRPC marshals an outgoing message and reads an incoming
// one in a buffer from its pool; with 32 KiB chunks the event was 8 bytes
// over the 32 KiB size, took a 1 MiB buffer, zeroed on every use, at both
// ends, for each chunk: most of the CPU the plugin and drama serve spent
// relaying a reply.
func TestAudioEventFitsGRPCBuffer(t *testing.T) {
	ev := &pb.SynthesisEvent{Event: &pb.SynthesisEvent_Audio{Audio: &pb.AudioChunk{Pcm: make([]byte, engine.MaxChunk)}}}
	size := proto.Size(ev)
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	defer pool.Put(buf)
	if c := cap(*buf); c > 2*size {
		t.Fatalf("an audio event of %d PCM bytes is %d bytes on the wire and takes a %d-byte buffer of gRPC's: keep MaxChunk within the 32 KiB buffers", engine.MaxChunk, size, c)
	}
	if engine.MaxChunk%2 != 0 {
		t.Fatalf("MaxChunk %d is not whole samples", engine.MaxChunk)
	}
}
