package clip

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
)

func prepareOne(t *testing.T, x []float32, rate int, opts Options) (*Result, error) {
	t.Helper()
	return Prepare([]Clip{{Name: "clip.wav", Audio: mono(x, rate)}}, opts)
}

func hasWarning(res *Result, code string) *Warning {
	for i, w := range res.Warnings {
		if w.Code == code {
			return &res.Warnings[i]
		}
	}
	return nil
}

// remeasure analyses a prepared reference afresh.
func remeasure(r Reference) ClipReport {
	return analyse(Clip{Name: "ref", Audio: mono(r.Samples, SampleRate)}, DefaultDetector()).report
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func scaled(x []float32, db float64) []float32 {
	g := float32(math.Pow(10, db/20))
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v * g
	}
	return out
}

// compressed lowers the crest factor of x so that levelling is not held
// back by the peak limit.
func compressed(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(math.Tanh(4*float64(v)) / 4)
	}
	return out
}

func TestTrimPointsSpeechFixture(t *testing.T) {
	fx := loadSpeech(t)
	res, err := prepareOne(t, fx.x, SampleRate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.References) != 1 || len(res.Warnings) != 0 {
		t.Fatalf("want 1 reference and no warnings, got %d and %v", len(res.References), res.Warnings)
	}
	r := res.References[0]
	wantStart := fx.spans[0][0] - MarginFrames*FrameSamples
	wantEnd := fx.spans[len(fx.spans)-1][1] + MarginFrames*FrameSamples
	if abs(r.Start-wantStart) > FrameSamples || abs(r.End-wantEnd) > FrameSamples {
		t.Fatalf("trim: want %d..%d within 441 samples (10 ms), got %d..%d", wantStart, wantEnd, r.Start, r.End)
	}
	if len(r.Samples) != r.End-r.Start || r.Frames() != (r.End-r.Start+2047)/2048 {
		t.Fatalf("samples %d, frames %d for span %d..%d", len(r.Samples), r.Frames(), r.Start, r.End)
	}
}

var (
	burstOnce sync.Once
	burst42   []float32
)

// burst is a stand-in for a voiced stretch: a 140 Hz harmonic complex,
// amplitude-modulated at 4 Hz, starting and stopping sharply. The first
// 42 s are made once and sliced.
func burst(n int, amp float64) []float32 {
	burstOnce.Do(func() {
		burst42 = make([]float32, 42*SampleRate)
		for i := range burst42 {
			tt := float64(i) / SampleRate
			env := 0.6 + 0.4*math.Sin(2*math.Pi*4*tt)
			var s float64
			for h := 1; h <= 8; h++ {
				s += math.Sin(2*math.Pi*140*float64(h)*tt+float64(h)) / float64(h)
			}
			burst42[i] = float32(env * s / 2)
		}
	})
	out := make([]float32, n)
	for i := range out {
		out[i] = burst42[i%len(burst42)] * float32(amp)
	}
	return out
}

// place puts bursts into silence of n samples at [start, end) spans.
func place(n int, amp float64, spans ...[2]int) []float32 {
	x := make([]float32, n)
	for _, s := range spans {
		copy(x[s[0]:s[1]], burst(s[1]-s[0], amp))
	}
	return x
}

func TestTrimPointsSynthetic(t *testing.T) {
	for _, tc := range []struct{ start, end int }{
		{44100, 44100 * 13}, {30000, 500000}, {11025, 600123}, {5000, 700000}, {100000, 44100*13 + 300},
	} {
		t.Run(fmt.Sprintf("%d-%d", tc.start, tc.end), func(t *testing.T) {
			n := tc.end + 2*SampleRate
			res, err := prepareOne(t, place(n, 0.3, [2]int{tc.start, tc.end}), SampleRate, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := res.References[0]
			wantStart := max(0, tc.start-11025)
			if abs(r.Start-wantStart) > FrameSamples || abs(r.End-(tc.end+11025)) > FrameSamples {
				t.Fatalf("want %d..%d within 441 samples, got %d..%d", wantStart, tc.end+11025, r.Start, r.End)
			}
		})
	}
}

func TestLevels(t *testing.T) {
	fx := loadSpeech(t)
	soft := compressed(scaled(fx.x, 6))
	for _, db := range []float64{-35, -20, -10, -3} {
		t.Run(fmt.Sprintf("%+.0fdB", db), func(t *testing.T) {
			res, err := prepareOne(t, scaled(soft, db), SampleRate, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.References {
				q := requantize(r.Samples)
				m := remeasure(Reference{Samples: q})
				if math.Abs(m.SpeechDBFS-TargetSpeechDBFS) > 0.5 || math.Abs(r.SpeechDBFS-TargetSpeechDBFS) > 0.5 {
					t.Fatalf("speech level: want -20 dBFS within 0.5 dB, got %.2f (reported %.2f)", m.SpeechDBFS, r.SpeechDBFS)
				}
				if p := peakDB(q); p > MaxPeakDBFS {
					t.Fatalf("peak %.2f dBFS over -1", p)
				}
			}
		})
	}
}

// requantize rounds samples to 16 bits, as the written file holds them.
func requantize(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(toPCM16(v)) / 32768
	}
	return out
}

func peakDB(x []float32) float64 {
	var p float64
	for _, v := range x {
		p = max(p, math.Abs(float64(v)))
	}
	return 20 * math.Log10(p)
}

func TestPeakLimit(t *testing.T) {
	// a crest factor over 19 dB: the peak, not the speech level, decides
	x := place(15*SampleRate, 0.01, [2]int{SampleRate, 14 * SampleRate})
	x[5*SampleRate] = 0.9
	res, err := prepareOne(t, x, SampleRate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := res.References[0]
	if p := peakDB(requantize(r.Samples)); p > MaxPeakDBFS || p < MaxPeakDBFS-0.1 {
		t.Fatalf("peak: want just under -1 dBFS, got %.3f", p)
	}
	if r.SpeechDBFS > -25 || hasWarning(res, WarnLevelCapped) == nil {
		t.Fatalf("want the level held low with a level_capped warning, got %.2f dBFS, %v", r.SpeechDBFS, res.Warnings)
	}
}

// withNoise mixes n into the speech fixture at snr dB under its speech power.
func withNoise(fx fixture, snr float64, noise func(n int, power float64) []float32) ([]float32, float64) {
	p := fx.speechPower() / math.Pow(10, snr/10)
	return mix(fx.x, noise(len(fx.x), p)), p
}

func white(n int, p float64) []float32 { return gauss(n, p, 42) }
func hum(n int, p float64) []float32   { return sines(n, SampleRate, p, 50, 100, 150, 250) }
func music(n int, p float64) []float32 { return sines(n, SampleRate, p, 220, 277.18, 329.63, 440) }

func TestBackgroundEstimates(t *testing.T) {
	fx := loadSpeech(t)
	for _, tc := range []struct {
		name  string
		snr   float64
		noise func(int, float64) []float32
		tonal bool
	}{
		{"white30", 30, white, false}, {"white15", 15, white, false}, {"white3", 3, white, false},
		{"hum20", 20, hum, true}, {"music15", 15, music, true}, {"hum3", 3, hum, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, p := withNoise(fx, tc.snr, tc.noise)
			an := analyse(Clip{Name: "c", Audio: mono(x, SampleRate)}, DefaultDetector())
			bg := an.report.Background
			if !bg.Measured || math.Abs(bg.DBFS()-DB(p)) > 2 {
				t.Fatalf("background: want %.2f dBFS within 2 dB, got %.2f (measured %v)", DB(p), bg.DBFS(), bg.Measured)
			}
			if math.Abs(an.report.SNR-tc.snr) > 2 {
				t.Fatalf("speech over background: want %.0f dB within 2 dB, got %.2f", tc.snr, an.report.SNR)
			}
			if bg.Tonal() != tc.tonal {
				t.Fatalf("tonal: want %v, got %v (flatness %.4f)", tc.tonal, bg.Tonal(), bg.Flatness)
			}
		})
	}
}

func TestNoiseWarningsAndRefusal(t *testing.T) {
	fx := loadSpeech(t)
	x30, _ := withNoise(fx, 35, white)
	res, err := prepareOne(t, x30, SampleRate, Options{})
	if err != nil || hasWarning(res, WarnNoisy) != nil {
		t.Fatalf("35 dB: want no noise warning, got %v %v", err, res.Warnings)
	}
	x15, _ := withNoise(fx, 15, white)
	res, err = prepareOne(t, x15, SampleRate, Options{})
	if err != nil || hasWarning(res, WarnNoisy) == nil || hasWarning(res, WarnTonal) != nil {
		t.Fatalf("15 dB: want a noisy_background warning only, got %v %v", err, res.Warnings)
	}
	x3, _ := withNoise(fx, 3, white)
	res, err = prepareOne(t, x3, SampleRate, Options{})
	var re *RefusalError
	if !errors.Is(err, ErrNoisyBackground) || !errors.As(err, &re) || re.Source != "clip.wav" || len(res.References) != 0 {
		t.Fatalf("3 dB: want a noisy_background refusal naming the clip, got %v", err)
	}
	if !strings.Contains(err.Error(), "--force") {
		t.Fatalf("the refusal should say how to go on: %v", err)
	}
	res, err = prepareOne(t, x3, SampleRate, Options{Force: true})
	if err != nil || len(res.References) != 1 || hasWarning(res, WarnNoisy) == nil {
		t.Fatalf("3 dB forced: want a reference and a warning, got %v %v", err, res.Warnings)
	}
}

func TestTonalWarningNamesMusicOrHum(t *testing.T) {
	fx := loadSpeech(t)
	for _, noise := range []func(int, float64) []float32{hum, music} {
		x, _ := withNoise(fx, 20, noise)
		res, err := prepareOne(t, x, SampleRate, Options{})
		if err != nil {
			t.Fatal(err)
		}
		w := hasWarning(res, WarnTonal)
		if w == nil || !strings.Contains(w.Msg, "music or hum") {
			t.Fatalf("want a tonal_background warning naming music or hum, got %v", res.Warnings)
		}
	}
	x, _ := withNoise(fx, 2, hum)
	_, err := prepareOne(t, x, SampleRate, Options{})
	if !errors.Is(err, ErrNoisyBackground) || !strings.Contains(err.Error(), "music or hum") {
		t.Fatalf("want a noisy_background refusal naming the tonal background, got %v", err)
	}
}

func TestRefusals(t *testing.T) {
	fx := loadSpeech(t)
	short := place(8*SampleRate, 0.3, [2]int{SampleRate, 5 * SampleRate})
	noisy, _ := withNoise(fx, 3, white)
	tests := []struct {
		name   string
		clips  [][]float32
		target error
		code   string
	}{
		{"silence", [][]float32{make([]float32, 15*SampleRate)}, ErrNoSpeech, CodeNoSpeech},
		{"short", [][]float32{short}, ErrTooShort, CodeTooShort},
		{"two short", [][]float32{short, short}, ErrTooShort, CodeTooShort},
		{"noisy", [][]float32{noisy}, ErrNoisyBackground, CodeNoisyBackground},
		{"one of two silent", [][]float32{fx.x, make([]float32, SampleRate)}, ErrNoSpeech, CodeNoSpeech},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clips []Clip
			for i, x := range tt.clips {
				clips = append(clips, Clip{Name: fmt.Sprintf("c%d.wav", i), Audio: mono(x, SampleRate)})
			}
			res, err := Prepare(clips, Options{})
			var re *RefusalError
			if !errors.Is(err, tt.target) || !errors.As(err, &re) || re.Code != tt.code {
				t.Fatalf("want %s, got %v", tt.code, err)
			}
			if res == nil || len(res.References) != 0 {
				t.Fatal("a refusal keeps no references but returns the reports")
			}
		})
	}
	// two 5 s clips make 10 s: accepted
	long := place(9*SampleRate, 0.3, [2]int{SampleRate, 7*SampleRate + 2000})
	if _, err := Prepare([]Clip{{Name: "a", Audio: mono(long, SampleRate)}, {Name: "b", Audio: mono(long, SampleRate)}}, Options{}); err != nil {
		t.Fatalf("two clips of 6.5 s each: %v", err)
	}
}

func TestClippingWarning(t *testing.T) {
	fx := loadSpeech(t)
	x := scaled(fx.x, 12)
	for i, v := range x {
		x[i] = max(-1, min(1, v))
	}
	res, err := prepareOne(t, x, SampleRate, Options{})
	if err != nil || hasWarning(res, WarnClipping) == nil {
		t.Fatalf("want a clipping warning, got %v %v", err, res.Warnings)
	}
	res, _ = prepareOne(t, fx.x, SampleRate, Options{})
	if hasWarning(res, WarnClipping) != nil {
		t.Fatal("a clean clip is not clipped")
	}
}

func TestEdgeWarnings(t *testing.T) {
	fx := loadSpeech(t)
	mid := (fx.spans[0][0] + fx.spans[0][1]) / 2
	end := (fx.spans[3][0] + fx.spans[3][1]) / 2
	res, err := prepareOne(t, fx.x[mid:end], SampleRate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if hasWarning(res, WarnStartsInSpeech) == nil || hasWarning(res, WarnEndsInSpeech) == nil {
		t.Fatalf("want starts_in_speech and ends_in_speech, got %v", res.Warnings)
	}
}

func TestCutIntoPauses(t *testing.T) {
	fx := loadSpeech(t)
	var x []float32
	for range 4 {
		x = append(x, fx.x...)
	}
	res, err := prepareOne(t, x, SampleRate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, r := range res.References {
		if len(r.Samples) > MaxRefSamples || r.Frames() > MaxRefFrames {
			t.Fatalf("reference %d: %d samples, %d frames, over 30 s", i, len(r.Samples), r.Frames())
		}
		// each cut falls in silence of the source
		for _, at := range []int{r.Start, r.End - 1} {
			if v := x[at]; v != 0 {
				t.Fatalf("reference %d: cut at %d inside sound (%v)", i, at, v)
			}
		}
		total += len(r.Samples)
	}
	if total > MaxTotal || len(res.References) > MaxRefs || total < 50*SampleRate {
		t.Fatalf("want up to 60 s in up to 8 references, got %.1f s in %d", float64(total)/SampleRate, len(res.References))
	}
	if hasWarning(res, WarnDropped) == nil || hasWarning(res, WarnNoPause) != nil {
		t.Fatalf("want dropped pieces reported and no no_pause, got %v", res.Warnings)
	}
}

func TestNoPause(t *testing.T) {
	x := place(42*SampleRate, 0.3, [2]int{SampleRate, 41 * SampleRate})
	res, err := prepareOne(t, x, SampleRate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if hasWarning(res, WarnNoPause) == nil || len(res.References) != 2 {
		t.Fatalf("want a no_pause warning and 2 references, got %d %v", len(res.References), res.Warnings)
	}
	for _, r := range res.References {
		if len(r.Samples) > MaxRefSamples {
			t.Fatalf("reference of %d samples, over 30 s", len(r.Samples))
		}
	}
}

func TestFormatsAndRatesAgree(t *testing.T) {
	// the fixture's own 22.05 kHz samples and one 48 kHz version, cut to
	// the first 16 s (three sentences)
	raw, err := (Decoder{}).Decode(context.Background(), "testdata/speech.wav")
	if err != nil {
		t.Fatal(err)
	}
	x22 := raw.Data[:16*22050]
	x48 := Resample(x22, 22050, 48000)
	base, err := prepareOne(t, Resample(x22, 22050, SampleRate), SampleRate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := base.References[0]
	for _, tc := range []struct {
		x        []float32
		rate     int
		channels int
		bits     int
		tag      uint16
	}{
		{x22, 22050, 1, 16, wavPCM}, {x48, 48000, 2, 24, wavPCM}, {x48, 48000, 1, 32, wavFloat},
	} {
		t.Run(fmt.Sprintf("%d-%dch-%d-%d", tc.rate, tc.channels, tc.bits, tc.tag), func(t *testing.T) {
			a, err := decodeBytes(encodeAs(tc.x, tc.rate, tc.channels, tc.bits, tc.tag))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Prepare([]Clip{{Name: "c", Audio: a}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := res.References[0]
			if abs(r.Start-want.Start) > FrameSamples || abs(r.End-want.End) > FrameSamples || math.Abs(r.SpeechDBFS-want.SpeechDBFS) > 0.5 {
				t.Fatalf("want %d..%d at %.2f dBFS, got %d..%d at %.2f", want.Start, want.End, want.SpeechDBFS, r.Start, r.End, r.SpeechDBFS)
			}
		})
	}
}

func FuzzPrepare(f *testing.F) {
	burstBytes := func(n int) []byte {
		b := make([]byte, 2*n)
		x := make([]float32, n)
		copy(x[n/4:], sines(n/2, SampleRate, 0.05, 140, 280, 420))
		for i, v := range x {
			b[2*i], b[2*i+1] = byte(toPCM16(v)), byte(uint16(toPCM16(v))>>8)
		}
		return b
	}
	f.Add(uint8(0), burstBytes(4410))
	f.Add(uint8(3), burstBytes(20000))
	f.Add(uint8(1), []byte{0xff, 0x7f, 0xff, 0x7f, 0xff, 0x7f, 0, 0x80})
	f.Add(uint8(2), []byte{})
	rates := []int{SampleRate, 8000, 22050, 48000}
	f.Fuzz(func(t *testing.T, rate uint8, b []byte) {
		b = b[:min(len(b), 1<<16)] // up to 0.7 s at 44.1 kHz, 4 s at 8 kHz: quick executions
		x := make([]float32, len(b)/2)
		for i := range x {
			x[i] = float32(int16(uint16(b[2*i])|uint16(b[2*i+1])<<8)) / 32768
		}
		res, err := Prepare([]Clip{{Name: "f", Audio: mono(x, rates[int(rate)%len(rates)])}}, Options{})
		var re *RefusalError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("want a refusal or nothing, got %v", err)
		}
		total := 0
		for _, r := range res.References {
			if len(r.Samples) == 0 || len(r.Samples) > MaxRefSamples || r.Start < 0 || r.End < r.Start {
				t.Fatalf("bad reference %d..%d (%d samples)", r.Start, r.End, len(r.Samples))
			}
			total += len(r.Samples)
		}
		if len(res.References) > MaxRefs || total > MaxTotal {
			t.Fatalf("%d references, %d samples", len(res.References), total)
		}
	})
}

func TestBandLimitedNoiseIsNotTonal(t *testing.T) {
	// a 16 kHz recording holds nothing over 8 kHz: that empty band is not
	// a tonal background
	fx := loadSpeech(t)
	x := Resample(fx.x, SampleRate, 16000)
	x = mix(x, gauss(len(x), fx.speechPower()/100, 9))
	an := analyse(Clip{Name: "c", Audio: mono(x, 16000)}, DefaultDetector())
	if bg := an.report.Background; !bg.Measured || bg.Tonal() || math.Abs(an.report.SNR-20) > 2 {
		t.Fatalf("want white noise 20 dB under, not tonal; got %.2f dB, flatness %.3f", an.report.SNR, bg.Flatness)
	}
}
