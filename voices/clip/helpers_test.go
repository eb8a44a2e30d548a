package clip

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
)

// fixture is the espeak-ng speech of testdata/speech.wav at 44.1 kHz with
// its sentence spans (44.1 kHz samples) measured by sox.
type fixture struct {
	x     []float32
	spans [][2]int
}

var (
	speechOnce sync.Once
	speechFx   fixture
	speechErr  error
)

// loadSpeech reads the fixture once; callers must not modify it.
func loadSpeech(t testing.TB) fixture {
	t.Helper()
	speechOnce.Do(func() { speechFx, speechErr = readSpeech() })
	if speechErr != nil {
		t.Fatal(speechErr)
	}
	return speechFx
}

func readSpeech() (fixture, error) {
	var fx fixture
	a, err := (Decoder{}).Decode(context.Background(), "testdata/speech.wav")
	if err != nil {
		return fx, err
	}
	if a.Rate != 22050 || a.Channels != 1 {
		return fx, fmt.Errorf("speech.wav: want 22050 Hz mono, got %d Hz x%d", a.Rate, a.Channels)
	}
	f, err := os.Open("testdata/speech.txt")
	if err != nil {
		return fx, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s, e int
		if _, err := fmt.Sscan(sc.Text(), &s, &e); err != nil {
			return fx, err
		}
		fx.spans = append(fx.spans, [2]int{s * 2, e * 2})
	}
	fx.x = Resample(a.Data, 22050, SampleRate)
	return fx, nil
}

// speechPower is the mean power over the sentence spans.
func (fx fixture) speechPower() float64 {
	var sum float64
	n := 0
	for _, s := range fx.spans {
		for _, v := range fx.x[s[0]:s[1]] {
			sum += float64(v) * float64(v)
		}
		n += s[1] - s[0]
	}
	return sum / float64(n)
}

func gauss(n int, power float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float32, n)
	sd := math.Sqrt(power)
	for i := range out {
		out[i] = float32(r.NormFloat64() * sd)
	}
	return out
}

// sines returns a sum of sines (Hz) with the given total power.
func sines(n, rate int, power float64, freqs ...float64) []float32 {
	out := make([]float32, n)
	amp := math.Sqrt(2 * power / float64(len(freqs)))
	for i := range out {
		var s float64
		for k, f := range freqs {
			s += math.Sin(2*math.Pi*f*float64(i)/float64(rate) + float64(k))
		}
		out[i] = float32(amp * s)
	}
	return out
}

func mix(a, b []float32) []float32 {
	out := make([]float32, len(a))
	for i := range out {
		out[i] = a[i]
		if i < len(b) {
			out[i] += b[i]
		}
	}
	return out
}

func mono(x []float32, rate int) *Audio {
	return &Audio{Rate: rate, Channels: 1, Coding: "float32", Data: x}
}

// fitSine fits a*sin + b*cos at freq to x by least squares and returns the
// amplitude and the RMS of what is left.
func fitSine(x []float32, freq, rate float64) (amp, resid float64) {
	var ss, cc, sc, xs, xc float64
	for i, v := range x {
		w := 2 * math.Pi * freq * float64(i) / rate
		s, c := math.Sin(w), math.Cos(w)
		ss, cc, sc = ss+s*s, cc+c*c, sc+s*c
		xs, xc = xs+float64(v)*s, xc+float64(v)*c
	}
	det := ss*cc - sc*sc
	a := (xs*cc - xc*sc) / det
	b := (xc*ss - xs*sc) / det
	var r float64
	for i, v := range x {
		w := 2 * math.Pi * freq * float64(i) / rate
		d := float64(v) - a*math.Sin(w) - b*math.Cos(w)
		r += d * d
	}
	return math.Hypot(a, b), math.Sqrt(r / float64(len(x)))
}

// encodeAs writes x as a WAV file with the given coding. With two channels
// they carry 0.5x and 1.5x, whose mean is x.
func encodeAs(x []float32, rate, channels, bits int, tag uint16) []byte {
	bps := bits / 8
	data := make([]byte, len(x)*channels*bps)
	for i, v := range x {
		for ch := 0; ch < channels; ch++ {
			s := v
			if channels > 1 {
				s = v * [2]float32{0.5, 1.5}[ch%2]
			}
			putSample(data[(i*channels+ch)*bps:], s, bits, tag)
		}
	}
	return wavBytes(tag, channels, rate, bits, data)
}

func putSample(b []byte, v float32, bits int, tag uint16) {
	switch {
	case tag == wavFloat:
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	case bits == 16:
		binary.LittleEndian.PutUint16(b, uint16(toPCM16(v)))
	case bits == 24:
		s := int32(math.Round(float64(v) * (1 << 23)))
		b[0], b[1], b[2] = byte(s), byte(s>>8), byte(s>>16)
	default:
		binary.LittleEndian.PutUint32(b, uint32(int32(math.Round(float64(v)*(1<<31)))))
	}
}

func decodeBytes(b []byte) (*Audio, error) { return ReadWAV(bytes.NewReader(b)) }
