package servecmd

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

func metric(t *testing.T, addr, name string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return strings.TrimPrefix(l, name+" ")
		}
	}
	return ""
}

// TestShutdownAnswersTheQueue503: at SIGTERM with a short --grace, the
// requests waiting for the engine get a 503 with Retry-After, not a closed
// connection; the one holding the engine is cut at the end of the grace.
func TestShutdownAnswersTheQueue503(t *testing.T) {
	srv, _, addr := serveFake(t, "--grace 300ms")
	long := `{"input":"` + strings.Repeat("a long text ", 200) + `","stream":true}`
	started := make(chan struct{})
	go rawSpeech(t, addr, long, started)
	<-started
	var wg sync.WaitGroup
	lines := make([]string, 3)
	retry := make([]string, 3)
	for i := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, h := rawSpeech(t, addr, `{"input":"queued"}`, nil)
			lines[i], retry[i] = l, h.Get("Retry-After")
		}()
	}
	enginetest.WaitFor(t, func() bool { return metric(t, addr, "drama_queue_depth") == "3" }) // the three requests queued
	srv.Shutdown(300 * time.Millisecond)
	wg.Wait()
	for i := range lines {
		if !strings.HasPrefix(lines[i], "HTTP/1.1 503") || retry[i] == "" {
			t.Errorf("queued request %d at shutdown: %q, Retry-After %q; want a 503 with Retry-After", i, lines[i], retry[i])
		}
	}
}

// TestMaxQueueZeroMeansNone: --max-queue 0 lets no request wait (it used
// to mean 32).
func TestMaxQueueZeroMeansNone(t *testing.T) {
	_, _, addr := serveFake(t, "--max-queue 0")
	started := make(chan struct{})
	done := make(chan string)
	go func() {
		l, _ := rawSpeech(t, addr, `{"input":"`+strings.Repeat("a long text ", 30)+`","stream":true}`, started)
		done <- l
	}()
	<-started
	deadline := time.Now().Add(10 * time.Second)
	for {
		line, h := rawSpeech(t, addr, `{"input":"second"}`, nil)
		if strings.HasPrefix(line, "HTTP/1.1 503") && h.Get("Retry-After") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second request with --max-queue 0: %q, want 503 while the first runs", line)
		}
	}
	if l := <-done; !strings.HasPrefix(l, "HTTP/1.1 200") {
		t.Fatalf("first request: %q", l)
	}
}

func TestGuardAndLimitFlags(t *testing.T) {
	args := "--stall-timeout 3s --allow-origin https://app.example --allow-origin http://localhost:3000 --allow-host tts.lan --max-clip-bytes 1000 --max-upload-bytes 5000 --clone-wait 0 --upload-timeout 30s"
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{{Args: strings.Fields(args), Check: func(got *Options) bool {
		return got.StallTimeout == 3*time.Second && len(got.AllowOrigins) == 2 && got.AllowHosts[0] == "tts.lan" && got.MaxClipBytes == 1000 && got.MaxUpload == 5000 && got.CloneWait == 0 && got.UploadTimeout == 30*time.Second
	}}})
	cmdtest.CheckFlags(t, NewCmd, refused(map[string]string{
		"--stall-timeout 0":                        "--stall-timeout",
		"--allow-origin app.example":               "want scheme://host[:port]",
		"--allow-origin https://app.example/path":  "want scheme://host[:port]",
		"--max-clip-bytes 10 --max-upload-bytes 5": "raise --max-upload-bytes",
		"--max-upload-bytes 0":                     "--max-upload-bytes must be more than 0",
		"--clone-wait -1s":                         "--clone-wait",
		"--upload-timeout 0":                       "--upload-timeout must be more than 0",
	}))
}

// TestShutdownDrainsForALoadBalancer: at SIGTERM a load balancer's health
// check sees GET /ready turn 503 at once while GET /health (liveness) stays
// 200, the request in flight finishes whole, and only then does the
// listener close, well within --grace.
func TestShutdownDrainsForALoadBalancer(t *testing.T) {
	var access enginetest.Buffer
	fake, sup := supervisedFake(20 * time.Millisecond)
	srv, _, addr := serveOverLogs(t, serveOptions(t, "", "--grace 30s"), &logs{base: slog.NewJSONHandler(&access, nil)}, sup, t.TempDir(), engine.Install{})
	srv.API.SetCapabilities(fake.Desc.Capabilities)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	type result struct {
		finish string
		err    error
	}
	inflight := make(chan result, 1)
	started := make(chan struct{})
	go func() {
		body := `{"input":"` + strings.Repeat("drain ", 70) + `","stream":true,"response_format":"pcm"}`
		resp, err := client.Post("http://"+addr+"/v1/audio/speech", "application/json", strings.NewReader(body))
		close(started)
		if err != nil {
			inflight <- result{err: err}
			return
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		inflight <- result{resp.Trailer.Get("X-Finish-Reason"), err}
	}()
	<-started
	stopped := make(chan struct{})
	go func() { srv.Shutdown(30 * time.Second); close(stopped) }()

	get := func(path string) (int, string) {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s while draining: %v (the listener closed before the request in flight finished)", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	enginetest.WaitFor(t, func() bool { // GET /ready after SIGTERM: 503, phase stopping
		code, body := get("/ready")
		return code == 503 && strings.Contains(body, `"phase":"stopping"`)
	})
	select {
	case <-stopped:
		t.Fatal("shutdown returned while a request was in flight")
	default:
	}
	if code, body := get("/health"); code != 200 {
		t.Fatalf("GET /health while draining: %d %s, want 200 (liveness must hold)", code, body)
	}
	r := <-inflight
	if r.err != nil || r.finish != "stop" {
		t.Fatalf("the request in flight at SIGTERM: finish %q, err %v; want it whole", r.finish, r.err)
	}
	// a balancer that has not seen /ready turn 503 yet hands over the next
	// request soon after this one ends: it is served, not refused, and its
	// connection closes after it even though the client keeps connections.
	// It is sent once the server has logged the end of the one in flight
	// (the access line is written after the request stops counting), so
	// the server is idle and within DrainQuiet of its last request.
	enginetest.WaitFor(t, func() bool { return strings.Contains(access.String(), `"path":"/v1/audio/speech"`) })
	keepAlive := &http.Client{Transport: &http.Transport{}}
	resp, err := keepAlive.Post("http://"+addr+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"next","stream":false}`))
	if err != nil {
		t.Fatalf("a request right after the last one ended, while draining: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("a request right after the last one ended, while draining: %d, close %v, %.200q; want 200 with Connection: close", resp.StatusCode, resp.Close, b)
	}
	<-stopped
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("still accepting connections after the drain")
	}
}
