// Command drama-engine-cuda is drama's engine plugin for Linux with an
// NVIDIA GPU: it supervises tensorfold-native serve and relays its audio to
// drama over the plugin protocol. It builds on every OS; on any OS but
// Linux its Start and Encode refuse with a message naming the right plugin.
//
// drama starts it; run by hand it only says that it is a plugin.
package main

import (
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	engine.Serve(native.NewEngine(native.CUDA, native.EngineOptions{Version: version, Logger: engine.NewLogger("cuda")}))
}
