package engine

import pb "github.com/drama-tts/drama/engine/enginepb"

// NewGRPCServer returns the gRPC service for impl, as Serve registers it,
// for tests that serve an Engine outside go-plugin.
func NewGRPCServer(impl Engine) pb.EngineServer { return &grpcServer{impl: impl} }
