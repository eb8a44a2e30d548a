package standin

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/drama-tts/drama/engine/native"
)

// Markers in the input text trigger the stand-in's special behaviours.
const (
	// MarkerSilence makes the speech end in 10 s of near silence, finish
	// reason silence.
	MarkerSilence = "[standin:silence]"
	// MarkerFail makes the synthesis fail after its first chunk: the
	// connection is closed without the terminating chunk.
	MarkerFail = "[standin:fail]"
	// MarkerCrash makes the server process exit after the first chunk (the
	// in-process server behaves as for MarkerFail and calls Options.Crash).
	MarkerCrash = "[standin:crash]"
)

// silenceFrames is 10 s of audio, rounded up to whole frames.
const silenceFrames = (10*native.SampleRate + native.SamplesPerFrame - 1) / native.SamplesPerFrame

// frameBytes is the size of one frame of PCM.
const frameBytes = native.SamplesPerFrame * native.BytesPerSample

// plan is what a synthesis produces: a number of speech frames followed by
// silent ones, the finish reason and the long-form segment starts.
type plan struct {
	seed     [32]byte
	speech   int // frames of tone
	total    int // frames sent
	reason   string
	segments []int // first frame of each segment; empty unless long form
	// payload is the text carried in the speech's lowest bits (see
	// SpokenText); nil for a noise plan, which carries nothing.
	payload []byte
	noise   bool // noise instead of the tone: an engine that is broken
}

// speechFrames is the stand-in's speaking rate: a short lead-in and about
// 1.5 frames (70 ms) a character.
func speechFrames(text string) int {
	return 6 + (3*utf8.RuneCountInString(text)+1)/2
}

// makePlan decides the audio for a request. key identifies the voice and
// references; limit is the frame limit in force.
func makePlan(text, key string, limit int, longForm, noise bool) plan {
	h := sha256.New()
	h.Write([]byte("standin/1\x00" + key + "\x00" + text))
	p := plan{reason: native.FinishStop, noise: noise}
	if !noise {
		p.payload = textPayload(text)
	}
	copy(p.seed[:], h.Sum(nil))
	if longForm {
		p.segments, p.speech = segmentFrames(text)
	} else {
		p.speech = speechFrames(text)
	}
	p.total = p.speech
	if strings.Contains(text, MarkerSilence) {
		p.speech = min(p.speech, 20)
		p.total, p.reason = p.speech+silenceFrames, native.FinishSilence
	}
	if p.total > limit {
		p.total, p.reason = limit, native.FinishLength
		p.speech = min(p.speech, limit)
	}
	return p
}

// segmentFrames splits long-form text into segments of at most 500
// characters at sentence ends and returns each segment's first frame and
// the frames of all segments together.
func segmentFrames(text string) (starts []int, total int) {
	for _, seg := range splitSegments(text, 500) {
		starts = append(starts, total)
		total += speechFrames(seg)
	}
	return starts, total
}

func splitSegments(text string, max int) []string {
	var out []string
	r := []rune(text)
	for len(r) > max {
		cut := max
		for i := max; i > max/2; i-- {
			if c := r[i-1]; c == '.' || c == '!' || c == '?' {
				cut = i
				break
			}
		}
		out = append(out, string(r[:cut]))
		r = r[cut:]
	}
	return append(out, string(r))
}

// frame writes frame i of the plan's audio into dst (frameBytes long): a
// tone whose pitch and loudness follow the seed, with a little noise, its
// samples' lowest bits carrying the payload, or a hum at about -50 dBFS
// once the speech is over. A noise plan sends noise of the tone's loudness
// instead, carrying nothing.
func (p *plan) frame(dst []byte, i int) {
	s := binary.LittleEndian.Uint64(p.seed[:8])
	f0 := 90 + float64(s%220)
	amp := 0.15 + 0.35*float64(mix(s, uint64(i))%1000)/1000
	if i >= p.speech {
		amp, f0 = 0.003, 50
	}
	rng := mix(s^0x9e3779b97f4a7c15, uint64(i))
	w := 2 * math.Pi * f0 / native.SampleRate
	for k := 0; k < native.SamplesPerFrame; k++ {
		n := i*native.SamplesPerFrame + k
		rng = rng*6364136223846793005 + 1442695040888963407
		noise := float64(int32(rng>>33))/float64(1<<31)*0.02 - 0.01
		v := amp*math.Sin(w*float64(n)) + noise*amp
		if p.noise && i < p.speech {
			v = noise * 50 * amp
		}
		sample := int16(v * 32767)
		if i < p.speech && n < 8*len(p.payload) {
			sample = sample&^1 | int16(p.payload[n/8]>>(n%8)&1)
		}
		binary.LittleEndian.PutUint16(dst[2*k:], uint16(sample))
	}
}

// payloadMagic starts the text a speech carries.
const payloadMagic = "DRAMA-TEXT\x00"

// textPayload is what a speech of text carries in its samples' lowest
// bits, one bit a sample from the first, each byte lowest bit first: the
// magic, the text's length as a uvarint, the text.
func textPayload(text string) []byte {
	b := append([]byte(payloadMagic), binary.AppendUvarint(nil, uint64(len(text)))...)
	return append(b, text...)
}

// SpokenText returns the text a stand-in's speech carries in its samples'
// lowest bits (little-endian 16-bit PCM, from the first sample of the
// reply), as the stand-in was asked to speak it, point tags included; false
// when the audio carries none: audio of another engine, the stand-in's
// noise, or a speech cut before the whole text was carried. It is how a
// transcription stand-in hears the stand-in's tone.
func SpokenText(pcm []byte) (string, bool) {
	n := len(pcm) / native.BytesPerSample
	byteAt := func(i int) (byte, bool) {
		if 8*(i+1) > n {
			return 0, false
		}
		var b byte
		for k := 0; k < 8; k++ {
			b |= (pcm[2*(8*i+k)] & 1) << k
		}
		return b, true
	}
	i := 0
	for ; i < len(payloadMagic); i++ {
		if b, ok := byteAt(i); !ok || b != payloadMagic[i] {
			return "", false
		}
	}
	var size uint64
	for shift := 0; ; shift += 7 {
		b, ok := byteAt(i)
		i++
		if !ok || shift > 28 {
			return "", false
		}
		size |= uint64(b&0x7f) << shift
		if b < 0x80 {
			break
		}
	}
	if size > uint64(n/8) {
		return "", false
	}
	text := make([]byte, size)
	for k := range text {
		b, ok := byteAt(i + k)
		if !ok {
			return "", false
		}
		text[k] = b
	}
	if !utf8.Valid(text) {
		return "", false
	}
	return string(text), true
}

// mix is a splitmix64 step of a and b.
func mix(a, b uint64) uint64 {
	z := a + b*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// pcm renders the whole plan.
func (p *plan) pcm() []byte {
	out := make([]byte, p.total*frameBytes)
	for i := 0; i < p.total; i++ {
		p.frame(out[i*frameBytes:(i+1)*frameBytes], i)
	}
	return out
}
