package clip

import (
	"fmt"
	"math"
	"testing"
)

// middle drops the edges, where the filter sees the zero padding.
func middle(x []float32) []float32 { return x[len(x)/8 : len(x)-len(x)/8] }

func TestResampleInBandAmplitude(t *testing.T) {
	for _, from := range []int{8000, 16000, 22050, 32000, 48000, 96000, 44099} {
		nyq := float64(min(from, SampleRate)) / 2
		for _, frac := range []float64{0.01, 0.25, 0.5, 0.75, 0.9} {
			f := frac * nyq
			t.Run(fmt.Sprintf("%d/%.0fHz", from, f), func(t *testing.T) {
				x := sines(from/2, from, 0.125, f) // amplitude 0.5
				y := Resample(x, from, SampleRate)
				if want := (len(x)*SampleRate + from - 1) / from; len(y) != want {
					t.Fatalf("length: want %d, got %d", want, len(y))
				}
				ax, _ := fitSine(middle(x), f, float64(from))
				ay, resid := fitSine(middle(y), f, SampleRate)
				if db := 20 * math.Log10(ay/ax); math.Abs(db) > 0.1 {
					t.Fatalf("in-band amplitude off by %.3f dB", db)
				}
				if rdb := 20 * math.Log10(resid/ay); rdb > -60 {
					t.Fatalf("distortion %.1f dB under the tone, want under -60", rdb)
				}
			})
		}
	}
}

func TestResampleNoAliasing(t *testing.T) {
	// tones above 22.05 kHz must not fold back into the output band
	for _, tc := range []struct{ from, f int }{{48000, 22100}, {48000, 23000}, {48000, 23900}, {96000, 30000}, {96000, 47000}} {
		t.Run(fmt.Sprintf("%d/%dHz", tc.from, tc.f), func(t *testing.T) {
			x := sines(tc.from/2, tc.from, 0.125, float64(tc.f))
			y := middle(Resample(x, tc.from, SampleRate))
			var p float64
			for _, v := range y {
				p += float64(v) * float64(v)
			}
			if db := DB(p/float64(len(y))) - DB(0.125); db > -70 {
				t.Fatalf("a %d Hz tone leaks through at %.1f dB, want under -70 dB", tc.f, db)
			}
		})
	}
}

func TestResampleNoImages(t *testing.T) {
	// upsampling 22.05 kHz: a 9 kHz tone must not leave an image at 13.05 kHz
	x := sines(11025, 22050, 0.125, 9000)
	y := middle(Resample(x, 22050, SampleRate))
	ai, _ := fitSine(y, 22050-9000, SampleRate)
	at, _ := fitSine(y, 9000, SampleRate)
	if db := 20 * math.Log10(ai/at); db > -70 {
		t.Fatalf("image at %.1f dB, want under -70 dB", db)
	}
}

func TestResampleSameRateAndEmpty(t *testing.T) {
	x := []float32{1, 2, 3}
	y := Resample(x, SampleRate, SampleRate)
	y[0] = 9
	if x[0] != 1 || len(y) != 3 {
		t.Fatal("same-rate resample must return a copy")
	}
	if len(Resample(nil, 48000, SampleRate)) != 0 {
		t.Fatal("empty in, empty out")
	}
}

func BenchmarkResample48kTo44k(b *testing.B) {
	x := sines(48000*60, 48000, 0.1, 440, 3000)
	b.SetBytes(int64(len(x)) * 4)
	b.ResetTimer()
	start := processCPU()
	for b.Loop() {
		Resample(x, 48000, SampleRate)
	}
	reportCPU(b, start)
}
