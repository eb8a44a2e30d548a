package clip

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// The manifest of a prepared directory.
const (
	ManifestFormat = "drama-clip-manifest/1"
	ManifestName   = "manifest.json"
	maxManifest    = 1 << 20
)

// Manifest lists the references written by a preparation, where each came
// from, and a transcript slot for each that the user fills in.
type Manifest struct {
	Format     string        `json:"format"`
	SampleRate int           `json:"sample_rate"`
	References []ManifestRef `json:"references"`
	Clips      []ClipSummary `json:"clips"`
	Warnings   []Warning     `json:"warnings"`
}

// ManifestRef is one prepared reference.
type ManifestRef struct {
	File       string  `json:"file"`        // a WAV file in the manifest's directory
	Source     string  `json:"source"`      // the recording it was cut from
	Start      float64 `json:"start"`       // seconds into the source
	End        float64 `json:"end"`         // seconds into the source
	Samples    int     `json:"samples"`     // 44.1 kHz samples in File
	Frames     int     `json:"frames"`      // codec frames: ceil(samples / 2048)
	SpeechDBFS float64 `json:"speech_dbfs"` // speech level after levelling
	PeakDBFS   float64 `json:"peak_dbfs"`   // sample peak after levelling
	GainDB     float64 `json:"gain_db"`     // gain applied
	Text       string  `json:"text"`        // the exact transcript; empty until filled in
}

// ClipSummary is what was measured on one source clip.
type ClipSummary struct {
	Source         string   `json:"source"`
	Seconds        float64  `json:"seconds"`
	SampleRate     int      `json:"sample_rate"`
	Channels       int      `json:"channels"`
	Coding         string   `json:"coding"`
	SpeechDBFS     *float64 `json:"speech_dbfs"`
	BackgroundDBFS *float64 `json:"background_dbfs"` // null: not measured
	SNRDB          *float64 `json:"snr_db"`          // null: not measured
	Flatness       *float64 `json:"flatness"`        // null: not measured
	Tonal          bool     `json:"tonal"`
	References     int      `json:"references"`
}

// RefFile returns the file name of the i-th reference (0-based).
func RefFile(i int) string { return fmt.Sprintf("ref-%02d.wav", i+1) }

// NewManifest describes a Result whose references are written as RefFile(i).
func NewManifest(res *Result) *Manifest {
	m := &Manifest{Format: ManifestFormat, SampleRate: SampleRate, References: []ManifestRef{}, Warnings: res.Warnings}
	if m.Warnings == nil {
		m.Warnings = []Warning{}
	}
	for i, r := range res.References {
		m.References = append(m.References, ManifestRef{
			File: RefFile(i), Source: r.Source,
			Start: round(float64(r.Start)/SampleRate, 3), End: round(float64(r.End)/SampleRate, 3),
			Samples: len(r.Samples), Frames: r.Frames(),
			SpeechDBFS: round(r.SpeechDBFS, 2), PeakDBFS: round(r.PeakDBFS, 2), GainDB: round(r.GainDB, 2),
		})
	}
	for _, c := range res.Clips {
		m.Clips = append(m.Clips, summarize(c))
	}
	return m
}

func summarize(c ClipReport) ClipSummary {
	s := ClipSummary{Source: c.Source, Seconds: round(c.Seconds, 3), SampleRate: c.Rate, Channels: c.Channels,
		Coding: c.Coding, SpeechDBFS: finite(c.SpeechDBFS), References: c.Pieces}
	if bg := c.Background; bg.Measured {
		s.BackgroundDBFS, s.SNRDB, s.Flatness = finite(bg.DBFS()), finite(c.SNR), finite(round(bg.Flatness, 4))
		s.Tonal = bg.Tonal()
	}
	return s
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	v = round(v, 2)
	return &v
}

// Marshal returns the manifest as indented JSON with a trailing newline.
func (m *Manifest) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("clip: manifest: %w", err)
	}
	return b.Bytes(), nil
}

// ManifestError reports a problem in a manifest: the file, the field and
// what to do.
type ManifestError struct {
	Path  string
	Field string
	Msg   string
}

// Error returns "clip: PATH: FIELD: MSG".
func (e *ManifestError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("clip: %s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("clip: %s: %s: %s", e.Path, e.Field, e.Msg)
}

// ReadManifest reads and checks dir/manifest.json. Unknown fields are
// refused; every reference file must be a plain name inside dir.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("clip: %w", err)
	}
	return ParseManifest(path, b)
}

// ParseManifest parses and checks manifest bytes; path names it in errors.
func ParseManifest(path string, b []byte) (*Manifest, error) {
	if len(b) > maxManifest {
		return nil, &ManifestError{Path: path, Msg: fmt.Sprintf("want at most %d bytes, got %d", maxManifest, len(b))}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, &ManifestError{Path: path, Msg: fmt.Sprintf("not a valid manifest: %v", err)}
	}
	if dec.More() {
		return nil, &ManifestError{Path: path, Msg: "data after the manifest's JSON document"}
	}
	return &m, m.check(path)
}

func (m *Manifest) check(path string) error {
	switch {
	case m.Format != ManifestFormat:
		return &ManifestError{path, "format", fmt.Sprintf("want %q, got %q", ManifestFormat, m.Format)}
	case m.SampleRate != SampleRate:
		return &ManifestError{path, "sample_rate", fmt.Sprintf("want %d, got %d", SampleRate, m.SampleRate)}
	case len(m.References) < 1 || len(m.References) > MaxRefs:
		return &ManifestError{path, "references", fmt.Sprintf("want 1 to %d references, got %d", MaxRefs, len(m.References))}
	}
	for i, r := range m.References {
		if err := r.check(); err != nil {
			return &ManifestError{path, fmt.Sprintf("references[%d].%s", i, err.field), err.msg}
		}
	}
	return nil
}

type fieldErr struct{ field, msg string }

func (r ManifestRef) check() *fieldErr {
	switch {
	case r.File == "" || r.File != filepath.Base(r.File) || strings.ContainsAny(r.File, `/\`) || r.File == "." || r.File == "..":
		return &fieldErr{"file", fmt.Sprintf("want a file name in the manifest's directory, got %q", r.File)}
	case r.Samples < 1 || r.Samples > MaxRefSamples:
		return &fieldErr{"samples", fmt.Sprintf("want 1 to %d, got %d", MaxRefSamples, r.Samples)}
	case r.Frames != codecFrames(r.Samples):
		return &fieldErr{"frames", fmt.Sprintf("want %d (ceil(samples / 2048)), got %d", codecFrames(r.Samples), r.Frames)}
	case r.Start < 0 || r.End < r.Start:
		return &fieldErr{"end", fmt.Sprintf("want 0 <= start <= end, got %.3f..%.3f", r.Start, r.End)}
	}
	return nil
}

// Span returns the reference's time span in its source, for messages.
func (r ManifestRef) Span() string { return fmt.Sprintf("%s %.2f-%.2f s", r.Source, r.Start, r.End) }
