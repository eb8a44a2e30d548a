// Package model holds the facts of the Drama 3 model that every part of
// drama relies on: its audio rate, its codec frame, the rule a voice id
// follows, and the name of the private directory drama keeps in a root.
// It imports the standard library alone, so every package may import it.
package model

import "fmt"

const (
	// SampleRate is the model's PCM rate, in samples a second: every
	// reference is prepared at it and every reply is spoken at it.
	SampleRate = 44100
	// SamplesPerFrame is the number of PCM samples one codec frame covers.
	SamplesPerFrame = 2048
	// IDPattern is the voice-id rule as a regular expression: 1 to 64
	// characters of a-z, 0-9, '_' and '-', starting with a letter or digit.
	IDPattern = `^[a-z0-9][a-z0-9_-]{0,63}$`
	// MaxIDLen is the longest voice id.
	MaxIDLen = 64
	// StateDirName is the directory inside a root where drama keeps its
	// own state (verified-state records, runtime files, uploads, the clone
	// catalog).
	StateDirName = ".drama"
)

// Frames returns the codec frames that cover samples: ceil(samples / 2048).
func Frames(samples int) int { return (samples + SamplesPerFrame - 1) / SamplesPerFrame }

// CheckID checks a voice id against IDPattern and says what is wrong.
func CheckID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("want 1 to %d characters, got %d", MaxIDLen, len(id))
	}
	for i := range len(id) {
		c := id[i]
		ok := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '_' || c == '-'))
		if !ok {
			return fmt.Errorf("%q: want lowercase letters, digits, '_' and '-', starting with a letter or digit (bad character at %d)", id, i)
		}
	}
	return nil
}

// ValidID reports whether id follows IDPattern.
func ValidID(id string) bool { return CheckID(id) == nil }
