package voices

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io/fs"
	"time"

	"github.com/drama-tts/drama/internal/model"
)

// Format names one of the three voice file formats.
type Format string

// The voice file formats.
const (
	// FormatCUDA is the CUDA server's --voices file: codebook-major codes
	// with each reference's frame count and codes_sha256.
	FormatCUDA Format = "drama3-voice/1"
	// FormatMetal is the Metal server's catalog entry: frame-major codes, an
	// attested source and a note; at most 4 references and 262,144 bytes.
	FormatMetal Format = "drama3-http-voice/1"
	// FormatCloned is a cloned voice as saved: codebook-major codes, sample
	// counts, the source and the consent statement.
	FormatCloned Format = "localrouter-voice-codes/1"
)

// Formats lists the formats in a fixed order.
var Formats = []Format{FormatCUDA, FormatMetal, FormatCloned}

// Codec geometry and the limits every format shares.
const (
	NumCodebooks         = 10                    // codebooks a frame: 0 semantic, 1..9 residual
	SemanticCodebookSize = 4096                  // codebook 0 holds 0..4095
	ResidualCodebookSize = 1024                  // codebooks 1..9 hold 0..1023
	SampleRate           = model.SampleRate      // samples a second
	SamplesPerFrame      = model.SamplesPerFrame // samples a frame
	MaxFrames            = 646                   // frames a reference (about 30 s)
	MaxReferenceSamples  = 1_323_000             // samples a reference (30 s)
	MaxTotalSamples      = 2_646_000             // samples a voice (60 s)
	MaxTotalFrames       = 1292                  // frames a voice in drama3-voice/1 (60 s)
	MaxReferences        = 8                     // references in drama3-voice/1 and cloned voices
	MaxMetalReferences   = 4                     // references in drama3-http-voice/1
	MaxMetalFileSize     = 262_144               // bytes of a drama3-http-voice/1 file
	MaxFileSize          = 4 << 20               // bytes of any voice file read
	MaxTextRunes         = 2000                  // runes of a transcript or consent statement
	MaxNameRunes         = 128                   // runes of a display name
	MaxNoteRunes         = 1000                  // runes of a note
	MaxWhoRunes          = 200                   // runes of consent.who
)

// SourceKind is the attested source of a voice.
type SourceKind string

// The source attestations.
const (
	SourceSynthetic SourceKind = "synthetic" // a made-up voice, no person behind it
	SourceSelf      SourceKind = "self"      // the operator's own voice
	SourceConsented SourceKind = "consented" // another person's voice, with consent
)

// Consent is the consent statement of a cloned voice: who gave it, when and
// in what words.
type Consent struct {
	Who       string
	When      time.Time
	Statement string
}

// Voice is a voice in any of the formats, in memory. Fields a format has no
// slot for are zero: Source and Note belong to drama3-http-voice/1 (Source
// also to cloned voices), Created and Consent to cloned voices.
type Voice struct {
	Format     Format
	ID         string
	Name       string
	Source     SourceKind
	Note       string
	Created    time.Time
	Consent    *Consent
	References []Reference
}

// Reference is one reference passage: its exact transcript and its codes.
type Reference struct {
	Text string
	// Samples is the clip's length in samples at 44.1 kHz, 0 when unknown
	// (only cloned voices carry it).
	Samples int
	Codes   Codes
}

// Codes are one reference's codec codes, codebook-major: Codes[c][t] is
// codebook c at frame t. A valid Codes has NumCodebooks rows of equal length.
type Codes [][]int

// CodebookSize returns the number of codes of codebook cb: 4096 for the
// semantic codebook 0, 1024 for the residual codebooks 1..9.
func CodebookSize(cb int) int {
	if cb == 0 {
		return SemanticCodebookSize
	}
	return ResidualCodebookSize
}

// Frames returns the number of frames: the length of the first row.
func (c Codes) Frames() int {
	if len(c) == 0 {
		return 0
	}
	return len(c[0])
}

// SHA256 returns the lowercase hex sha256 of the codes laid out
// codebook-major, each code as a little-endian uint16. It is the same for a
// voice in any format. Codes outside 0..65535 are truncated to 16 bits, so
// only the hash of valid codes is meaningful.
func (c Codes) SHA256() string {
	h := sha256.New()
	var buf [2 * 1024]byte
	for _, row := range c {
		n := 0
		for _, v := range row {
			binary.LittleEndian.PutUint16(buf[n:], uint16(v))
			n += 2
			if n == len(buf) {
				h.Write(buf[:n])
				n = 0
			}
		}
		h.Write(buf[:n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// FrameMajor returns the codes transposed: one row of NumCodebooks codes per
// frame, semantic first. It returns nil unless c has NumCodebooks rows of
// one length.
func (c Codes) FrameMajor() [][]int {
	if !wellShaped(c) {
		return nil
	}
	t := c.Frames()
	flat := make([]int, t*len(c))
	out := make([][]int, t)
	for i := range t {
		out[i] = flat[i*len(c) : (i+1)*len(c) : (i+1)*len(c)]
		for cb := range c {
			out[i][cb] = c[cb][i]
		}
	}
	return out
}

// Clone returns a deep copy of the codes.
func (c Codes) Clone() Codes {
	out := make(Codes, len(c))
	for i, row := range c {
		out[i] = append([]int(nil), row...)
	}
	return out
}

// Seconds returns the duration of frames at 44.1 kHz.
func Seconds(frames int) float64 {
	return float64(frames) * SamplesPerFrame / SampleRate
}

// TotalFrames returns the frames of all references together.
func (v *Voice) TotalFrames() int {
	n := 0
	for _, r := range v.References {
		n += r.Codes.Frames()
	}
	return n
}

// IsClone reports whether the voice is a person's voice: a cloned voice file,
// a consent statement, or a source other than synthetic. Such files are
// written with mode 0600.
func (v *Voice) IsClone() bool {
	return v.Format == FormatCloned || v.Consent != nil || v.Source == SourceSelf || v.Source == SourceConsented
}

// FileMode returns the mode a file holding v is written with: 0600 for a
// clone (see IsClone), else 0644.
func (v *Voice) FileMode() fs.FileMode {
	if v.IsClone() {
		return 0o600
	}
	return 0o644
}

// framesFor returns the frames that cover samples: ceil(samples/2048).
func framesFor(samples int) int {
	return (samples + SamplesPerFrame - 1) / SamplesPerFrame
}
