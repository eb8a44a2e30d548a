package proc

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	line := "4242 (a b) (c)) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n"
	st, err := Parse([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stat{PID: 4242, State: 'S', PPID: 17, StartTime: 987654}); st != want || st.Exited() {
		t.Fatalf("Parse = %+v, want %+v", st, want)
	}
	zombie := strings.Replace(line, ")) S ", ")) Z ", 1)
	if st, err := Parse([]byte(zombie)); err != nil || !st.Exited() {
		t.Fatalf("a zombie: %+v %v", st, err)
	}
	for _, bad := range []string{"", "4242 no name S 1", "4242 (x) S 1 2 3", "x (y) S " + strings.Repeat("1 ", 20), "1 (y) S z " + strings.Repeat("1 ", 20),
		"1 (y) S 1 " + strings.Repeat("1 ", 17) + "t 0"} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("Parse(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

func TestReadThisProcessAndAGoneOne(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := Read(os.Getpid()); !errors.Is(err, fs.ErrNotExist) || Mounted() {
			t.Fatalf("no /proc here: Read = %v, Mounted %v", err, Mounted())
		}
		return
	}
	st, err := Read(os.Getpid())
	if err != nil || st.PID != os.Getpid() || st.PPID != os.Getppid() || st.StartTime == 0 || st.Exited() || !Mounted() {
		t.Fatalf("Read(self) = %+v %v", st, err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	if _, err := Read(cmd.Process.Pid); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a reaped process: %v, want fs.ErrNotExist", err)
	}
	if _, err := Read(0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pid 0: %v", err)
	}
	var self bool
	for _, s := range All() {
		// the state may differ between two reads (R, then S): the pid and
		// start time name the process
		self = self || s.PID == st.PID && s.StartTime == st.StartTime
	}
	if !self {
		t.Error("All does not list this process")
	}
}
