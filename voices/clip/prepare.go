package clip

import (
	"errors"
	"fmt"
	"math"

	"github.com/drama-tts/drama/internal/model"
)

// Preparation targets.
const (
	TargetSpeechDBFS = -20.0 // speech level of a prepared reference
	MaxPeakDBFS      = -1.0  // sample peak of a prepared reference
	PauseFrames      = 15    // a non-speech run this long (0.15 s) is a pause a cut may fall in
	capWarnDB        = 6.0   // warn when the peak limit holds speech this far under the target
	hardCutWindow    = 500   // frames searched back for the quietest point of a cut inside speech
)

// Options tune a preparation. The zero value uses DefaultDetector and
// refuses a noisy background.
type Options struct {
	Detector *Detector // nil: DefaultDetector
	// Force accepts a background under 5 dB below the speech.
	Force bool
}

// Clip is one recording to prepare: decoded in memory (Audio), or read
// from its file in passes (File, which is used when set).
type Clip struct {
	Name  string // shown in messages and kept in the manifest
	Audio *Audio
	File  *File
}

// Reference is one prepared piece: mono 44.1 kHz, levelled.
type Reference struct {
	Source     string    // the clip it was cut from
	Start, End int       // its span in the source, in 44.1 kHz samples
	Samples    []float32 // the levelled audio
	SpeechDBFS float64   // speech level after levelling
	PeakDBFS   float64   // sample peak after levelling
	GainDB     float64   // the gain applied
}

// Frames returns the codec frames the reference will encode to:
// ceil(samples / 2048).
func (r Reference) Frames() int { return codecFrames(len(r.Samples)) }

// codecFrames returns the codec frames of 2048 samples that cover samples.
func codecFrames(samples int) int { return model.Frames(samples) }

// ClipReport is what was measured on one clip.
type ClipReport struct {
	Source     string
	Seconds    float64 // duration of the source
	Rate       int     // the source's sample rate
	Channels   int     // the source's channels
	Coding     string  // the source's sample coding
	SpeechDBFS float64 // speech level (background power taken out when measured)
	Background Background
	SNR        float64 // speech over background in dB; valid when Background.Measured
	Pieces     int     // references cut from the clip (before the 8 / 60 s limit)
}

// Result is a preparation: the references kept, what each clip measured,
// and the warnings.
type Result struct {
	References []Reference
	Clips      []ClipReport
	Warnings   []Warning
}

// Prepare analyses, trims, cuts and levels clips into references. It
// returns a *RefusalError (several joined, one per clip) for a clear
// failure; the Result is returned with it so its reports and warnings can
// be shown.
func Prepare(clips []Clip, opts Options) (*Result, error) {
	det := DefaultDetector()
	if opts.Detector != nil {
		det = *opts.Detector
	}
	res := &Result{}
	var refusals []error
	var refs []Reference
	// keeping follows keepFirst, so that only the references kept hold
	// their samples
	nKept, keptSamples, keeping := 0, 0, true
	for _, c := range clips {
		an := analyse(c, det)
		if an.err != nil {
			return res, an.err
		}
		res.Clips = append(res.Clips, an.report)
		res.Warnings = append(res.Warnings, an.warnings...)
		if err := an.refusal(opts.Force); err != nil {
			refusals = append(refusals, err)
			continue
		}
		if opts.Force && an.report.Background.Measured && an.report.SNR < RefuseSNR {
			res.Warnings = append(res.Warnings, Warning{Code: WarnNoisy, Source: c.Name, Msg: "kept although noisy, as forced"})
		}
		pieces, warns := an.cut()
		res.Warnings = append(res.Warnings, warns...)
		res.Clips[len(res.Clips)-1].Pieces = len(pieces)
		for _, p := range pieces {
			if keeping = keeping && nKept < MaxRefs && keptSamples+p.end-p.start <= MaxTotal; keeping {
				nKept, keptSamples = nKept+1, keptSamples+p.end-p.start
			}
			r, err := an.level(p, keeping, &res.Warnings)
			if err != nil {
				return res, err
			}
			refs = append(refs, r)
		}
	}
	if len(refusals) > 0 {
		return res, errors.Join(refusals...)
	}
	kept := keepFirst(refs, &res.Warnings)
	if err := checkTotal(kept); err != nil {
		return res, err
	}
	res.References = kept
	return res, nil
}

func checkTotal(refs []Reference) error {
	total := 0
	for _, r := range refs {
		total += len(r.Samples)
	}
	if total < MinTotal {
		return &RefusalError{Code: CodeTooShort, Msg: fmt.Sprintf(
			"want at least 10 s of prepared speech in all, got %.2f s: record or add more", float64(total)/SampleRate)}
	}
	return nil
}

// keepFirst keeps references in order while there are at most MaxRefs of
// them and MaxTotal samples; the rest are dropped with a warning.
func keepFirst(refs []Reference, warns *[]Warning) []Reference {
	total := 0
	for i, r := range refs {
		if i == MaxRefs || total+r.End-r.Start > MaxTotal {
			for _, d := range refs[i:] {
				*warns = append(*warns, Warning{Code: WarnDropped, Source: d.Source, Msg: fmt.Sprintf(
					"piece %s dropped: only the first %d references and 60 s are kept", span(d.Start, d.End), MaxRefs)})
			}
			return refs[:i]
		}
		total += r.End - r.Start
	}
	return refs
}

func span(start, end int) string {
	return fmt.Sprintf("%.2f-%.2f s", float64(start)/SampleRate, float64(end)/SampleRate)
}

func dbString(v float64) string {
	if math.IsInf(v, -1) {
		return "-inf"
	}
	return fmt.Sprintf("%.1f", v)
}
