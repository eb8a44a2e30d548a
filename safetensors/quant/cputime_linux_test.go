package quant

import (
	"runtime"
	"syscall"
	"testing"
)

// threadCPU returns the calling thread's CPU time (user + system) in ns.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// cpuTimer measures the benchmark loop's CPU time on its own thread, which
// stays meaningful on a shared, loaded machine where wall time does not.
type cpuTimer struct{ start int64 }

func startCPU() *cpuTimer {
	runtime.LockOSThread()
	return &cpuTimer{start: threadCPU()}
}

// report adds the cpu-ns/elem metric for n elements per iteration.
func (c *cpuTimer) report(b *testing.B, n int) {
	b.ReportMetric(float64(threadCPU()-c.start)/float64(b.N)/float64(n), "cpu-ns/elem")
	runtime.UnlockOSThread()
}
