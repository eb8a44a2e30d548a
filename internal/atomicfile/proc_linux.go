package atomicfile

import (
	"errors"
	"strconv"

	"github.com/drama-tts/drama/internal/proc"
)

// startTime returns when process pid started (clock ticks after boot, from
// /proc/PID/stat), and false when no such process runs.
func startTime(pid int) (string, bool) {
	st, err := proc.Read(pid)
	switch {
	case errors.Is(err, proc.ErrFormat):
		return "0", true
	case err != nil, st.Exited(): // a zombie has stopped writing
		return "", false
	}
	return strconv.FormatUint(st.StartTime, 10), true
}
