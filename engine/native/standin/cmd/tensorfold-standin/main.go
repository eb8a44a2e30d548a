// Command tensorfold-standin is a stand-in of the native Drama 3 engine: it
// speaks the server's HTTP contract and the voice-encode command line with
// deterministic audio and codes, for tests and for trying drama without a
// GPU. See package github.com/drama-tts/drama/engine/native/standin.
package main

import (
	"os"

	"github.com/drama-tts/drama/engine/native/standin"
)

func main() {
	os.Exit(standin.Main(os.Args[1:], os.Stderr))
}
