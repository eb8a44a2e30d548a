package native

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestAvailableMemory(t *testing.T) {
	const meminfo = "MemTotal: 100000000 kB\nMemFree: 1000 kB\nMemAvailable: 50000000 kB\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  uint64
		src   string
	}{
		{"no cgroup", map[string]string{"proc/meminfo": meminfo}, 50000000 << 10, "MemAvailable"},
		{"v2 unlimited", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/user.slice\n",
			"sys/fs/cgroup/user.slice/memory.max": "max\n"}, 50000000 << 10, "MemAvailable"},
		{"v2 parent limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "max\n", "sys/fs/cgroup/a/memory.max": "8589934592\n",
			"sys/fs/cgroup/a/memory.current": "1073741824\n"}, 7 << 30, "cgroup /sys/fs/cgroup/a limit"},
		{"v1 limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "4:memory:/docker/x\n",
			"sys/fs/cgroup/memory/docker/x/memory.limit_in_bytes": "4294967296\n",
			"sys/fs/cgroup/memory/docker/x/memory.usage_in_bytes": "5000000000\n"}, 0, "cgroup /sys/fs/cgroup/memory/docker/x limit"},
		{"old kernel", map[string]string{"proc/meminfo": "MemFree: 10 kB\nBuffers: 5 kB\nCached: 1 kB\n"}, 16 << 10, "MemAvailable"},
	} {
		mem, err := availableMemory(writeTree(t, tc.files))
		if err != nil || mem.Available != tc.want || mem.Source != tc.src {
			t.Errorf("%s: %+v, %v: want %d from %q", tc.name, mem, err, tc.want, tc.src)
		}
	}
	if _, err := availableMemory(writeTree(t, map[string]string{"proc/meminfo": "nothing\n"})); err == nil {
		t.Error("meminfo without figures: want an error")
	}
}

func TestAdmit(t *testing.T) {
	mem := Memory{Available: 20 << 30, Source: "MemAvailable"}
	if err := Admit("own", 17<<30, DefaultReserve, mem); err != nil {
		t.Errorf("fits: %v", err)
	}
	err := Admit("", 19<<30, DefaultReserve, mem)
	var ae *AdmissionError
	if !errors.Is(err, ErrMemory) || !errors.As(err, &ae) || ae.Need != 21<<30 {
		t.Errorf("too big: %v", err)
	}
	for _, mode := range []string{"external", "off"} {
		if err := Admit(mode, 1<<40, DefaultReserve, mem); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
	if err := Admit("maybe", 0, 0, mem); err == nil {
		t.Error("unknown mode: want an error")
	}
	if _, err := AvailableMemory(); err != nil {
		t.Errorf("this machine: %v", err)
	}
}
