package engine

import (
	"google.golang.org/grpc"

	pb "github.com/drama-tts/drama/engine/enginepb"
	"github.com/drama-tts/drama/engine/pcmlink"
)

// NewGRPCServer returns the gRPC service for impl, as Serve registers it,
// for tests that serve an Engine outside go-plugin; link is the plugin's
// end of a PCM link, or nil.
func NewGRPCServer(impl Engine, link *pcmlink.Sender) pb.EngineServer {
	return &grpcServer{impl: impl, link: link}
}

// NewLinkedGRPCClient is NewGRPCClient with the host's end of a PCM link.
func NewLinkedGRPCClient(conn grpc.ClientConnInterface, link *pcmlink.Receiver) Engine {
	return &grpcClient{c: pb.NewEngineClient(conn), link: link}
}
