package clip

import (
	"fmt"
	"math"
)

// signal is a clip's mono samples at SampleRate as the analysis reads
// them: in memory, or decoded from its File at each Read.
type signal interface {
	Len() int
	Read(dst []float32, at int) error // samples at, at+1, ... into dst
}

// samples is a signal held in memory.
type samples []float32

func (x samples) Len() int { return len(x) }

func (x samples) Read(dst []float32, at int) error {
	copy(dst, x[at:at+len(dst)])
	return nil
}

// analysis is one clip after resampling, detection and measurement.
type analysis struct {
	name     string
	x        signal    // mono 44.1 kHz
	p        []float64 // frame powers
	speech   []bool
	region   []bool // speech with the gaps under PauseFrames filled: what the level is measured on
	report   ClipReport
	warnings []Warning
	err      error // reading a File failed
}

func analyse(c Clip, det Detector) *analysis {
	an := &analysis{name: c.Name}
	var clipping []Warning
	if f := c.File; f != nil {
		an.x = newResampled(f)
		an.report = ClipReport{Source: c.Name, Seconds: f.Duration().Seconds(), Rate: f.Rate, Channels: f.Channels, Coding: f.Coding}
		clipping = clippingWarning(c.Name, f.clipRuns, f.clipped)
	} else {
		a := c.Audio
		an.x = samples(Resample(a.Mono(), a.Rate, SampleRate))
		an.report = ClipReport{Source: c.Name, Seconds: a.Duration().Seconds(), Rate: a.Rate, Channels: a.Channels, Coding: a.Coding}
		clipping = clippingWarnings(c)
	}
	if an.p, an.err = framePowers(an.x); an.err != nil {
		return an
	}
	an.speech = det.Detect(an.p)
	an.region = append([]bool(nil), an.speech...)
	fillGaps(an.region, PauseFrames)
	if !anyTrue(an.speech) {
		return an
	}
	if an.report.Background, an.err = measureBackground(an.x, an.p, backgroundMask(an.speech), an.report.Rate); an.err != nil {
		return an
	}
	an.report.SpeechDBFS, an.report.SNR = an.speechLevel(0, len(an.p))
	an.warnings = append(an.warnings, clipping...)
	an.warnings = append(an.warnings, an.edgeWarnings()...)
	an.warnings = append(an.warnings, an.backgroundWarnings()...)
	return an
}

func anyTrue(b []bool) bool {
	for _, v := range b {
		if v {
			return true
		}
	}
	return false
}

// speechLevel measures the speech regions in [lo, hi): their mean power with
// the background power taken out when it was measured, and the SNR.
func (an *analysis) speechLevel(lo, hi int) (level, snr float64) {
	var sum float64
	n := 0
	for i := lo; i < hi; i++ {
		if an.region[i] {
			sum += an.p[i]
			n++
		}
	}
	if n == 0 {
		return math.Inf(-1), math.Inf(-1)
	}
	ps := sum / float64(n)
	bg := an.report.Background
	if !bg.Measured {
		return DB(ps), math.Inf(1)
	}
	if ps <= bg.Power {
		return DB(ps), math.Inf(-1)
	}
	level = 10 * math.Log10(ps-bg.Power)
	return level, level - DB(bg.Power)
}

// refusal returns the clip's refusal, if any.
func (an *analysis) refusal(force bool) error {
	if !anyTrue(an.speech) {
		return &RefusalError{Code: CodeNoSpeech, Source: an.name, Msg: fmt.Sprintf(
			"no speech found in %.2f s: check the recording, or lower the detector's thresholds", an.report.Seconds)}
	}
	bg := an.report.Background
	if bg.Measured && an.report.SNR < RefuseSNR && !force {
		return &RefusalError{Code: CodeNoisyBackground, Source: an.name, Msg: fmt.Sprintf(
			"speech is only %s dB over the background%s (want at least %.0f dB): record somewhere quieter, or use --force",
			dbString(an.report.SNR), tonalNote(bg), RefuseSNR)}
	}
	return nil
}

func tonalNote(bg Background) string {
	if bg.Tonal() {
		return fmt.Sprintf(", which is tonal (music or hum; flatness %.3f)", bg.Flatness)
	}
	return ""
}

func (an *analysis) backgroundWarnings() []Warning {
	bg := an.report.Background
	if !bg.Measured {
		return []Warning{{Code: WarnBackgroundUnknown, Source: an.name, Msg: fmt.Sprintf(
			"background not measured: %d frames of it, want at least %d (0.3 s away from speech)", bg.Frames, BackgroundMinFrames)}}
	}
	var out []Warning
	if an.report.SNR < WarnSNR && an.report.SNR >= RefuseSNR {
		out = append(out, Warning{Code: WarnNoisy, Source: an.name, Msg: fmt.Sprintf(
			"speech is %s dB over the background%s (want 30 dB or more for a clean clone)", dbString(an.report.SNR), tonalNote(bg))})
	}
	if bg.Tonal() {
		out = append(out, Warning{Code: WarnTonal, Source: an.name, Msg: fmt.Sprintf(
			"tonal background (music or hum): spectral flatness %.3f, under %.2f; the clone may carry it", bg.Flatness, TonalFlatness)})
	}
	return out
}

func (an *analysis) edgeWarnings() []Warning {
	var out []Warning
	n := len(an.speech)
	if an.speech[0] {
		out = append(out, Warning{Code: WarnStartsInSpeech, Source: an.name, Msg: "the clip starts inside speech: a word may be cut off; record a moment of silence first"})
	}
	if an.speech[n-1] {
		out = append(out, Warning{Code: WarnEndsInSpeech, Source: an.name, Msg: "the clip ends inside speech: a word may be cut off; record a moment of silence after"})
	}
	return out
}

// clippingWarnings looks for runs of 3 or more samples at or over 0.999 of
// full scale in any channel of the source.
func clippingWarnings(c Clip) []Warning {
	a := c.Audio
	runs, samples := 0, 0
	for ch := 0; ch < a.Channels; ch++ {
		n := 0
		for i := ch; i < len(a.Data); i += a.Channels {
			if math.Abs(float64(a.Data[i])) >= 0.999 {
				n++
				continue
			}
			if n >= 3 {
				runs++
				samples += n
			}
			n = 0
		}
		if n >= 3 {
			runs++
			samples += n
		}
	}
	return clippingWarning(c.Name, runs, samples)
}

// clippingWarning is the warning of runs clipped runs of samples in all,
// if any.
func clippingWarning(name string, runs, samples int) []Warning {
	if runs == 0 {
		return nil
	}
	return []Warning{{Code: WarnClipping, Source: name, Msg: fmt.Sprintf(
		"%d clipped runs (%d samples at full scale): record with less gain", runs, samples)}}
}
