package serverec

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/native"
)

func TestWriteListRemove(t *testing.T) {
	root := t.TempDir()
	rec := Record{PID: os.Getpid(), Addr: "127.0.0.1:8793", Variant: "full", Root: root, Started: time.Now()}
	path, err := Write(root, rec)
	if err != nil {
		t.Fatal(err)
	}
	if path != Path(root, os.Getpid()) {
		t.Fatalf("path %s, want %s", path, Path(root, os.Getpid()))
	}
	got, err := List(root)
	if err != nil || len(got) != 1 || got[0].Addr != rec.Addr || got[0].StartTime == 0 {
		t.Fatalf("List = %+v, %v; want the one record with a start time", got, err)
	}
	if err := Remove(root, rec.PID); err != nil {
		t.Fatal(err)
	}
	if got, _ := List(root); len(got) != 0 {
		t.Fatalf("after Remove, List = %+v", got)
	}
}

func TestStaleRecordsSkippedAndPruned(t *testing.T) {
	root := t.TempDir()
	// a pid that runs but with another start time is a recycled pid: stale
	if _, err := Write(root, Record{PID: os.Getpid(), StartTime: 1, Addr: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(Dir(root), "serve-99.json"), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := List(root); len(got) != 0 {
		t.Fatalf("List = %+v, want no live record", got)
	}
	n, err := Prune(root)
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2", n, err)
	}
}

// A kill -9 leaves a drama serve's record behind: the next drama serve to
// write its own removes it.
func TestWriteRemovesTheRecordsOfDeadRuns(t *testing.T) {
	root := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip(err)
	}
	dead, err := Write(root, Record{PID: gone.Process.Pid, StartTime: 1, Addr: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(root, Record{PID: os.Getpid(), Addr: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the dead run's record %s is still there (%v)", dead, err)
	}
	if got, _ := List(root); len(got) != 1 || got[0].Addr != "b" {
		t.Fatalf("List = %+v, want the live record alone", got)
	}
}

func TestListMissingDir(t *testing.T) {
	got, err := List(filepath.Join(t.TempDir(), "nothing"))
	if err != nil || len(got) != 0 {
		t.Fatalf("List of a root without run/ = %+v, %v", got, err)
	}
}

// TestEnginePIDOf reads the pid of one engine of several from the runtime
// file in its own directory, and nothing for a name that is no plain file
// name.
func TestEnginePIDOf(t *testing.T) {
	root := t.TempDir()
	rec := Record{PID: os.Getpid()}
	dir := filepath.Join(RuntimeDir(root), "gpu1-0")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := native.WriteRuntimeFile(filepath.Join(dir, "engine-cuda.json"), native.RuntimeRecord{PID: 4343, Owner: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if got := EnginePIDOf(root, rec, "gpu1-0"); got != 4343 {
		t.Fatalf("EnginePIDOf gpu1-0 = %d, want 4343", got)
	}
	for _, name := range []string{"gpu0-0", "", "..", "../run", "gpu1-0/.."} {
		if got := EnginePIDOf(root, rec, name); got != 0 {
			t.Errorf("EnginePIDOf %q = %d, want 0", name, got)
		}
	}
	if got := EnginePID(root, rec); got != 0 {
		t.Fatalf("EnginePID (the one engine's file) = %d, want 0: none is there", got)
	}
}

// TestEngineLogs: a record names each engine's log and keeps the first in
// engine_log, for readers older than several engines; a record of such a
// drama serve, with engine_log alone, still gives its one log.
func TestEngineLogs(t *testing.T) {
	root := t.TempDir()
	engines := []EngineLog{{Name: "gpu0-0", Log: "/r/.drama/run/gpu0-0/engine-cuda.log"}, {Name: "gpu1-0", Log: "/r/.drama/run/gpu1-0/engine-cuda.log"}}
	if _, err := Write(root, Record{PID: os.Getpid(), Addr: "a", EngineLog: engines[0].Log, Engines: engines}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(Path(root, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	var old struct {
		EngineLog string `json:"engine_log"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.EngineLog != engines[0].Log {
		t.Fatalf("engine_log %q (%v), want the first engine's for older readers:\n%s", old.EngineLog, err, b)
	}
	got, _ := List(root)
	if len(got) != 1 || !slices.Equal(got[0].EngineLogs(), engines) {
		t.Fatalf("engine logs %+v, want %+v", got, engines)
	}
	if err := os.WriteFile(Path(root, os.Getpid()), []byte(`{"pid":`+strconv.Itoa(os.Getpid())+`,"addr":"a","engine_log":"/r/.drama/run/engine-cuda.log"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ = List(root)
	if len(got) != 1 || !slices.Equal(got[0].EngineLogs(), []EngineLog{{Log: "/r/.drama/run/engine-cuda.log"}}) {
		t.Fatalf("an older record: %+v", got)
	}
	if logs := (Record{}).EngineLogs(); len(logs) != 0 {
		t.Fatalf("no log: %+v", logs)
	}
}
