package native

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// AvailableMemory returns MemAvailable from /proc/meminfo, lowered to the
// room left under the process's cgroup memory limits (v2 memory.max minus
// memory.current up the hierarchy, or v1 memory.limit_in_bytes minus
// usage).
func AvailableMemory() (Memory, error) { return availableMemory("/") }

// availableMemory reads the files under root, so tests can give a fake tree.
func availableMemory(root string) (Memory, error) {
	avail, err := memAvailable(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return Memory{}, err
	}
	mem := Memory{Available: avail, Source: "MemAvailable"}
	if room, src, ok := cgroupRoom(root); ok && room < mem.Available {
		mem = Memory{Available: room, Source: src}
	}
	return mem, nil
}

func memAvailable(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("native: memory: %w", err)
	}
	fields := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err == nil {
			fields[k] = n << 10
		}
	}
	if v, ok := fields["MemAvailable"]; ok {
		return v, nil
	}
	if v, ok := fields["MemFree"]; ok {
		return v + fields["Buffers"] + fields["Cached"], nil
	}
	return 0, fmt.Errorf("native: memory: %s: no MemAvailable or MemFree", path)
}

// cgroupRoom returns the least room under any memory limit of the process's
// cgroups.
func cgroupRoom(root string) (uint64, string, bool) {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, "", false
	}
	best, src, found := uint64(0), "", false
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dirs []string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dirs = v2Dirs(root, parts[2])
		case strings.Contains(","+parts[1]+",", ",memory,"):
			dirs = []string{filepath.Join(root, "sys/fs/cgroup/memory", parts[2]), filepath.Join(root, "sys/fs/cgroup/memory")}
		}
		for _, d := range dirs {
			if room, ok := limitRoom(d); ok && (!found || room < best) {
				best, src, found = room, "cgroup "+strings.TrimPrefix(d, root)+" limit", true
			}
		}
	}
	return best, src, found
}

// v2Dirs lists the cgroup v2 directory of path and its parents.
func v2Dirs(root, path string) []string {
	var dirs []string
	for p := filepath.Clean("/" + path); ; p = filepath.Dir(p) {
		dirs = append(dirs, filepath.Join(root, "sys/fs/cgroup", p))
		if p == "/" {
			return dirs
		}
	}
}

// limitRoom reads a limit and the usage in dir (v2 or v1 names).
func limitRoom(dir string) (uint64, bool) {
	for _, names := range [][2]string{{"memory.max", "memory.current"}, {"memory.limit_in_bytes", "memory.usage_in_bytes"}} {
		limit, ok := readUint(filepath.Join(dir, names[0]))
		if !ok || limit >= 1<<62 {
			continue
		}
		used, _ := readUint(filepath.Join(dir, names[1]))
		if used >= limit {
			return 0, true
		}
		return limit - used, true
	}
	return 0, false
}

func readUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
