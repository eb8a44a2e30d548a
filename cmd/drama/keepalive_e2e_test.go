package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
)

// statusEngine is one engine of drama status --json, as a script reads it.
type statusEngine struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Loaded bool   `json:"loaded"`
	PID    int    `json:"pid"`
	Log    string `json:"log"`
}

// statusEngines runs drama status --json on root and returns the engines
// of its one server.
func statusEngines(t *testing.T, root, keepAlive string) []statusEngine {
	t.Helper()
	out, err := exec.Command(filepath.Join(binaries(t), "drama"), "status", "--root", root, "--json").Output()
	if err != nil {
		t.Fatalf("drama status: %v", err)
	}
	var rep struct {
		Servers []struct {
			KeepAlive string         `json:"keep_alive"`
			Engines   []statusEngine `json:"engines"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Servers) != 1 || len(rep.Servers[0].Engines) == 0 || rep.Servers[0].KeepAlive != keepAlive {
		t.Fatalf("drama status --json: %v\n%s", err, out)
	}
	return rep.Servers[0].Engines
}

func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestKeepAliveUnloadsTheEngine runs drama serve --keep-alive 1s on the
// stand-in: a stream open keeps the engine loaded (drama status names its
// pid); after a second without a request the engine's process is gone,
// GET /ready is 200 with phase unloaded and drama status says unloaded;
// the next request loads it again and is served.
func TestKeepAliveUnloadsTheEngine(t *testing.T) {
	root := variantRoot(t)
	s := launchServe(t, "", root, []string{"TENSORFOLD_STANDIN_RTF=1"}, "--keep-alive", "1s")

	resp, err := http.Post(s.url+"/v1/audio/speech", "application/json",
		strings.NewReader(`{"input":"A stream open for a few seconds keeps the engine loaded, however short the keep-alive is.","response_format":"pcm"}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("speech: %d", resp.StatusCode)
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	engines := statusEngines(t, root, "1s")
	pid := engines[0].PID
	if len(engines) != 1 || engines[0].Name != "engine-0" || engines[0].State != "loaded" || !engines[0].Loaded || pid <= 0 {
		t.Fatalf("engines while a stream is open: %+v", engines)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("the stream was cut: %v", err)
	}
	resp.Body.Close()

	waitReady(t, s, "unloaded after the last request", func(st readyState) bool { return st.Phase == "unloaded" })
	if code, st := getReady(t, s.url); code != http.StatusOK || st.Phase != "unloaded" || st.Loaded {
		t.Fatalf("GET /ready while unloaded: %d, phase %s, loaded %v", code, st.Phase, st.Loaded)
	}
	if !enginetest.Within(30*time.Second, func() bool { return processGone(pid) }) {
		t.Fatalf("the engine's process %d still runs after the unload", pid)
	}
	if engines := statusEngines(t, root, "1s"); engines[0].State != "unloaded" || engines[0].Loaded || engines[0].PID != 0 {
		t.Fatalf("drama status while unloaded: %+v", engines)
	}
	if resp, wav := speak(t, s.url, `{"input":"Loaded again.","stream":false}`); resp.StatusCode != http.StatusOK || len(wav) <= 44 {
		t.Fatalf("speech after the unload: %d, %d bytes\n%s", resp.StatusCode, len(wav), s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "loaded the engine on demand") {
		t.Fatalf("the log does not tell of the load on demand:\n%s", s.stderr)
	}
}

// TestKeepAliveWithSeveralEngines: drama serve --gpus 0,1 --keep-alive 3s
// unloads each idle engine (drama status lists both unloaded, their
// processes gone); a request loads one of them only, and drama status
// names it loaded with its pid.
func TestKeepAliveWithSeveralEngines(t *testing.T) {
	root := variantRoot(t)
	s := launchServe(t, "", root, nil, "--gpus", "0,1", "--keep-alive", "3s")
	// the engines start one after another: each one's first pid, once it has one
	pids := map[string]int{}
	for _, name := range []string{"gpu0-0", "gpu1-0"} {
		file := runtimeFile(root, name)
		if !enginetest.Within(30*time.Second, func() bool { _, err := os.Stat(file); return err == nil }) {
			t.Fatalf("%s did not start in 30 s\n%s", name, s.stderr)
		}
		pids[name] = enginePID(t, root, name)
	}
	st := waitReady(t, s, "both engines unloaded", func(st readyState) bool {
		return len(st.PerEngine) == 2 && st.PerEngine[0].Phase == "unloaded" && st.PerEngine[1].Phase == "unloaded"
	})
	if !st.Ready || st.EnginesReady != 2 {
		t.Fatalf("GET /ready with both engines unloaded: %+v", st)
	}
	for name, pid := range pids {
		if !enginetest.Within(30*time.Second, func() bool { return processGone(pid) }) {
			t.Fatalf("%s's process %d still runs after the unload", name, pid)
		}
	}
	engines := statusEngines(t, root, "3s")
	if len(engines) != 2 || engines[0].State != "unloaded" || engines[1].State != "unloaded" {
		t.Fatalf("drama status with both unloaded: %+v", engines)
	}
	if resp, wav := speak(t, s.url, `{"input":"One engine loads.","stream":false}`); resp.StatusCode != http.StatusOK || len(wav) <= 44 {
		t.Fatalf("speech: %d, %d bytes", resp.StatusCode, len(wav))
	}
	engines = statusEngines(t, root, "3s")
	loaded := 0
	for _, e := range engines {
		if e.Loaded {
			loaded++
			if e.PID <= 0 || e.PID == pids[e.Name] || processGone(e.PID) {
				t.Fatalf("the engine loaded again, %s: pid %d (before the unload %d)", e.Name, e.PID, pids[e.Name])
			}
		}
	}
	if loaded != 1 {
		// the request's engine unloads again 3 s after it: status read in
		// those seconds names it loaded, later none
		if loaded != 0 || !strings.Contains(s.stderr.String(), "loaded the engine on demand") {
			t.Fatalf("%d engines loaded after one request, want 1: %+v", loaded, engines)
		}
	}
}
