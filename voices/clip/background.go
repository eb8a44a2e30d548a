package clip

import (
	"math"
	"math/cmplx"
)

// Background measurement.
const (
	BackgroundDistance  = 10   // frames: a background frame is at least 0.1 s from any speech
	BackgroundMinFrames = 30   // frames: 0.3 s needed to measure the background
	TonalFlatness       = 0.06 // spectral flatness under this is a tonal background
	WarnSNR             = 30.0 // dB: under this, a warning
	RefuseSNR           = 5.0  // dB: under this, a refusal unless forced
	flatnessBand        = 0.9  // of the recording's Nyquist frequency
	welchSize           = 2048
	shortSize           = 512
)

// Background is what was measured of the non-speech part of a clip.
type Background struct {
	Measured bool    // false with under 0.3 s of background frames
	Frames   int     // background frames found
	Power    float64 // mean power of the background frames
	Flatness float64 // spectral flatness of the background, 0..1
}

// DBFS returns the background level.
func (b Background) DBFS() float64 { return DB(b.Power) }

// Tonal reports a tonal background (music or hum). A digitally silent
// background is not tonal.
func (b Background) Tonal() bool {
	return b.Measured && b.Power > 1e-9 && b.Flatness < TonalFlatness
}

// backgroundMask marks frames at least BackgroundDistance frames from any
// speech frame.
func backgroundMask(speech []bool) []bool {
	mask := make([]bool, len(speech))
	last := -1 << 30
	for i, s := range speech {
		if s {
			last = i
		}
		mask[i] = !s && i-last >= BackgroundDistance
	}
	next := 1 << 30
	for i := len(speech) - 1; i >= 0; i-- {
		if speech[i] {
			next = i
		}
		mask[i] = mask[i] && next-i >= BackgroundDistance
	}
	return mask
}

// measureBackground measures the frames of x marked by mask. srcRate is
// the rate the clip was recorded at: its flatness is taken only over the
// band the recording holds (up to 90 % of its Nyquist frequency), so a
// 16 kHz recording's empty top band does not read as tonal.
func measureBackground(x signal, p []float64, mask []bool, srcRate int) (Background, error) {
	var b Background
	var sum float64
	for i, m := range mask {
		if m {
			b.Frames++
			sum += p[i]
		}
	}
	if b.Frames < BackgroundMinFrames {
		return b, nil
	}
	b.Measured = true
	b.Power = sum / float64(b.Frames)
	ps, err := backgroundSpectrum(x, mask)
	if err != nil {
		return b, err
	}
	top := float64(min(srcRate, SampleRate)) / 2 * flatnessBand
	b.Flatness = flatness(ps[:min(len(ps), int(top/(SampleRate/float64(2*(len(ps)-1))))+1)])
	return b, nil
}

// backgroundSpectrum averages Hann-windowed power spectra: 2048-point
// segments (half overlapped) over contiguous background runs long enough,
// else 512-point spectra of single frames.
func backgroundSpectrum(x signal, mask []bool) ([]float64, error) {
	if s, err := averageSpectra(x, runs(mask), welchSize); s != nil || err != nil {
		return s, err
	}
	return averageSpectra(x, runs(mask), shortSize)
}

// spectrumRun is the samples of a background run read at once.
const spectrumRun = 1 << 18

func averageSpectra(x signal, rs [][2]int, size int) ([]float64, error) {
	var acc []float64
	count := 0
	win := hann(size)
	var buf []float32
	for _, r := range rs {
		lo, hi := r[0]*FrameSamples, min(x.Len(), r[1]*FrameSamples)
		// the run's samples in pieces of spectrumRun segments' hops, each
		// read with the size/2 samples the next segment shares
		for s := lo; s+size <= hi; {
			end := min(hi, s+spectrumRun+size/2)
			seg := grow(&buf, end-s)
			if err := x.Read(seg, s); err != nil {
				return nil, err
			}
			at := s
			for ; at+size <= end; at += size / 2 {
				ps := powerSpectrum(seg[at-s:at-s+size], win)
				if acc == nil {
					acc = make([]float64, len(ps))
				}
				for i, v := range ps {
					acc[i] += v
				}
				count++
			}
			s = at
		}
	}
	if count == 0 {
		return nil, nil
	}
	for i := range acc {
		acc[i] /= float64(count)
	}
	return acc, nil
}

// flatness is the geometric over the arithmetic mean of bins 1.. of ps.
func flatness(ps []float64) float64 {
	if len(ps) < 2 {
		return 0
	}
	var logSum, sum float64
	for _, v := range ps[1:] {
		logSum += math.Log(v + 1e-30)
		sum += v
	}
	n := float64(len(ps) - 1)
	if sum <= 0 {
		return 0
	}
	return math.Exp(logSum/n) / (sum / n)
}

func hann(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
	}
	return w
}

// powerSpectrum returns |X_k|^2 for k = 0..N/2 of the windowed segment.
func powerSpectrum(seg []float32, win []float64) []float64 {
	c := make([]complex128, len(seg))
	for i, v := range seg {
		c[i] = complex(float64(v)*win[i], 0)
	}
	fft(c)
	out := make([]float64, len(seg)/2+1)
	for i := range out {
		a := cmplx.Abs(c[i])
		out[i] = a * a
	}
	return out
}

// fft is an in-place radix-2 FFT; len(a) must be a power of two. It only
// touches memory its caller owns, so the race detector skips it.
//
//go:norace
func fft(a []complex128) {
	n := len(a)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		w := cmplx.Exp(complex(0, -2*math.Pi/float64(size)))
		for start := 0; start < n; start += size {
			wk := complex(1, 0)
			for k := 0; k < size/2; k++ {
				u, v := a[start+k], a[start+k+size/2]*wk
				a[start+k], a[start+k+size/2] = u+v, u-v
				wk *= w
			}
		}
	}
}
