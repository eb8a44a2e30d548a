package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/native"
)

// readyState is GET /ready's body.
type readyState = httpapi.Readiness

// getReady reads GET /ready: its status code and its body.
func getReady(t testing.TB, url string) (int, readyState) {
	t.Helper()
	resp, err := http.Get(url + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st readyState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, st
}

// waitReady waits until cond holds of GET /ready.
func waitReady(t testing.TB, s *server, what string, cond func(readyState) bool) readyState {
	t.Helper()
	var st readyState
	if !enginetest.Within(30*time.Second, func() bool { _, st = getReady(t, s.url); return cond(st) }) {
		t.Fatalf("%s: not in 30 s; /ready %+v\n%s", what, st, s.stderr)
	}
	return st
}

// runtimeFile is the runtime file of drama serve's engine called name
// under root ("" for a server's one engine in the runtime directory).
func runtimeFile(root, name string) string {
	return native.RuntimeFile(filepath.Join(serverec.RuntimeDir(root), name), "cuda")
}

// enginePID reads an engine's pid from its runtime file.
func enginePID(t testing.TB, root, name string) int {
	t.Helper()
	rec, err := native.ReadRuntimeFile(runtimeFile(root, name))
	if err != nil {
		t.Fatalf("engine %s: %v", name, err)
	}
	return rec.PID
}

// TestServeEnginesPerGPU: drama serve --gpus 0,1 runs one stand-in per
// GPU, each seeing its GPU alone and keeping its own runtime file and log;
// /ready and /metrics count them; a killed engine is restarted alone while
// the other serves.
func TestServeEnginesPerGPU(t *testing.T) {
	root := variantRoot(t)
	s := launchServe(t, "", root, nil, "--gpus", "0,1")
	st := waitReady(t, s, "both engines ready", func(st readyState) bool { return st.EnginesReady == 2 })
	if st.Engines != 2 || len(st.PerEngine) != 2 || st.PerEngine[0].Name != "gpu0-0" || st.PerEngine[1].Name != "gpu1-0" {
		t.Fatalf("/ready %+v", st)
	}
	engines := statusEngines(t, root, "forever")
	for i, name := range []string{"gpu0-0", "gpu1-0"} {
		path := native.LogFile(filepath.Join(serverec.RuntimeDir(root), name), "cuda")
		log, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(log), fmt.Sprintf("standin: device: CUDA_VISIBLE_DEVICES=%d\n", i)) {
			t.Fatalf("%s's log: %v\n%s", name, err, log)
		}
		if len(engines) != 2 || engines[i].Name != name || engines[i].Log != path {
			t.Fatalf("drama status --json engines %+v: want %s with its log %s", engines, name, path)
		}
	}
	body := `{"input":"Two engines.","response_format":"pcm","stream":false}`
	for range 3 {
		if resp, _ := speak(t, s.url, body); resp.StatusCode != 200 {
			t.Fatalf("speech: %d", resp.StatusCode)
		}
	}
	first, second := enginePID(t, root, "gpu0-0"), enginePID(t, root, "gpu1-0")
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// the health poll finds it gone; the other engine serves meanwhile
	waitReady(t, s, "gpu0-0 noticed gone", func(st readyState) bool { return !st.PerEngine[0].Ready || st.PerEngine[0].Restarts == 1 })
	for range 3 {
		if resp, data := speak(t, s.url, body); resp.StatusCode != 200 {
			t.Fatalf("speech while gpu0-0 restarts: %d %s", resp.StatusCode, data)
		}
	}
	st = waitReady(t, s, "gpu0-0 restarted", func(st readyState) bool { return st.EnginesReady == 2 && st.PerEngine[0].Restarts == 1 })
	if st.PerEngine[1].Restarts != 0 || enginePID(t, root, "gpu1-0") != second || enginePID(t, root, "gpu0-0") == first {
		t.Fatalf("after gpu0-0 was killed: /ready %+v; gpu1-0 pid %d (was %d)", st, enginePID(t, root, "gpu1-0"), second)
	}
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m strings.Builder
	fmt.Fprint(&m, readAll(t, resp))
	for _, want := range []string{`drama_engine_ready{engine="gpu0-0"} 1`, `drama_engine_ready{engine="gpu1-0"} 1`,
		`drama_engine_restarts{engine="gpu0-0"} 1`, `drama_engine_restarts{engine="gpu1-0"} 0`, "drama_engine_restarts_total 1"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("/metrics lacks %s\n%s", want, m.String())
		}
	}
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
