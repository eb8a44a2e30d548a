// Package enginepb is the wire form of the engine contract: the gRPC
// service and messages generated from engine.proto (package
// drama.engine.v1). Use package engine, which converts to and from these
// types; regenerate with `make proto` after editing engine.proto.
package enginepb
