package clip

import (
	"math"
	"sync"
)

// Resampler design: a Kaiser-windowed sinc low-pass at 95 % of the lower
// Nyquist frequency with a transition band of 10 % of it, so the stop band
// starts exactly at the lower Nyquist frequency and nothing above it folds
// back. The window's beta gives about 90 dB of stop-band attenuation; the
// pass band (up to 90 % of the lower Nyquist frequency) is flat to well under
// 0.01 dB.
const (
	resampleCutoff     = 0.95 // cutoff / lower Nyquist
	resampleTransition = 0.10 // transition width / lower Nyquist
	resampleAtten      = 90.0 // stop-band attenuation, dB
	maxPhases          = 4096 // filter phases kept in the table
)

// Resample returns x, sampled at from Hz, resampled to to Hz with a
// windowed-sinc filter (see the design above). The output holds
// ceil(len(x)*to/from) samples. For a ratio whose reduced numerator is over
// 4096 the filter phase is rounded to the nearest 1/4096 of an input sample.
func Resample(x []float32, from, to int) []float32 {
	if from == to || len(x) == 0 {
		return append([]float32(nil), x...)
	}
	g := gcd(from, to)
	up, down := to/g, from/g
	k := cachedKernel(from, to, min(up, maxPhases))
	n := int((int64(len(x))*int64(up) + int64(down) - 1) / int64(down))
	out := make([]float32, n)
	for i := range out {
		base, phase := k.pos(i, up, down)
		out[i] = k.apply(x, base, phase)
	}
	return out
}

// pos returns the input sample and filter phase of output sample i.
func (k *kernel) pos(i, up, down int) (base, phase int) {
	num := int64(i) * int64(down)
	base = int(num / int64(up))
	phase = int(num % int64(up))
	if k.phases != up {
		p := (int64(phase)*int64(k.phases) + int64(up)/2) / int64(up)
		if p == int64(k.phases) {
			p, base = 0, base+1
		}
		phase = int(p)
	}
	return base, phase
}

// resampled is a File read as mono at SampleRate: each Read decodes the
// input frames its samples need and filters them as Resample would the
// whole clip, to the same bits.
type resampled struct {
	f        *File
	n        int // output samples
	in       int // input frames
	up, down int
	k        *kernel // nil when the File is at SampleRate
	win      []float32
}

func newResampled(f *File) *resampled {
	in := int(f.Frames())
	s := &resampled{f: f, n: in, in: in}
	if f.Rate == SampleRate || in == 0 {
		return s
	}
	g := gcd(f.Rate, SampleRate)
	s.up, s.down = SampleRate/g, f.Rate/g
	s.k = cachedKernel(f.Rate, SampleRate, min(s.up, maxPhases))
	s.n = int((int64(in)*int64(s.up) + int64(s.down) - 1) / int64(s.down))
	return s
}

// Len returns the number of output samples.
func (s *resampled) Len() int { return s.n }

// Read fills dst with output samples at, at+1, ...
func (s *resampled) Read(dst []float32, at int) error {
	if len(dst) == 0 {
		return nil
	}
	if s.k == nil {
		return s.f.readMono(dst, int64(at))
	}
	b0, _ := s.k.pos(at, s.up, s.down)
	b1, _ := s.k.pos(at+len(dst)-1, s.up, s.down)
	lo, hi := max(b0-s.k.half+1, 0), min(b1+s.k.half+1, s.in)
	win := grow(&s.win, max(hi-lo, 0))
	if err := s.f.readMono(win, int64(lo)); err != nil {
		return err
	}
	for i := range dst {
		base, phase := s.k.pos(at+i, s.up, s.down)
		dst[i] = s.k.applyWin(win, lo, s.in, base, phase)
	}
	return nil
}

// applyWin is apply on an input of n samples of which win holds those
// from lo on (all the taps around base that fall inside the input).
func (k *kernel) applyWin(win []float32, lo, n, base, phase int) float32 {
	taps := k.taps[phase]
	first := base - k.half + 1
	if first >= 0 && first+len(taps) <= n {
		return dot(win[first-lo:first-lo+len(taps)], taps)
	}
	var s float32
	for j, t := range taps {
		if i := first + j; i >= 0 && i < n {
			s += win[i-lo] * t
		}
	}
	return s
}

// kernel is a table of filter phases: taps[p] holds the 2*half taps for an
// output time p/phases of an input sample past the base sample.
type kernel struct {
	half   int
	phases int
	taps   [][]float32
}

// kernels keeps the filters made, by rate pair: making one takes longer
// than resampling a short clip with it.
var kernels struct {
	sync.Mutex
	m map[[2]int]*kernel
}

const maxKernels = 16

func cachedKernel(from, to, phases int) *kernel {
	kernels.Lock()
	defer kernels.Unlock()
	key := [2]int{from, to}
	if k := kernels.m[key]; k != nil {
		return k
	}
	if kernels.m == nil || len(kernels.m) >= maxKernels {
		kernels.m = map[[2]int]*kernel{}
	}
	k := newKernel(from, to, phases)
	kernels.m[key] = k
	return k
}

func newKernel(from, to, phases int) *kernel {
	nyq := float64(min(from, to)) / 2
	fc := resampleCutoff * nyq / float64(from)     // cycles per input sample
	tw := resampleTransition * nyq / float64(from) // cycles per input sample
	length := (resampleAtten - 7.95) / (2.285 * 2 * math.Pi * tw)
	half := int(math.Ceil(length/2)) + 1
	beta := 0.1102 * (resampleAtten - 8.7)
	k := &kernel{half: half, phases: phases, taps: make([][]float32, phases)}
	i0b := besselI0(beta)
	for p := range k.taps {
		frac := float64(p) / float64(phases)
		taps := make([]float64, 2*half)
		var sum float64
		for j := range taps {
			t := float64(j-half+1) - frac // input sample minus output time
			taps[j] = 2 * fc * sinc(2*fc*t) * besselI0(beta*math.Sqrt(max(0, 1-sq(t/float64(half))))) / i0b
			sum += taps[j]
		}
		k.taps[p] = make([]float32, len(taps))
		for j, v := range taps {
			k.taps[p][j] = float32(v / sum)
		}
	}
	return k
}

// apply filters around input sample base (taps cover base-half+1 .. base+half).
func (k *kernel) apply(x []float32, base, phase int) float32 {
	taps := k.taps[phase]
	lo := base - k.half + 1
	if lo >= 0 && lo+len(taps) <= len(x) {
		return dot(x[lo:lo+len(taps)], taps)
	}
	var s float32
	for j, t := range taps {
		if i := lo + j; i >= 0 && i < len(x) {
			s += x[i] * t
		}
	}
	return s
}

// dot returns the dot product of a and b (len(a) == len(b)), four
// products at a time. It only reads memory its caller owns, so the race
// detector is told to skip it: instrumented, it made the tests 30 times
// slower under -race.
//
//go:norace
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

func sq(x float64) float64 { return x * x }

// besselI0 is the modified Bessel function of the first kind, order zero.
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 200; k++ {
		term *= sq(x / (2 * float64(k)))
		sum += term
		if term < sum*1e-17 {
			break
		}
	}
	return sum
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
