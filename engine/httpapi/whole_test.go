package httpapi

import (
	"runtime"
	"testing"

	"github.com/drama-tts/drama/engine"
)

// TestWholeReplyCopiesTheAudioOnce: a whole reply of 4 MiB of audio, in
// the engine's chunks, is held with no more memory than its own size and
// a little: the audio is copied once, not again and again into a buffer
// that grows.
func TestWholeReplyCopiesTheAudioOnce(t *testing.T) {
	const size = 4 << 20
	chunk := make([]byte, engine.MaxChunk)
	var sink bufferSink
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sink.Write(wavHeader(-1))
	for n := 0; n < size; n += len(chunk) {
		sink.Write(chunk)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > size+size/8 {
		t.Fatalf("holding %d bytes of a whole reply allocated %d bytes: the audio is copied more than once", size, got)
	}
}
