package voicecmd

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/voices/clip"
)

const speechWAV = "../../../voices/clip/testdata/speech.wav"

func TestPrepareFlags(t *testing.T) {
	tests := []struct {
		args    string
		wantErr string
		check   func(*PrepareOptions) bool
	}{
		{"a.wav b.flac -o out", "", func(o *PrepareOptions) bool {
			return strings.Join(o.Clips, ",") == "a.wav,b.flac" && o.OutDir == "out" && !o.Force && !o.Replace && o.Detector == clip.DefaultDetector()
		}},
		{"a.wav --output out --force --replace --ffmpeg /opt/ffmpeg", "", func(o *PrepareOptions) bool {
			return o.Force && o.Replace && o.FFmpeg == "/opt/ffmpeg"
		}},
		{"a.wav -o out --above-floor 6 --below-top 30 --min-level -50", "", func(o *PrepareOptions) bool {
			return o.Detector.AboveFloor == 6 && o.Detector.BelowTop == 30 && o.Detector.MinLevel == -50
		}},
		{"a.wav", "-o DIR is required", nil},
		{"-o out", "requires at least 1 arg", nil},
		{"a.wav -o out --below-top 0", "--below-top", nil},
		{"a.wav -o out --above-floor -1", "--above-floor", nil},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			ios, _, _, _ := cmdtest.IOStreams()
			var got *PrepareOptions
			err := cmdtest.Execute(NewCmdPrepare(cmdtest.Factory(ios), func(_ context.Context, o *PrepareOptions) error { got = o; return nil }), strings.Fields(tt.args)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want an error with %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Fatalf("err %v, options %+v", err, got)
			}
		})
	}
}

func newPrepareOpts(t *testing.T, clips ...string) (*PrepareOptions, *strings.Builder, *strings.Builder) {
	t.Helper()
	ios, _, _, _ := cmdtest.IOStreams()
	o := &PrepareOptions{F: cmdtest.Factory(ios), Clips: clips, OutDir: filepath.Join(t.TempDir(), "prep"), Detector: clip.DefaultDetector()}
	sb, eb := &strings.Builder{}, &strings.Builder{}
	ios.Out, ios.ErrOut = sb, eb
	return o, sb, eb
}

func TestPrepareRunWritesReferencesAndManifest(t *testing.T) {
	o, out, errOut := newPrepareOpts(t, speechWAV)
	if err := runPrepare(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	cols := strings.Split(strings.TrimSpace(out.String()), "\t")
	if len(cols) != 8 || cols[0] != "ref-01.wav" || cols[1] != speechWAV || cols[2] != "0.75" {
		t.Fatalf("stdout: want one tab-separated row, got %q", out.String())
	}
	if !strings.Contains(errOut.String(), "wrote 1 references") || !strings.Contains(errOut.String(), "drama encode --manifest") {
		t.Fatalf("stderr: %q", errOut.String())
	}
	m, err := clip.ReadManifest(o.OutDir)
	if err != nil || len(m.References) != 1 {
		t.Fatalf("manifest: %v %+v", err, m)
	}
	if _, err := (clip.Decoder{}).Decode(context.Background(), filepath.Join(o.OutDir, "ref-01.wav")); err != nil {
		t.Fatal(err)
	}

	// a second run refuses to replace the manifest unless asked
	err = runPrepare(context.Background(), o)
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "--replace") {
		t.Fatalf("want a usage error naming --replace, got %v", err)
	}
	o.Replace = true
	if err := runPrepare(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

func TestPrepareRunJSON(t *testing.T) {
	o, out, _ := newPrepareOpts(t, speechWAV)
	o.F.Global.JSON = true
	if err := runPrepare(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var m clip.Manifest
	if err := json.Unmarshal([]byte(out.String()), &m); err != nil || m.Format != clip.ManifestFormat || len(m.References) != 1 {
		t.Fatalf("stdout is not the manifest: %v %q", err, out.String())
	}
}

// writeWAV writes x (44.1 kHz mono) as a WAV file in a temporary directory.
func writeWAV(t *testing.T, name string, x []float32) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, clip.EncodeWAV(x, clip.SampleRate), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func noisySpeech(t *testing.T) string {
	a, err := (clip.Decoder{}).Decode(context.Background(), speechWAV)
	if err != nil {
		t.Fatal(err)
	}
	x := clip.Resample(a.Data, a.Rate, clip.SampleRate)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = x[i]*0.5 + float32(r.NormFloat64()*0.05)
	}
	return writeWAV(t, "noisy.wav", x)
}

func TestPrepareRunRefusals(t *testing.T) {
	silent := writeWAV(t, "silent.wav", make([]float32, 12*clip.SampleRate))
	o, _, _ := newPrepareOpts(t, speechWAV, silent)
	err := runPrepare(context.Background(), o)
	if !errors.Is(err, clip.ErrNoSpeech) || cmdutil.ExitCode(err) != cmdutil.ExitFailure || !strings.Contains(err.Error(), "silent.wav") {
		t.Fatalf("want a no_speech refusal naming the clip, exit 1, got %v", err)
	}
	if _, statErr := os.Stat(o.OutDir); !os.IsNotExist(statErr) {
		t.Fatal("a refusal must write nothing")
	}

	o, _, errOut := newPrepareOpts(t, noisySpeech(t))
	err = runPrepare(context.Background(), o)
	if !errors.Is(err, clip.ErrNoisyBackground) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("want a noisy_background refusal, got %v", err)
	}
	o.Force = true
	if err := runPrepare(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "warning: ") || !strings.Contains(errOut.String(), "noisy_background") {
		t.Fatalf("want the forced noise reported, got %q", errOut.String())
	}
}

func TestPrepareRunBadFiles(t *testing.T) {
	o, _, _ := newPrepareOpts(t, "../../../voices/clip/testdata/fmt-alaw.wav")
	err := runPrepare(context.Background(), o)
	if !errors.Is(err, clip.ErrUnsupported) || cmdutil.ExitCode(err) != cmdutil.ExitMismatch {
		t.Fatalf("want an unsupported-coding error with exit 3, got %v", err)
	}
	o, _, _ = newPrepareOpts(t, filepath.Join(t.TempDir(), "missing.wav"))
	if err := runPrepare(context.Background(), o); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want a not-exist error, got %v", err)
	}
}
