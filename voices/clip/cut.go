package clip

import (
	"fmt"
	"math"
)

// utterance is a stretch of speech frames [start, end) with no pause in it.
type utterance struct{ start, end int }

// piece is the sample span of one reference.
type piece struct{ start, end int }

// utterances groups speech runs separated by less than PauseFrames, and
// splits any longer than a reference can hold at its quietest frame.
func (an *analysis) utterances() ([]utterance, []Warning) {
	var us []utterance
	for _, r := range runs(an.speech) {
		if n := len(us); n > 0 && r[0]-us[n-1].end < PauseFrames {
			us[n-1].end = r[1]
			continue
		}
		us = append(us, utterance{r[0], r[1]})
	}
	maxFrames := (MaxRefSamples - 2*MarginFrames*FrameSamples) / FrameSamples
	var out []utterance
	var warns []Warning
	for _, u := range us {
		for u.end-u.start > maxFrames {
			q := an.quietest(u.start+maxFrames-hardCutWindow, u.start+maxFrames)
			warns = append(warns, Warning{Code: WarnNoPause, Source: an.name, Msg: fmt.Sprintf(
				"over 30 s of speech without a pause from %.2f s: cut inside speech at %.2f s; record with pauses",
				float64(u.start)/100, float64(q)/100)})
			out = append(out, utterance{u.start, q})
			u.start = q
		}
		out = append(out, u)
	}
	return out, warns
}

// quietest returns the frame index in [lo, hi) with the least power.
func (an *analysis) quietest(lo, hi int) int {
	best, bp := hi-1, math.Inf(1)
	for i := max(lo, 0); i < hi; i++ {
		if an.p[i] < bp {
			best, bp = i, an.p[i]
		}
	}
	return best
}

// cut returns the pieces of the clip: trimmed to MarginFrames around the
// speech and cut in the middle of pauses into spans of at most
// MaxRefSamples.
func (an *analysis) cut() ([]piece, []Warning) {
	us, warns := an.utterances()
	n := an.x.Len()
	bound := func(k int) int { // the cut point between utterance k-1 and k
		if k <= 0 {
			return 0
		}
		if k >= len(us) {
			return n
		}
		return (us[k-1].end + us[k].start) * FrameSamples / 2
	}
	spanOf := func(i, j int) piece {
		return piece{
			start: max(bound(i), us[i].start*FrameSamples-MarginFrames*FrameSamples),
			end:   min(bound(j+1), us[j].end*FrameSamples+MarginFrames*FrameSamples, n),
		}
	}
	var out []piece
	for i := 0; i < len(us); {
		j := i
		for j+1 < len(us) {
			if s := spanOf(i, j+1); s.end-s.start > MaxRefSamples {
				break
			}
			j++
		}
		out = append(out, spanOf(i, j))
		i = j + 1
	}
	return out, warns
}

// level scales a piece to TargetSpeechDBFS, holding its peak at
// MaxPeakDBFS. The reference holds the levelled samples only when keep is
// set: a piece past what is kept is measured, warned about, and dropped.
func (an *analysis) level(p piece, keep bool, warns *[]Warning) (Reference, error) {
	lo, hi := p.start/FrameSamples, (p.end+FrameSamples-1)/FrameSamples
	speech, _ := an.speechLevel(lo, min(hi, len(an.p)))
	seg := make([]float32, p.end-p.start)
	if err := an.x.Read(seg, p.start); err != nil {
		return Reference{}, err
	}
	peak := 0.0
	for _, v := range seg {
		peak = max(peak, math.Abs(float64(v)))
	}
	peakDB := 20 * math.Log10(peak+1e-12)
	gain := TargetSpeechDBFS - speech
	if limit := MaxPeakDBFS - 0.01 - peakDB; gain > limit {
		if gain-limit > capWarnDB {
			*warns = append(*warns, Warning{Code: WarnLevelCapped, Source: an.name, Msg: fmt.Sprintf(
				"piece %s: peaks held the speech at %.1f dBFS, under the -20 dBFS target", span(p.start, p.end), speech+limit)})
		}
		gain = limit
	}
	r := Reference{Source: an.name, Start: p.start, End: p.end, SpeechDBFS: speech + gain, PeakDBFS: peakDB + gain, GainDB: gain}
	if keep {
		g := float32(math.Pow(10, gain/20))
		for i, v := range seg {
			seg[i] = v * g
		}
		r.Samples = seg
	}
	return r, nil
}
