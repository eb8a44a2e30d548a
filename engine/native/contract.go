package native

import (
	"errors"
	"fmt"

	"github.com/drama-tts/drama/engine"
)

// The native server's HTTP routes.
const (
	SpeechPath = "/v1/audio/speech"
	HealthPath = "/health"
)

// Headers of the contract.
const (
	HeaderFinishReason     = "X-Finish-Reason"
	HeaderLongFormSegments = "X-Long-Form-Segments"
)

// Audio facts: every reply is mono 16-bit little-endian PCM at 44.1 kHz, and
// one codec frame is 2048 samples. They are the engine contract's, named
// here so the native contract reads on its own.
const (
	SampleRate      = engine.SampleRate
	BytesPerSample  = engine.BitsPerSample / 8
	SamplesPerFrame = engine.SamplesPerFrame
	Codebooks       = engine.NumCodebooks
	MaxInputRunes   = 4096
)

// Finish reasons sent in X-Finish-Reason.
const (
	FinishStop    = "stop"    // the model ended the speech itself
	FinishLength  = "length"  // clipped at the frame limit; the audio is kept
	FinishSilence = "silence" // 10 s under -40 dBFS ended the speech
)

// Response formats.
const (
	FormatWAV = "wav"
	FormatPCM = "pcm"
)

// Reference is a clip spoken before the voice's own references: its exact
// transcript and its codes, codebook-major (10 rows of frames values).
type Reference struct {
	Text    string  `json:"text"`
	VQCodes [][]int `json:"vq_codes"`
}

// SpeechRequest is the JSON body of POST /v1/audio/speech.
type SpeechRequest struct {
	Input          string      `json:"input"`
	Voice          string      `json:"voice,omitempty"`
	References     []Reference `json:"references,omitempty"`
	Stream         bool        `json:"stream,omitempty"`
	ResponseFormat string      `json:"response_format,omitempty"`
	MaxFrames      int         `json:"max_frames,omitempty"`
	Instructions   string      `json:"instructions,omitempty"`
	Speed          *float64    `json:"speed,omitempty"`
	Preset         string      `json:"preset,omitempty"`
	LongForm       *bool       `json:"long_form,omitempty"`
}

// Validate checks the shape of r that both sides of the contract agree on:
// input length, format and stream, references' codes. The server's own
// checks (voices, limits, instructions) come on top.
func (r *SpeechRequest) Validate() error {
	n := len([]rune(r.Input))
	if n < 1 || n > MaxInputRunes {
		return fmt.Errorf("input: want 1 to %d characters, got %d", MaxInputRunes, n)
	}
	switch r.ResponseFormat {
	case "", FormatWAV, FormatPCM:
	default:
		return fmt.Errorf("response_format: want wav or pcm, got %q", r.ResponseFormat)
	}
	if r.Stream && r.ResponseFormat != FormatPCM {
		return errors.New("stream: only with response_format \"pcm\"")
	}
	if r.MaxFrames < 0 {
		return fmt.Errorf("max_frames: want a positive number, got %d", r.MaxFrames)
	}
	for i, ref := range r.References {
		if err := ref.Validate(); err != nil {
			return fmt.Errorf("references[%d]: %w", i, err)
		}
	}
	return nil
}

// Validate checks a reference: a transcript and 10 codebooks of equal length
// with values in range (codebook 0 in 0..4095, the others in 0..1023).
func (r *Reference) Validate() error {
	if r.Text == "" {
		return errors.New("text: empty transcript")
	}
	if len(r.VQCodes) != Codebooks {
		return fmt.Errorf("vq_codes: want %d codebooks, got %d", Codebooks, len(r.VQCodes))
	}
	frames := len(r.VQCodes[0])
	if frames < 1 || frames > 646 {
		return fmt.Errorf("vq_codes: want 1 to 646 frames, got %d", frames)
	}
	for c, row := range r.VQCodes {
		if len(row) != frames {
			return fmt.Errorf("vq_codes[%d]: want %d frames, got %d", c, frames, len(row))
		}
		limit := 1023
		if c == 0 {
			limit = 4095
		}
		for f, v := range row {
			if v < 0 || v > limit {
				return fmt.Errorf("vq_codes[%d][%d]: want 0..%d, got %d", c, f, limit, v)
			}
		}
	}
	return nil
}

// ValidFinishReason reports whether s is one of the contract's finish reasons.
func ValidFinishReason(s string) bool {
	return s == FinishStop || s == FinishLength || s == FinishSilence
}
