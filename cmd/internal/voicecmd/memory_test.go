package voicecmd

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/voices/clip"
)

// bigClipBytes is the audio of the hostile clip: far under the 1 GiB limit
// of a WAV's data, far over what may be held in memory.
const bigClipBytes = 512 << 20

// maxHeapGrowth bounds the live heap a preparation may add, whatever the
// clip's size: the process stays well within 256 MiB resident.
const maxHeapGrowth = 96 << 20

// sparseWAV writes a 44.1 kHz 16-bit mono WAV of dataBytes bytes of
// silence, with 12 s of a -20 dBFS tone from 60 s, as a sparse file: the
// silence takes no disk.
func sparseWAV(t *testing.T, dataBytes int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big.wav")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(clip.WAVHeader(clip.SampleRate, dataBytes)); err != nil {
		t.Fatal(err)
	}
	tone := make([]float32, 12*clip.SampleRate)
	for i := range tone {
		tone[i] = float32(0.1 * math.Sin(2*math.Pi*440*float64(i)/clip.SampleRate))
	}
	pcm := clip.EncodeWAV(tone, clip.SampleRate)[44:]
	if _, err := f.WriteAt(pcm, 44+2*60*clip.SampleRate); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(44 + dataBytes)); err != nil {
		t.Fatal(err)
	}
	return p
}

// heapPeak samples the live heap every millisecond while f runs and
// returns its peak over the heap before f.
func heapPeak(f func()) uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base, peak := s[0].Value.Uint64(), uint64(0)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	<-stopped
	return max(peak, base) - base
}

// TestPrepareBigClipInBoundedMemory plays a hostile clip: a 512 MiB WAV
// (sparse, so it takes no disk), under the 1 GiB limit. Decoded whole it
// held gigabytes; read in passes, the live heap grows by under 96 MiB, and
// the tone is found and prepared.
func TestPrepareBigClipInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 512 MiB clip")
	}
	p := sparseWAV(t, bigClipBytes)
	o, _, errOut := newPrepareOpts(t, p)
	var err error
	grew := heapPeak(func() { err = runPrepare(context.Background(), o) })
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	t.Logf("live heap grew by %.1f MiB at most", float64(grew)/(1<<20))
	if grew > maxHeapGrowth {
		t.Errorf("live heap grew by %d bytes preparing a %d-byte clip, want at most %d", grew, bigClipBytes, maxHeapGrowth)
	}
	m, rerr := clip.ReadManifest(o.OutDir)
	if rerr != nil || len(m.References) != 1 || m.References[0].Start < 59.7 || m.References[0].Start > 60 {
		t.Fatalf("manifest: %v %+v", rerr, m)
	}
	if !strings.Contains(errOut.String(), "wrote 1 references") {
		t.Errorf("stderr: %q", errOut)
	}
}
