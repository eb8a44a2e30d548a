// Package voices reads, checks, converts and writes Drama 3 voice files.
//
// A voice is a list of reference passages spoken before the text: each an
// exact transcript and its codec codes, ten codebooks a frame (codebook 0
// semantic, 0..4095; codebooks 1..9 residual, 0..1023), one frame per 2048
// samples at 44.1 kHz. Three JSON formats carry voices:
//
//   - drama3-voice/1, the CUDA server's --voices files: format, id, name and
//     1 to 8 references of {text, frames, codes_sha256, vq_codes}, codes
//     codebook-major (10 rows of frames values); 60 s (1292 frames) in all.
//   - drama3-http-voice/1, the Metal server's catalog: format, id, name,
//     source {kind: synthetic|self|consented}, note and 1 to 4 references of
//     {text, frames, codes}, codes frame-major (frames rows of 10, semantic
//     first); at most 262,144 bytes a file.
//   - localrouter-voice-codes/1, a cloned voice as saved: format, id, name,
//     created, source, consent {who, when, statement} (null only for a
//     synthetic voice) and 1 to 8 references of {text, samples, frames,
//     codes}, codes codebook-major; 30 s a reference, 60 s in all.
//
// Shared rules: an id is ^[a-z0-9][a-z0-9_-]{0,63}$; a name is 1 to 128
// characters without control characters; each reference has 1 to 646
// frames; a transcript is NFC, 1 to 2000 characters, trimmed, without
// control characters or line breaks, "<|", "|>" or any special token of the
// tokenizer (DefaultSpecialTokens unless a tokenizer.json gives them).
// codes_sha256 is the sha256 of a reference's codes laid out codebook-major
// as little-endian uint16, whatever the file's layout.
//
// Parsing is strict: keys match exactly, unknown, duplicate and missing
// fields are refused, integers must be integers, strings valid UTF-8, and a
// file is at most 4 MiB. Every rule is checked and each problem reported as a
// *FieldError naming the file, the field (references[i].name) and, for
// syntax, the byte offset. Marshal writes the one canonical form of a voice:
// keys in the order above, two-space indent, one code row a line without
// spaces, LF, integers only, a trailing newline; so the same voice always
// gives the same bytes and its sha256 can be pinned.
//
// Convert moves a voice between formats by transposing or copying codes,
// never re-encoding them. ReadNPY and ReadFishReference read fish-speech's
// (10, T) code arrays and .lab transcripts. FileMode gives a voice file's
// mode, 0600 for a person's voice.
package voices
