package clip

import (
	"testing"
	"time"
)

// reportCPU reports the process's CPU time per operation since start: on a
// shared machine it moves less than the wall time does.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
	}
}

// sixtySeconds repeats the speech fixture to 60 s at rate with channels.
func sixtySeconds(b *testing.B, rate, channels int) *Audio {
	fx := loadSpeech(b)
	var x []float32
	for len(x) < 60*SampleRate {
		x = append(x, fx.x...)
	}
	x = Resample(x[:60*SampleRate], SampleRate, rate)
	a := &Audio{Rate: rate, Channels: channels, Coding: "float32", Data: make([]float32, len(x)*channels)}
	for i, v := range x {
		for c := range channels {
			a.Data[i*channels+c] = v
		}
	}
	return a
}

func benchPrepare(b *testing.B, rate, channels int) {
	a := sixtySeconds(b, rate, channels)
	b.SetBytes(int64(len(a.Data)) * 4)
	b.ResetTimer()
	start := processCPU()
	for b.Loop() {
		if _, err := Prepare([]Clip{{Name: "b", Audio: a}}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkPrepare60s44k prepares 60 s of 44.1 kHz mono speech.
func BenchmarkPrepare60s44k(b *testing.B) { benchPrepare(b, SampleRate, 1) }

// BenchmarkPrepare60s48kStereo prepares 60 s of 48 kHz stereo speech
// (mixing and resampling included).
func BenchmarkPrepare60s48kStereo(b *testing.B) { benchPrepare(b, 48000, 2) }

// BenchmarkPrepare60s96kStereo prepares 60 s of 96 kHz stereo speech: the
// resampler's longest filter (about 250 taps a sample) of the usual rates.
func BenchmarkPrepare60s96kStereo(b *testing.B) { benchPrepare(b, 96000, 2) }
