package statuscmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine/native"
)

type buf interface{ String() string }

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// fixture: a ready server (the test's parent pid, with its engine named by
// a runtime file) and a loading one (the test's own pid), each a fake
// drama serve on loopback with a record.
func fixture(t *testing.T) (*cmdutil.Factory, *cmdutil.IOStreams, [2]string) {
	root := t.TempDir()
	ready := fakeServe(t, http.StatusOK, `{"phase":"ready","ready":true,"restarts":0}`, 3)
	loading := fakeServe(t, http.StatusServiceUnavailable, `{"phase":"loading","progress":0.5,"message":"reading weights","ready":false,"restarts":0}`, 0)
	addrs := [2]string{ready.Listener.Addr().String(), loading.Listener.Addr().String()}
	recs := []serverec.Record{
		{PID: os.Getppid(), Addr: addrs[0], Variant: "nvfp4", Root: root, Engine: "cuda", Started: now.Add(-90 * time.Second), LogFile: "/var/log/drama.log", EngineLog: "/var/log/engine.log"},
		{PID: os.Getpid(), Addr: addrs[1], Variant: "full", Root: root, Engine: "cuda", Started: now.Add(-10 * time.Second)},
	}
	for _, r := range recs {
		if _, err := serverec.Write(root, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(serverec.RuntimeDir(root), 0o700); err != nil {
		t.Fatal(err)
	}
	// The engine plugin (this process, a child of the first server) supervises pid 4242.
	if err := native.WriteRuntimeFile(serverec.RuntimeDir(root)+"/engine-cuda.json", native.RuntimeRecord{PID: 4242, Owner: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = root
	return f, ios, addrs
}

func fakeServe(t *testing.T, readyCode int, ready string, depth int) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(readyCode)
		fmt.Fprintln(w, ready)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE drama_requests_total counter\ndrama_requests_total{status=\"200\"} 7\n# TYPE drama_queue_depth gauge\ndrama_queue_depth %d\n", depth)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func opts(f *cmdutil.Factory) *Options {
	return &Options{F: f, Timeout: 2 * time.Second, Now: func() time.Time { return now }}
}

// runStatus runs drama status on root, with --json when asJSON, and
// returns its stdout and stderr.
func runStatus(t *testing.T, root string, asJSON bool) (string, string) {
	t.Helper()
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root, f.Global.JSON = root, asJSON
	if err := run(context.Background(), opts(f)); err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String()
}

func TestStatusPiped(t *testing.T) {
	f, ios, addrs := fixture(t)
	if err := run(context.Background(), opts(f)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s\t%d\tnvfp4\tcuda\t4242\tready\tcuda loaded\t3\t1m30s\t/var/log/drama.log,/var/log/engine.log\n"+
		"%s\t%d\tfull\tcuda\t4242\tloading 50%%: reading weights\tcuda loading\t0\t10s\t-\n", addrs[0], os.Getppid(), addrs[1], os.Getpid())
	if got := ios.Out.(buf).String(); got != want {
		t.Fatalf("piped:\n%s\nwant\n%s", got, want)
	}
}

func TestStatusTTY(t *testing.T) {
	f, ios, _ := fixture(t)
	ios.SetStdoutTTY(true)
	if err := run(context.Background(), opts(f)); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(buf).String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ADDR ") || !strings.Contains(lines[0], "ENGINE PID") || strings.Contains(out, "\t") {
		t.Fatalf("tty:\n%s", out)
	}
	col := strings.Index(lines[0], "STATE")
	if !strings.HasPrefix(lines[1][col:], "ready ") || !strings.HasPrefix(lines[2][col:], "loading 50%") {
		t.Fatalf("misaligned:\n%s", out)
	}
}

func TestStatusJSON(t *testing.T) {
	f, ios, addrs := fixture(t)
	f.Global.JSON = true
	if err := run(context.Background(), opts(f)); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal([]byte(ios.Out.(buf).String()), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Servers) != 2 {
		t.Fatalf("%+v", rep)
	}
	a, b := rep.Servers[0], rep.Servers[1]
	if a.Addr != addrs[0] || !a.Ready || a.QueueDepth == nil || *a.QueueDepth != 3 || a.EnginePID != 4242 || a.UptimeSec != 90 || a.EngineLog != "/var/log/engine.log" {
		t.Fatalf("ready server %+v", a)
	}
	if b.Ready || b.Phase != "loading" || b.Progress != 0.5 || b.Message != "reading weights" {
		t.Fatalf("loading server %+v", b)
	}
	if len(a.Engines) != 1 || a.Engines[0] != (Engine{Name: "cuda", State: "loaded", Loaded: true, Ready: true, Phase: "ready", PID: 4242, Log: "/var/log/engine.log"}) {
		t.Fatalf("engines of the ready server (an older drama serve, whose /ready has no \"loaded\"): %+v", a.Engines)
	}
	if len(b.Engines) != 1 || b.Engines[0].State != "loading" || b.Engines[0].Loaded || b.Engines[0].PID != 0 {
		t.Fatalf("engines of the loading server: %+v", b.Engines)
	}
}

// TestStatusSaysWhichEnginesAreLoaded: a server whose engine is unloaded
// for idleness is ready (a request is taken and loads it) and lists the
// engine as unloaded; a server of several engines lists each by name.
func TestStatusSaysWhichEnginesAreLoaded(t *testing.T) {
	root := t.TempDir()
	unloaded := fakeServe(t, http.StatusOK, `{"phase":"unloaded","message":"engine unloaded, loads on the next request","ready":true,"loaded":false,"restarts":0,`+
		`"engines":1,"engines_ready":1,"per_engine":[{"name":"engine-0","phase":"unloaded","message":"engine unloaded, loads on the next request","ready":true,"loaded":false,"restarts":0,"busy":false}]}`, 0)
	several := fakeServe(t, http.StatusOK, `{"phase":"ready","ready":true,"loaded":true,"restarts":0,"engines":2,"engines_ready":2,"per_engine":[`+
		`{"name":"gpu0","phase":"ready","ready":true,"loaded":true,"restarts":0},{"name":"gpu1","phase":"unloaded","ready":true,"loaded":false,"restarts":0}]}`, 0)
	for i, ts := range []*httptest.Server{unloaded, several} {
		if _, err := serverec.Write(root, serverec.Record{PID: os.Getpid(), Addr: ts.Listener.Addr().String(), Variant: "nvfp4", Root: root,
			Engine: "cuda", Started: now.Add(time.Duration(i) * time.Second), KeepAlive: "5m0s"}); err != nil {
			t.Fatal(err)
		}
		// one record per pid: read each server on its own
		out, _ := runStatus(t, root, false)
		want := []string{"\tready (unloaded)\tengine-0 unloaded\t", "\tready\tgpu0 loaded,gpu1 unloaded\t"}[i]
		if !strings.Contains(out, want) {
			t.Fatalf("table %q, want %q", out, want)
		}
		out, _ = runStatus(t, root, true)
		var rep Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Servers) != 1 {
			t.Fatalf("%v %s", err, out)
		}
		s := rep.Servers[0]
		if s.KeepAlive != "5m0s" || !s.Ready {
			t.Fatalf("server %+v", s)
		}
		switch i {
		case 0:
			if len(s.Engines) != 1 || s.Engines[0].State != "unloaded" || s.Engines[0].Loaded || !strings.Contains(s.Engines[0].Message, "loads on the next request") {
				t.Fatalf("engines %+v", s.Engines)
			}
		case 1:
			if len(s.Engines) != 2 || s.Engines[0] != (Engine{Name: "gpu0", State: "loaded", Loaded: true, Ready: true, Phase: "ready"}) || s.Engines[1].State != "unloaded" {
				t.Fatalf("engines %+v", s.Engines)
			}
		}
	}
}

func TestStatusUnreachableAndNone(t *testing.T) {
	root := t.TempDir()
	ts := httptest.NewServer(http.NotFoundHandler())
	addr := ts.Listener.Addr().String()
	ts.Close() // nothing listens there now
	if _, err := serverec.Write(root, serverec.Record{PID: os.Getpid(), Addr: addr, Variant: "full", Started: now}); err != nil {
		t.Fatal(err)
	}
	out, _ := runStatus(t, root, false)
	if !strings.Contains(out, "\tunreachable: ") || !strings.Contains(out, "\t-\t0s\t-\n") {
		t.Fatalf("out %q", out)
	}
	none := t.TempDir()
	out, errOut := runStatus(t, none, false)
	if out != "" || !strings.Contains(errOut, "no drama serve runs on "+none) {
		t.Fatalf("out %q err %q", out, errOut)
	}
}

func TestLoopbackForWildcardAddresses(t *testing.T) {
	for in, want := range map[string]string{"0.0.0.0:8793": "127.0.0.1:8793", "[::]:8793": "[::1]:8793", "127.0.0.1:1": "127.0.0.1:1", ":80": "127.0.0.1:80"} {
		if got := loopback(in); got != want {
			t.Errorf("loopback(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStatusFindsTheOneEngineInItsOwnDirectory: drama serve --gpus 0 runs
// one engine, gpu0-0, whose runtime file is in <root>/.drama/run/gpu0-0:
// status gives its pid, in the engine pid column and the engine's own.
func TestStatusFindsTheOneEngineInItsOwnDirectory(t *testing.T) {
	root := t.TempDir()
	ts := fakeServe(t, http.StatusOK, `{"phase":"ready","ready":true,"loaded":true,"restarts":0,"engines":1,"engines_ready":1,`+
		`"per_engine":[{"name":"gpu0-0","phase":"ready","ready":true,"loaded":true,"restarts":0}]}`, 0)
	if _, err := serverec.Write(root, serverec.Record{PID: os.Getpid(), Addr: ts.Listener.Addr().String(), Variant: "nvfp4", Root: root,
		Engine: "cuda", Started: now}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(serverec.RuntimeDir(root), "gpu0-0")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := native.WriteRuntimeFile(filepath.Join(dir, "engine-cuda.json"), native.RuntimeRecord{PID: 4343, Owner: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	out, _ := runStatus(t, root, true)
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Servers) != 1 {
		t.Fatalf("%v %s", err, out)
	}
	s := rep.Servers[0]
	if s.EnginePID != 4343 || len(s.Engines) != 1 || s.Engines[0].PID != 4343 {
		t.Fatalf("engine pid %d, engines %+v: want 4343, the pid in %s", s.EnginePID, s.Engines, dir)
	}
}

// TestStatusListsEachEngineLog: a server of several engines has each
// engine's log in its record; drama status gives each engine its own (the
// logs column lists them all), and still does for a server that does not
// answer, from the record alone.
func TestStatusListsEachEngineLog(t *testing.T) {
	root := t.TempDir()
	ts := fakeServe(t, http.StatusOK, `{"phase":"ready","ready":true,"loaded":true,"restarts":0,"engines":2,"engines_ready":2,"per_engine":[`+
		`{"name":"gpu0-0","phase":"ready","ready":true,"loaded":true,"restarts":0},{"name":"gpu1-0","phase":"ready","ready":true,"loaded":true,"restarts":0}]}`, 0)
	run := serverec.RuntimeDir(root)
	logs := []serverec.EngineLog{{Name: "gpu0-0", Log: filepath.Join(run, "gpu0-0", "engine-cuda.log")}, {Name: "gpu1-0", Log: filepath.Join(run, "gpu1-0", "engine-cuda.log")}}
	rec := serverec.Record{PID: os.Getpid(), Addr: ts.Listener.Addr().String(), Variant: "nvfp4", Root: root, Engine: "cuda", Started: now,
		LogFile: "/var/log/drama.log", EngineLog: logs[0].Log, Engines: logs}
	if _, err := serverec.Write(root, rec); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		out, _ := runStatus(t, root, false)
		if want := "\t/var/log/drama.log," + logs[0].Log + "," + logs[1].Log + "\n"; !strings.HasSuffix(out, want) {
			t.Fatalf("%s: table %q, want the logs column %q", what, out, want)
		}
		out, _ = runStatus(t, root, true)
		var rep Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Servers) != 1 {
			t.Fatalf("%v %s", err, out)
		}
		s := rep.Servers[0]
		if len(s.Engines) != 2 || s.Engines[0].Name != "gpu0-0" || s.Engines[0].Log != logs[0].Log || s.Engines[1].Name != "gpu1-0" ||
			s.Engines[1].Log != logs[1].Log || s.EngineLog != logs[0].Log {
			t.Fatalf("%s: engines %+v, engine_log %q; want each engine with its own log", what, s.Engines, s.EngineLog)
		}
	}
	check("a server that answers")
	ts.Close()
	check("a server that does not answer")
}
