package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v; want new", b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dir holds %d entries, want the target alone", len(ents))
	}
}

func TestWriteFailureKeepsTarget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	os.WriteFile(p, []byte("old"), 0o644)
	boom := errors.New("boom")
	var tmp string
	err := Write(p, 0, func(f *os.File) error { tmp = f.Name(); f.Write([]byte("half")); return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the fill's", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("target now %q, want old", b)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary %s left: %v", tmp, err)
	}
}

func TestTempNamesItsOwner(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.safetensors")
	err := Write(p, 0, func(f *os.File) error {
		tmp, ok := Parse(f.Name())
		if !ok || tmp.Pid != os.Getpid() || tmp.Target != p || !tmp.Alive() {
			t.Errorf("temporary %s parsed as %+v, %v; want this process's, for %s, alive", f.Name(), tmp, ok, p)
		}
		if gone, err := Sweep(dir, ""); err != nil || len(gone) != 0 {
			t.Errorf("Sweep removed a live run's temporary: %v, %v", gone, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// deadPid returns the pid of a process that has ended and been reaped.
func deadPid(t *testing.T) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestSweep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times are read from /proc")
	}
	dir := t.TempDir()
	pid, start := self()
	dead := deadPid(t)
	mk := func(name string, isDir bool) string {
		p := filepath.Join(dir, name)
		var err error
		if isDir {
			err = os.MkdirAll(filepath.Join(p, "sub"), 0o755)
		} else {
			err = os.WriteFile(p, []byte("x"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	live := mk(".out.tmp-"+strconv.Itoa(pid)+"-"+start+"-123", false)
	deadFile := mk(".out.tmp-"+strconv.Itoa(dead)+"-"+start+"-456", false)
	deadDir := mk(".q.tmp-"+strconv.Itoa(dead)+"-99-789", true)
	recycled := mk(".out.tmp-"+strconv.Itoa(pid)+"-"+start+"1-321", false) // this pid, another start
	older := mk(".out.tmp-123456789", false)                               // names no owner
	other := mk("out", false)

	gone, err := Sweep(dir, "out")
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 2 {
		t.Errorf("Sweep(out) removed %v, want the dead and the recycled owner's", gone)
	}
	if _, err := Sweep(dir, ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{live, older, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(p), err)
		}
	}
	for _, p := range []string{deadFile, deadDir, recycled} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s kept, want removed (%v)", filepath.Base(p), err)
		}
	}
}

func TestParse(t *testing.T) {
	for name, want := range map[string]Temp{
		".a.b.tmp-12-34-567": {Path: ".a.b.tmp-12-34-567", Target: "a.b", Pid: 12, Start: "34"},
		".a.tmp-98765":       {Path: ".a.tmp-98765", Target: "a"},
	} {
		got, ok := Parse(name)
		if !ok || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", name, got, ok, want)
		}
	}
	for _, name := range []string{"a.tmp-1-2-3", ".tmp-1-2-3", ".a", "model.safetensors"} {
		if _, ok := Parse(name); ok {
			t.Errorf("Parse(%q) took it for a temporary", name)
		}
	}
}

func TestTempDirRenameDir(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "q")
	tmp, err := TempDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(tmp), ".q"+Marker+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("temporary directory %s does not name its owner", tmp)
	}
	os.WriteFile(filepath.Join(tmp, "f"), []byte("x"), 0o644)
	if err := RenameDir(tmp, out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("stat %s: %v, %v; want a 0755 directory", out, fi, err)
	}
}

func TestWriteIntoMissingDirectory(t *testing.T) {
	if err := WriteFile(filepath.Join(t.TempDir(), "missing", "a"), []byte("x"), 0o644); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// TestWriteSweepsItsTarget checks a write removes what a dead run left for
// the same target, and nothing left for another.
func TestWriteSweepsItsTarget(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times are read from /proc")
	}
	dir := t.TempDir()
	dead := strconv.Itoa(deadPid(t))
	mine := filepath.Join(dir, ".a"+Marker+dead+"-5-1")
	other := filepath.Join(dir, ".b"+Marker+dead+"-5-2")
	os.WriteFile(mine, []byte("x"), 0o644)
	os.WriteFile(other, []byte("x"), 0o644)
	if err := WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("the dead run's temporary of a is still there (%v)", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("the temporary of b was removed: %v", err)
	}
}

// TestCreateNeverReplaces: writers racing to create one path (as two
// hosts cloning one voice id into a shared directory): exactly one wins,
// the others get fs.ErrExist, the file is the winner's whole, and no
// temporary is left.
func TestCreateNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "anna.json")
	const writers = 8
	errs := make(chan error, writers)
	start := make(chan struct{})
	for i := range writers {
		go func() {
			<-start
			errs <- CreateFile(p, []byte(strings.Repeat(strconv.Itoa(i), 1<<16)), 0o600)
		}()
	}
	close(start)
	won := 0
	for range writers {
		err := <-errs
		switch {
		case err == nil:
			won++
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("a loser got %v, want fs.ErrExist", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers won, want exactly 1", won)
	}
	b, _ := os.ReadFile(p)
	if len(b) != 1<<16 || strings.Count(string(b), string(b[:1])) != len(b) {
		t.Errorf("the file is not one writer's whole content (%d bytes)", len(b))
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dir holds %d entries, want the target alone", len(ents))
	}
	// an existing file is kept as it is
	if err := CreateFile(p, []byte("late"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("create over an existing file: %v, want fs.ErrExist", err)
	}
	if b2, _ := os.ReadFile(p); string(b2) != string(b) {
		t.Error("create over an existing file changed it")
	}
}
