package bench

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
)

// TestNvidiaSMI reads the real nvidia-smi where there is one: the used
// memory and the GPU's name must come through, and the sampler must
// record them.
func TestNvidiaSMI(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		t.Skip("no nvidia-smi on this host")
	}
	used := GPUUsed()
	name := GPUName()
	t.Logf("GPU used %d bytes, name %q", used, name)
	if used < 0 || !strings.Contains(name, "NVIDIA") {
		t.Fatalf("GPU used %d, name %q", used, name)
	}
	s := StartSampler(ReadBaseline(true), 0, time.Now())
	// the first sample, then one of the ticker's
	if !enginetest.Within(10*SampleInterval, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.mem.Samples) >= 2 }) {
		t.Fatalf("the sampler took no sample on its ticker in %s", 10*SampleInterval)
	}
	m := s.Stop()
	if len(m.Samples) < 3 || m.Peak.GPUUsed < 0 || m.Baseline.GPUUsed < 0 {
		t.Fatalf("sampler: %+v", m)
	}
}
