package clip

import (
	"math"
	"slices"

	"github.com/drama-tts/drama/internal/model"
)

// Geometry of the analysis.
const (
	SampleRate    = model.SampleRate // the rate every reference is prepared at
	FrameSamples  = 441              // one analysis frame: 10 ms
	MarginFrames  = 25               // kept before the first and after the last speech frame: 0.25 s
	MaxRefSamples = 1_323_000
	MaxRefFrames  = 646 // codec frames of 2048 samples in MaxRefSamples
	MinTotal      = 441_000
	MaxTotal      = 2_646_000
	MaxRefs       = 8
	silenceFloor  = 1e-10 // added to a frame's power before taking its level
)

// Detector holds the thresholds of the energy-based speech detection. On
// each 10 ms frame the level L = 10*log10(mean(x^2) + 1e-10) dBFS is taken.
// The floor F is the FloorPercentile-th percentile of L over the clip and
// the top T the TopPercentile-th. A frame is speech when
// L >= max(F + AboveFloor, T - BelowTop, MinLevel). Speech runs shorter than
// MinRun frames are dropped (clicks); non-speech gaps shorter than MaxGap
// frames between speech are filled (stops inside words).
type Detector struct {
	FloorPercentile float64 // default 10
	TopPercentile   float64 // default 95
	AboveFloor      float64 // dB over the floor; default 3
	BelowTop        float64 // dB under the top; default 40
	MinLevel        float64 // dBFS; default -60
	MinRun          int     // frames; default 3
	MaxGap          int     // frames; default 10
}

// DefaultDetector returns the documented default thresholds.
func DefaultDetector() Detector {
	return Detector{FloorPercentile: 10, TopPercentile: 95, AboveFloor: 3, BelowTop: 40, MinLevel: -60, MinRun: 3, MaxGap: 10}
}

// powerChunk is the frames of a signal read at once to measure them.
const powerChunk = 256

// framePowers returns the mean square of each whole 10 ms frame of x, read
// through once in chunks; a trailing partial frame is measured on the
// samples it has.
func framePowers(x signal) ([]float64, error) {
	n := (x.Len() + FrameSamples - 1) / FrameSamples
	out := make([]float64, n)
	buf := make([]float32, min(x.Len(), powerChunk*FrameSamples))
	for f0 := 0; f0 < n; f0 += powerChunk {
		lo := f0 * FrameSamples
		chunk := buf[:min(len(buf), x.Len()-lo)]
		if err := x.Read(chunk, lo); err != nil {
			return nil, err
		}
		for i := f0; i < min(n, f0+powerChunk); i++ {
			seg := chunk[(i-f0)*FrameSamples : min(len(chunk), (i-f0+1)*FrameSamples)]
			out[i] = sumSquares(seg) / float64(len(seg))
		}
	}
	return out, nil
}

// sumSquares returns the sum of the squares of x. Like dot, it is skipped
// by the race detector.
//
//go:norace
func sumSquares(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s
}

// DB returns the level of a power in dB: 10*log10(p + 1e-10).
func DB(p float64) float64 { return 10 * math.Log10(p+silenceFloor) }

// Threshold returns the speech threshold in dBFS for frame powers p.
func (d Detector) Threshold(p []float64) float64 {
	levels := make([]float64, len(p))
	for i, v := range p {
		levels[i] = DB(v)
	}
	slices.Sort(levels)
	floor := percentile(levels, d.FloorPercentile)
	top := percentile(levels, d.TopPercentile)
	return max(floor+d.AboveFloor, top-d.BelowTop, d.MinLevel)
}

// Detect marks each frame of powers p as speech or not.
func (d Detector) Detect(p []float64) []bool {
	speech := make([]bool, len(p))
	if len(p) == 0 {
		return speech
	}
	th := d.Threshold(p)
	for i, v := range p {
		speech[i] = DB(v) >= th
	}
	dropShortRuns(speech, d.MinRun)
	fillGaps(speech, d.MaxGap)
	return speech
}

func percentile(sorted []float64, pct float64) float64 {
	if len(sorted) == 0 {
		return math.Inf(-1)
	}
	i := int(math.Round(pct / 100 * float64(len(sorted)-1)))
	return sorted[max(0, min(len(sorted)-1, i))]
}

// runs returns the [start, end) spans of true values.
func runs(b []bool) [][2]int {
	var out [][2]int
	for i := 0; i < len(b); {
		if !b[i] {
			i++
			continue
		}
		j := i
		for j < len(b) && b[j] {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

func dropShortRuns(b []bool, minRun int) {
	for _, r := range runs(b) {
		if r[1]-r[0] < minRun {
			clear(b[r[0]:r[1]])
		}
	}
}

func fillGaps(b []bool, maxGap int) {
	rs := runs(b)
	for i := 1; i < len(rs); i++ {
		if rs[i][0]-rs[i-1][1] < maxGap {
			for j := rs[i-1][1]; j < rs[i][0]; j++ {
				b[j] = true
			}
		}
	}
}
