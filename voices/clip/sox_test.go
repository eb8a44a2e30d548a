package clip

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"testing"
)

// The mixes here are made by sox at test time, as the fixtures' script
// would: a bed at a known level under the espeak-ng speech. The tests skip
// when sox is not installed (CI installs it).

func soxBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sox")
	if err != nil {
		t.Skip("sox not installed")
	}
	return p
}

func sox(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sox %v: %v\n%s", args, err, out)
	}
}

// soxMix makes a bed with sox's synth effect (e.g. "whitenoise", or
// "sine 50 sine 100"), scaled so its power is snr dB under the speech's,
// mixed under speech.wav. It returns the mix as read back and the bed's
// power.
func soxMix(t *testing.T, bin, dir string, snr float64, synth ...string) (*Audio, float64) {
	t.Helper()
	fx := loadSpeech(t)
	raw := filepath.Join(dir, "raw.wav")
	args := append([]string{"-D", "-n", "-r", "22050", "-c", "1", "-b", "32", "-e", "floating-point", raw, "synth", "21.012"}, synth...)
	sox(t, bin, append(args, "vol", "0.1")...)
	a, err := (Decoder{}).Decode(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	p := meanPower(Resample(a.Data, 22050, SampleRate))
	gain := math.Sqrt(fx.speechPower() / math.Pow(10, snr/10) / p)
	bed := filepath.Join(dir, "bed.wav")
	sox(t, bin, "-D", raw, "-b", "32", "-e", "floating-point", bed, "vol", fmt.Sprint(gain))
	mixed := filepath.Join(dir, "mix.wav")
	sox(t, bin, "-D", "-m", "-v", "1", "testdata/speech.wav", "-v", "1", bed, "-b", "32", "-e", "floating-point", mixed)
	m, err := (Decoder{}).Decode(context.Background(), mixed)
	if err != nil {
		t.Fatal(err)
	}
	return m, p * gain * gain
}

func meanPower(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s / float64(len(x))
}

func TestSoxMixes(t *testing.T) {
	bin := soxBin(t)
	for _, tc := range []struct {
		name   string
		snr    float64
		synth  []string
		tonal  bool
		refuse bool
	}{
		{"noise30", 30, []string{"whitenoise"}, false, false},
		{"noise15", 15, []string{"whitenoise"}, false, false},
		{"noise3", 3, []string{"whitenoise"}, false, true},
		{"hum20", 20, []string{"sine", "50", "sine", "100", "sine", "150"}, true, false},
		{"music15", 15, []string{"sine", "220", "sine", "277.18", "sine", "329.63"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, p := soxMix(t, bin, t.TempDir(), tc.snr, tc.synth...)
			an := analyse(Clip{Name: tc.name, Audio: a}, DefaultDetector())
			bg := an.report.Background
			if !bg.Measured || math.Abs(bg.DBFS()-DB(p)) > 2 || math.Abs(an.report.SNR-tc.snr) > 2 {
				t.Fatalf("want background %.2f dBFS and %.0f dB under the speech, within 2 dB; got %.2f and %.2f",
					DB(p), tc.snr, bg.DBFS(), an.report.SNR)
			}
			if bg.Tonal() != tc.tonal {
				t.Fatalf("tonal: want %v, got %v (flatness %.4f)", tc.tonal, bg.Tonal(), bg.Flatness)
			}
			_, err := Prepare([]Clip{{Name: tc.name, Audio: a}}, Options{})
			if got := errors.Is(err, ErrNoisyBackground); got != tc.refuse {
				t.Fatalf("refused: want %v, got %v", tc.refuse, err)
			}
		})
	}
}
