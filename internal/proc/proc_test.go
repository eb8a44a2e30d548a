package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// printParentEnv makes the test binary print what Read says of its parent
// and exit.
const printParentEnv = "PROC_TEST_PRINT_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(printParentEnv) == "1" {
		st, err := Read(os.Getppid())
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(st.PID, st.StartTime)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

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

// TestOthersReadTheSameStartTime: the start time this process reads of
// itself is the one another process reads of it, or a record naming this
// process by pid and start time (a serve record, an atomic file's owner)
// would name no process for anyone else. Under qemu-user, which answers a
// process's /proc/self/stat and /proc/<own pid>/stat itself with a start
// time of its own, they differ unless Read asks the kernel.
func TestOthersReadTheSameStartTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has /proc")
	}
	self, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), printParentEnv+"=1")
	out, err := child.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := strconv.Itoa(self.PID) + " " + strconv.FormatUint(self.StartTime, 10)
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("a child reads its parent as %q (pid, start time); the parent read itself as %q", got, want)
	}
}
