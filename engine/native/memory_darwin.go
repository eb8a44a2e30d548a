package native

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

var (
	vmPageSize = regexp.MustCompile(`page size of (\d+) bytes`)
	vmPages    = regexp.MustCompile(`Pages (free|inactive|speculative|purgeable):\s+(\d+)`)
)

// AvailableMemory returns the free, inactive, speculative and purgeable
// pages that vm_stat reports: memory macOS can hand over without swapping.
func AvailableMemory() (Memory, error) {
	out, err := exec.Command("/usr/bin/vm_stat").Output()
	if err != nil {
		return Memory{}, fmt.Errorf("native: memory: vm_stat: %w", err)
	}
	m := vmPageSize.FindSubmatch(out)
	if m == nil {
		return Memory{}, fmt.Errorf("native: memory: vm_stat: no page size")
	}
	page, _ := strconv.ParseUint(string(m[1]), 10, 64)
	var pages uint64
	for _, m := range vmPages.FindAllSubmatch(out, -1) {
		n, _ := strconv.ParseUint(string(m[2]), 10, 64)
		pages += n
	}
	return Memory{Available: pages * page, Source: "vm_stat free+inactive+speculative+purgeable"}, nil
}
