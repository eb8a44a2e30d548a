#!/bin/sh
# Regenerate engine/enginepb from engine/enginepb/engine.proto.
# Needs protoc (Debian: apt-get install protobuf-compiler). The generators are
# pinned: protoc-gen-go comes from the google.golang.org/protobuf version in
# go.mod, protoc-gen-go-grpc at the version below.
set -eu
cd "$(dirname "$0")/.."
GRPC_GEN_VERSION=v1.5.1
command -v protoc >/dev/null || { echo "gen-proto: protoc not found: install protobuf-compiler" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$GRPC_GEN_VERSION"
PATH="$bin:$PATH" protoc -I engine/enginepb \
	--go_out=engine/enginepb --go_opt=paths=source_relative \
	--go-grpc_out=engine/enginepb --go-grpc_opt=paths=source_relative \
	engine/enginepb/engine.proto
echo "gen-proto: engine/enginepb regenerated"
