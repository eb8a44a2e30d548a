package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drama-tts/drama/internal/proc"
)

// SampleInterval is how often a Sampler reads memory.
const SampleInterval = 500 * time.Millisecond

// MemSample is one reading of memory, in bytes; a figure the host does not
// offer is -1.
type MemSample struct {
	T float64 `json:"t_s"` // seconds since sampling began
	// AvailableDrop is MemAvailable's drop from the baseline.
	AvailableDrop int64 `json:"mem_available_drop"`
	// CgroupPeak is memory.peak (else memory.current) of the server's
	// cgroup.
	CgroupPeak int64 `json:"cgroup_peak"`
	// GPUUsed is the used memory of every GPU nvidia-smi lists, together.
	GPUUsed int64 `json:"gpu_used"`
	// RSS is the resident memory of the server's process tree.
	RSS int64 `json:"rss"`
}

// Baseline is the memory before the engine was loaded.
type Baseline struct {
	MemAvailable int64 `json:"mem_available"` // -1: not known
	GPUUsed      int64 `json:"gpu_used"`      // -1: no nvidia-smi
	// BeforeLoad is true when it was read before the server started,
	// false when the server was already running.
	BeforeLoad bool `json:"before_load"`
}

// ReadBaseline reads the memory figures a later drop is measured from.
func ReadBaseline(beforeLoad bool) Baseline {
	return Baseline{MemAvailable: MemAvailable(), GPUUsed: GPUUsed(), BeforeLoad: beforeLoad}
}

// Memory is what a Sampler saw.
type Memory struct {
	Baseline Baseline    `json:"baseline"`
	Samples  []MemSample `json:"samples"`
	Peak     MemSample   `json:"peak"` // the largest value of each figure
	// PIDs are the processes whose RSS was summed (the server's tree at
	// any sample).
	PIDs []int `json:"pids,omitempty"`
}

// PeakBytes is the peak the memory gate weighs: the largest of the GPU's
// used memory above the baseline, MemAvailable's drop (unified memory),
// and the process tree's RSS.
func (m *Memory) PeakBytes() int64 {
	p := m.Peak.RSS
	p = max(p, m.Peak.AvailableDrop)
	if m.Peak.GPUUsed >= 0 {
		gpu := m.Peak.GPUUsed
		if m.Baseline.GPUUsed > 0 {
			gpu -= m.Baseline.GPUUsed
		}
		p = max(p, gpu)
	}
	return p
}

// Sampler reads memory every SampleInterval while it runs.
type Sampler struct {
	base  Baseline
	pid   int // the server's process; 0: none known
	start time.Time

	mu   sync.Mutex
	mem  Memory
	pids map[int]bool
	stop context.CancelFunc
	done chan struct{}
}

// StartSampler starts sampling against base, following pid and its
// descendants (pid 0: none; only host-wide figures are read). start is
// the time the run began.
func StartSampler(base Baseline, pid int, start time.Time) *Sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sampler{base: base, pid: pid, start: start, stop: cancel, done: make(chan struct{}), pids: map[int]bool{}}
	s.mem.Baseline = base
	s.mem.Peak = MemSample{AvailableDrop: -1, CgroupPeak: -1, GPUUsed: -1, RSS: -1}
	go s.loop(ctx)
	return s
}

func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(SampleInterval)
	defer t.Stop()
	s.sample()
	for {
		select {
		case <-ctx.Done():
			s.sample()
			return
		case <-t.C:
			s.sample()
		}
	}
}

// Follow makes the sampler follow pid and its descendants from now on
// (a server started after sampling began, so that its load is seen).
func (s *Sampler) Follow(pid int) {
	s.mu.Lock()
	s.pid = pid
	s.mu.Unlock()
}

func (s *Sampler) sample() {
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	m := MemSample{T: time.Since(s.start).Seconds(), AvailableDrop: -1, CgroupPeak: -1, GPUUsed: GPUUsed(), RSS: -1}
	if avail := MemAvailable(); avail >= 0 && s.base.MemAvailable >= 0 {
		m.AvailableDrop = max(0, s.base.MemAvailable-avail) // memory freed since counts as no drop
	}
	var tree []int
	if pid > 0 {
		m.CgroupPeak = CgroupPeak(pid)
		tree = ProcessTree(pid)
		if len(tree) > 0 {
			m.RSS = 0
			for _, p := range tree {
				m.RSS += RSS(p)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range tree {
		s.pids[p] = true
	}
	s.mem.Samples = append(s.mem.Samples, m)
	pk := &s.mem.Peak
	pk.AvailableDrop = max(pk.AvailableDrop, m.AvailableDrop)
	pk.CgroupPeak = max(pk.CgroupPeak, m.CgroupPeak)
	pk.GPUUsed = max(pk.GPUUsed, m.GPUUsed)
	pk.RSS = max(pk.RSS, m.RSS)
	pk.T = m.T
}

// Stop ends sampling (with one last sample) and returns what was seen.
func (s *Sampler) Stop() Memory {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mem
	m.Samples = append([]MemSample(nil), s.mem.Samples...)
	for p := range s.pids {
		m.PIDs = append(m.PIDs, p)
	}
	return m
}

// MemAvailable returns the host's MemAvailable in bytes from
// /proc/meminfo, or -1 where there is none.
func MemAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				kb, err := strconv.ParseInt(fields[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return -1
}

// CgroupPeak returns memory.peak of pid's cgroup (cgroup v2), else its
// memory.current, or -1 where there is neither.
func CgroupPeak(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", filepath.Clean("/"+rel))
		for _, f := range []string{"memory.peak", "memory.current"} {
			if v := readInt(filepath.Join(dir, f)); v >= 0 {
				return v
			}
		}
	}
	return -1
}

func readInt(name string) int64 {
	data, err := os.ReadFile(name)
	if err != nil {
		return -1
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// nvidiaSMI is the nvidia-smi on the PATH, looked up once.
var nvidiaSMI = sync.OnceValue(func() string {
	p, _ := exec.LookPath("nvidia-smi")
	return p
})

// GPUUsed returns the used memory of all GPUs nvidia-smi lists, or -1
// without nvidia-smi (or when it fails, or on unified-memory GPUs that
// report none).
func GPUUsed() int64 {
	bin := nvidiaSMI()
	if bin == "" {
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--query-gpu=memory.used", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return -1
	}
	var total int64 = -1
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		mib, err := strconv.ParseInt(strings.TrimSpace(string(line)), 10, 64)
		if err != nil {
			continue // "[N/A]" on unified memory
		}
		total = max(total, 0) + mib<<20
	}
	return total
}

// RSS returns a process's resident memory in bytes, or 0 when it is gone.
func RSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// ProcessTree returns pid and its live descendants, read from /proc
// (empty where there is no /proc or pid is gone).
func ProcessTree(pid int) []int {
	children := map[int][]int{}
	alive := map[int]bool{}
	for _, st := range proc.All() {
		if st.State == 'Z' {
			continue // a zombie has exited
		}
		children[st.PPID] = append(children[st.PPID], st.PID)
		alive[st.PID] = true
	}
	if !alive[pid] {
		return nil
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
