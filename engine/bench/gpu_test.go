package bench

import (
	"os/exec"
	"strings"
	"testing"
	"time"
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
	time.Sleep(SampleInterval + 100*time.Millisecond)
	m := s.Stop()
	if len(m.Samples) < 2 || m.Peak.GPUUsed < 0 || m.Baseline.GPUUsed < 0 {
		t.Fatalf("sampler: %+v", m)
	}
}
