package clip

import (
	"errors"
	"fmt"
)

var (
	// ErrFormat means a file is not a well-formed WAV file.
	ErrFormat = errors.New("clip: not a valid WAV file")
	// ErrUnsupported means a file is well formed but uses a coding this
	// package does not read (and ffmpeg is not there to decode it).
	ErrUnsupported = errors.New("clip: unsupported audio coding")
)

// FormatError reports a problem in an audio file: the file, the byte offset
// and the field that is wrong. It wraps ErrFormat or ErrUnsupported.
type FormatError struct {
	Name   string // the file, when known
	Offset int64  // byte offset of the field, or -1
	Field  string // e.g. "fmt.bits_per_sample"
	Msg    string // what is wrong and what to do
	Err    error  // ErrFormat or ErrUnsupported
}

// Error returns "clip: FILE: offset N: FIELD: MSG", leaving out what is unknown.
func (e *FormatError) Error() string {
	s := "clip: "
	if e.Name != "" {
		s += e.Name + ": "
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf("offset %d: ", e.Offset)
	}
	if e.Field != "" {
		s += e.Field + ": "
	}
	return s + e.Msg
}

// Unwrap returns ErrFormat or ErrUnsupported.
func (e *FormatError) Unwrap() error { return e.Err }

// Refusal codes: the clear failures that stop a preparation.
const (
	CodeNoSpeech        = "no_speech"
	CodeTooShort        = "too_short"
	CodeNoisyBackground = "noisy_background"
)

// Sentinels for the refusals, one per code, for errors.Is.
var (
	ErrNoSpeech        = errors.New("clip: " + CodeNoSpeech)
	ErrTooShort        = errors.New("clip: " + CodeTooShort)
	ErrNoisyBackground = errors.New("clip: " + CodeNoisyBackground)
)

// RefusalError is a clear failure of the recordings themselves: no speech,
// too little speech in all, or a background about as loud as the voice. It
// wraps the sentinel of its code.
type RefusalError struct {
	Code   string // CodeNoSpeech, CodeTooShort or CodeNoisyBackground
	Source string // the clip, empty when the refusal is about all clips
	Msg    string // what was found and what to do
}

// Error returns "clip: SOURCE: CODE: MSG".
func (e *RefusalError) Error() string {
	if e.Source == "" {
		return fmt.Sprintf("clip: %s: %s", e.Code, e.Msg)
	}
	return fmt.Sprintf("clip: %s: %s: %s", e.Source, e.Code, e.Msg)
}

// Unwrap returns the sentinel of the refusal's code.
func (e *RefusalError) Unwrap() error {
	switch e.Code {
	case CodeNoSpeech:
		return ErrNoSpeech
	case CodeTooShort:
		return ErrTooShort
	case CodeNoisyBackground:
		return ErrNoisyBackground
	}
	return nil
}

// Warning codes: findings that do not stop a preparation.
const (
	WarnNoisy             = "noisy_background"   // speech under 30 dB above the background
	WarnTonal             = "tonal_background"   // music or hum in the background
	WarnBackgroundUnknown = "background_unknown" // too little non-speech to measure it
	WarnClipping          = "clipping"           // runs of full-scale samples
	WarnStartsInSpeech    = "starts_in_speech"   // the clip begins inside a word
	WarnEndsInSpeech      = "ends_in_speech"     // the clip ends inside a word
	WarnNoPause           = "no_pause"           // 30 s of speech without a pause: cut inside speech
	WarnLevelCapped       = "level_capped"       // the peak limit kept the speech under -20 dBFS
	WarnDropped           = "dropped"            // past 8 references or 60 s
)

// Warning is one finding that did not stop the preparation.
type Warning struct {
	Code   string `json:"code"`
	Source string `json:"source,omitempty"`
	Msg    string `json:"message"`
}

// String returns "SOURCE: CODE: MSG".
func (w Warning) String() string {
	if w.Source == "" {
		return w.Code + ": " + w.Msg
	}
	return w.Source + ": " + w.Code + ": " + w.Msg
}
