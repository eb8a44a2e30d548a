package atomicfile

import (
	"os"
	"strconv"
	"strings"
)

// startTime returns when process pid started (clock ticks after boot, from
// /proc/PID/stat), and false when no such process runs.
func startTime(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return "0", true
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is field 3 of stat(5), starttime field 22.
	if len(f) < 20 || !digits(f[19]) {
		return "0", true
	}
	if f[0] == "Z" || f[0] == "X" { // a zombie has stopped writing
		return "", false
	}
	return f[19], true
}
