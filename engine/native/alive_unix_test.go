//go:build unix

package native_test

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}
