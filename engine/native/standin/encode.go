package standin

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/drama-tts/drama/engine/native"
)

// ErrClip is wrapped by the errors EncodeClip returns for a clip it refuses.
var ErrClip = errors.New("standin: clip refused")

// maxClipSamples is 30 s of audio.
const maxClipSamples = native.MaxEncodeSeconds * native.SampleRate

// EncodeClip reads a canonical WAV clip (mono 16-bit 44.1 kHz, 1 sample to
// 30 s) and returns codes derived from its samples, codebook-major: one
// frame per 2048 samples (the last one padded), each code a hash of the
// frame's bytes and its codebook, in the codebook's range.
func EncodeClip(r io.Reader) ([][]int, error) {
	br := bufio.NewReader(r)
	info, err := native.ReadWAVHeader(br)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClip, err)
	}
	samples := info.DataSize / native.BytesPerSample
	switch {
	case samples == 0:
		return nil, fmt.Errorf("%w: no samples", ErrClip)
	case samples > maxClipSamples:
		return nil, fmt.Errorf("%w: %.1f s: want at most %d s", ErrClip, float64(samples)/native.SampleRate, native.MaxEncodeSeconds)
	}
	frames := int((samples + native.SamplesPerFrame - 1) / native.SamplesPerFrame)
	codes := make([][]int, native.Codebooks)
	for c := range codes {
		codes[c] = make([]int, frames)
	}
	buf := make([]byte, frameBytes)
	for f := 0; f < frames; f++ {
		clear(buf)
		want := min(int64(frameBytes), info.DataSize-int64(f)*frameBytes)
		if _, err := io.ReadFull(br, buf[:want]); err != nil {
			return nil, fmt.Errorf("%w: data at frame %d: want %d bytes: %v", ErrClip, f, want, err)
		}
		frameCodes(buf, f, codes)
	}
	return codes, nil
}

func frameCodes(frame []byte, f int, codes [][]int) {
	sum := sha256.Sum256(frame)
	for c := range codes {
		v := int(binary.LittleEndian.Uint16(sum[2*c:]))
		if c == 0 {
			codes[c][f] = v % 4096
		} else {
			codes[c][f] = v % 1024
		}
	}
}

// EncodeFile encodes the clip at path and writes the codes file at out.
func EncodeFile(clip, out string) error {
	f, err := os.Open(clip)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrClip, err)
	}
	defer f.Close()
	codes, err := EncodeClip(f)
	if err != nil {
		return fmt.Errorf("%s: %w", clip, err)
	}
	return native.WriteCodes(out, codes)
}
