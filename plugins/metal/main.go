// Command drama-engine-metal is drama's engine plugin for macOS on Apple
// silicon: it supervises the Metal build's server (drama3-generate --serve)
// and relays its audio to drama over the plugin protocol. The Metal server
// takes voices only from its catalog (drama3-http-voice/1), read at start,
// so a cloned voice is published by writing it there and starting again;
// references in a request are refused, there is no long form, and
// max_frames goes up to 8190. It builds on every OS; on any OS but macOS its
// Start and Encode refuse with a message naming the right plugin.
package main

import (
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	engine.Serve(native.NewEngine(native.Metal, native.EngineOptions{Version: version, Logger: engine.NewLogger("metal")}))
}
