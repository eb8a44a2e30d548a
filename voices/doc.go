// Package voices reads, checks, converts and writes Drama 3 voice files: a
// voice is a list of reference passages spoken before the text, each an
// exact transcript and its codec codes (ten codebooks a frame). It owns the
// three formats (drama3-voice/1, drama3-http-voice/1,
// localrouter-voice-codes/1), their strict parsing and every rule (errors
// naming the file, field and byte offset), the one canonical form
// (Marshal), conversion between formats without re-encoding (Convert),
// fish-speech's code arrays (ReadNPY), and a voice file's mode (0600 for a
// person's voice).
//
// The formats, the rules, codes_sha256 and the canonical form: docs/voices.md.
package voices
