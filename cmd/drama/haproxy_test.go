package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/realclient"
	"github.com/drama-tts/drama/engine/enginetest"
)

// The HAProxy tests run Debian's haproxy with the shipped
// docs/deploy/haproxy.cfg (its addresses moved to loopback) in front of two
// drama serve on stand-in engines, send a steady stream of speech requests
// through it, and make one host fail.

// lbSetup is haproxy in front of two drama serve.
type lbSetup struct {
	url   string // haproxy's frontend
	sock  string // its stats socket
	hosts [2]*server
	roots [2]string
	log   *enginetest.Buffer
}

// haproxyConfig is the shipped configuration with its frontend bound to
// bind, its servers at addrs, its stats socket at sock, and logging to
// stderr with no chroot or user change (haproxy runs as the test's user).
// Every line it changes must be there, so the test fails if the shipped
// file drifts from what it tests.
func haproxyConfig(t *testing.T, bind, sock string, addrs [2]string) string {
	t.Helper()
	shipped, err := os.ReadFile(filepath.Join(realclient.ModuleRoot(t), "docs", "deploy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	changed := map[string]int{}
	for _, line := range strings.Split(string(shipped), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "chroot" || f[0] == "user" || f[0] == "group":
			changed[f[0]]++
			continue
		case f[0] == "log" && len(f) > 1 && f[1] != "global":
			line, changed["log"] = "    log stderr local0", changed["log"]+1
		case f[0] == "bind":
			line, changed["bind"] = "    bind "+bind, changed["bind"]+1
		case f[0] == "stats" && len(f) > 2 && f[1] == "socket":
			line, changed["stats"] = "    stats socket "+sock+" "+strings.Join(f[3:], " "), changed["stats"]+1
		case f[0] == "server" && len(f) > 2:
			n := strings.TrimPrefix(f[1], "gpu")
			i := map[string]int{"1": 0, "2": 1}[n]
			if n != "1" && n != "2" {
				t.Fatalf("docs/deploy/haproxy.cfg: server %s: the test knows gpu1 and gpu2", f[1])
			}
			line, changed["server"] = "    server "+f[1]+" "+addrs[i]+" "+strings.Join(f[3:], " "), changed["server"]+1
		}
		out = append(out, line)
	}
	for what, want := range map[string]int{"chroot": 1, "user": 1, "group": 1, "log": 1, "bind": 1, "stats": 1, "server": 4} {
		if changed[what] != want {
			t.Fatalf("docs/deploy/haproxy.cfg: %d %s lines, the test expects %d", changed[what], what, want)
		}
	}
	return strings.Join(out, "\n")
}

// startLB starts two drama serve (env and extra for each) and haproxy in
// front of them, and waits until haproxy holds both up.
func startLB(t *testing.T, env [2][]string, extra ...string) *lbSetup {
	t.Helper()
	bin := realclient.HAProxy(t)
	lb := &lbSetup{log: &enginetest.Buffer{}}
	var addrs [2]string
	for i := range lb.hosts {
		lb.roots[i] = variantRoot(t)
		lb.hosts[i] = launchServe(t, "", lb.roots[i], env[i], extra...)
		addrs[i] = strings.TrimPrefix(lb.hosts[i].url, "http://")
	}
	dir := t.TempDir()
	front := freeAddr(t)
	lb.url, lb.sock = "http://"+front, filepath.Join(dir, "admin.sock")
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(t, front, lb.sock, addrs)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = lb.log, lb.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("haproxy's log:\n%s", lb.log)
		}
	})
	if !enginetest.Within(20*time.Second, func() bool { return lb.state(t, "gpu1") == "UP" && lb.state(t, "gpu2") == "UP" }) {
		t.Fatalf("haproxy never held both hosts up\n%s", lb.log)
	}
	return lb
}

// stat returns haproxy's statistics line of the engines' backend for
// server srv, by column name.
func (lb *lbSetup) stat(t *testing.T, srv string) map[string]string {
	t.Helper()
	c, err := net.Dial("unix", lb.sock)
	if err != nil {
		return nil
	}
	defer c.Close()
	fmt.Fprint(c, "show stat\n")
	rows, err := csv.NewReader(bufio.NewReader(c)).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil
	}
	head := rows[0]
	head[0] = strings.TrimPrefix(head[0], "# ")
	for _, r := range rows[1:] {
		if len(r) == len(head) && r[0] == "drama_engines" && r[1] == srv {
			m := map[string]string{}
			for i, h := range head {
				m[h] = r[i]
			}
			return m
		}
	}
	return nil
}

// state is haproxy's view of server srv: UP, DOWN, "UP 1/2" and so on.
func (lb *lbSetup) state(t *testing.T, srv string) string { return lb.stat(t, srv)["status"] }

// lbResult is one request sent through haproxy.
type lbResult struct {
	id         string
	start, end time.Time
	status     int
	finish     string // the X-Finish-Reason trailer: "stop" when whole
	retryAfter string
	err        error
}

func (r lbResult) ok() bool { return r.err == nil && r.status == 200 && r.finish == "stop" }

// load sends streamed speech requests through haproxy from workers clients
// until stop is closed. wait returns every result once they have stopped;
// ended returns, meanwhile, the count of requests started after t0 that
// have ended.
func (lb *lbSetup) load(t *testing.T, name string, workers int, stop <-chan struct{}) (wait func() []lbResult, ended func(t0 time.Time) int) {
	var mu sync.Mutex
	var results []lbResult
	var wg sync.WaitGroup
	n := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: time.Minute}
			for {
				select {
				case <-stop:
					return
				case <-t.Context().Done(): // the test ended without stopping it (a t.Fatal)
					return
				default:
				}
				mu.Lock()
				n++
				id := fmt.Sprintf("%s-%d", name, n)
				mu.Unlock()
				r := lbResult{id: id, start: time.Now()}
				body := fmt.Sprintf(`{"input":"worker %d says request %s.","response_format":"pcm"}`, w, id)
				req, _ := http.NewRequest("POST", lb.url+"/v1/audio/speech", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+lbKey)
				req.Header.Set("X-Request-Id", id)
				resp, err := client.Do(req)
				if err == nil {
					r.status, r.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
					_, r.err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					r.finish = resp.Trailer.Get("X-Finish-Reason")
				} else {
					r.err = err
				}
				r.end = time.Now()
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		}()
	}
	ended = func(t0 time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range results {
			if r.start.After(t0) {
				n++
			}
		}
		return n
	}
	return func() []lbResult { wg.Wait(); return results }, ended
}

// steady waits until the stream load sends is steady: each host has
// answered two of its requests.
func (lb *lbSetup) steady(t *testing.T) {
	t.Helper()
	if !enginetest.Within(30*time.Second, func() bool { return len(served(lb.hosts[0])) >= 2 && len(served(lb.hosts[1])) >= 2 }) {
		t.Fatalf("the hosts did not both answer requests in 30 s: %d and %d", len(served(lb.hosts[0])), len(served(lb.hosts[1])))
	}
}

// lbAfter is how many requests started after a host fails or stops must
// end before the stream stops: two for each of the load's workers.
const lbAfter = 8

// endAfter waits until lbAfter requests started after t0 have ended.
func endAfter(t *testing.T, ended func(time.Time) int, t0 time.Time) {
	t.Helper()
	if !enginetest.Within(30*time.Second, func() bool { return ended(t0) >= lbAfter }) {
		t.Fatalf("%d requests started after the host went have ended in 30 s, want %d", ended(t0), lbAfter)
	}
}

// served returns the ids of the speech requests in a drama serve's access
// log.
func served(s *server) map[string]bool {
	ids := map[string]bool{}
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		var rec struct {
			Source, ID, Path string
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Source == "access" && rec.Path == "/v1/audio/speech" {
			ids[rec.ID] = true
		}
	}
	return ids
}

// lbKey is the API key of both drama serve behind haproxy, as
// docs/deploy.md has every host take one: the speech requests carry it,
// haproxy's checks of /ready go without.
const lbKey = "dk-haproxy-test-0123456789abcdef"

// lbEnv paces the stand-ins so that a request holds its engine about a
// quarter of a second, and gives them their key.
var lbEnv = []string{"TENSORFOLD_STANDIN_RTF=0.1", "DRAMA_API_KEY=" + lbKey}

// checkFailover runs the steady stream, fails host gpu2 with fail, and
// checks that only requests in flight at that moment failed: the one the
// host held and one haproxy was handing it as it failed (cut or never
// answered, at most two), and those haproxy handed it from its queue in
// the moment before its passive check took the host out (answered 503
// with Retry-After by then); that haproxy took the host out; and that no
// request reached it afterwards.
func checkFailover(t *testing.T, lb *lbSetup, fail func()) (refused int) {
	stop := make(chan struct{})
	wait, ended := lb.load(t, t.Name(), 4, stop)
	lb.steady(t)
	failed := time.Now()
	fail()
	if !enginetest.Within(30*time.Second, func() bool { return lb.state(t, "gpu2") == "DOWN" }) {
		t.Fatalf("haproxy did not take the failed host out: %q", lb.state(t, "gpu2"))
	}
	down := time.Now()
	endAfter(t, ended, down)
	close(stop)
	results := wait()
	atB := served(lb.hosts[1])
	var lost, after int
	for _, r := range results {
		if r.start.After(down) {
			after++
			if atB[r.id] {
				t.Errorf("request %s reached the failed host after haproxy took it out", r.id)
			}
		}
		if r.ok() {
			continue
		}
		lost++
		if r.status == 503 && r.retryAfter != "" {
			refused++
			if r.end.After(down) {
				t.Errorf("request %s was refused (503) after haproxy took the host out", r.id)
			}
		}
		if !r.start.Before(failed) || !r.end.After(failed) {
			t.Errorf("request %s failed (status %d, finish %q, %v) but was not in flight when the host failed (%v to %v, failure at %v)",
				r.id, r.status, r.finish, r.err, r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"), failed.Format("15:04:05.000"))
		}
	}
	if lost-refused > 2 {
		t.Errorf("%d requests cut or unanswered: want at most the one the host held and one haproxy handed it as it failed", lost-refused)
	}
	if after == 0 {
		t.Error("no request was sent after the host was taken out: the test proves nothing")
	}
	st := lb.stat(t, "gpu2")
	t.Logf("%d requests, %d lost (%d refused with Retry-After); host taken out %v after the failure; gpu2: %s retries, %s redispatches",
		len(results), lost, refused, down.Sub(failed).Round(time.Millisecond), st["wretr"], st["wredis"])
	return refused
}

// TestHAProxyKilledHost: drama serve on one host is killed outright; the
// request it held is lost, the connections haproxy then tries are refused
// and sent to the other host, and the checks take the host out.
func TestHAProxyKilledHost(t *testing.T) {
	lb := startLB(t, [2][]string{lbEnv, lbEnv})
	checkFailover(t, lb, func() {
		lb.hosts[1].cmd.Process.Kill()
		<-lb.hosts[1].done // reaped: the cleanup's stop sees it gone
	})
}

// TestHAProxyFailedEngine: the engine on one host dies and will not start
// again (its restarts crash); drama serve there stays up and answers GET
// /ready 503, so haproxy takes the host out.
func TestHAProxyFailedEngine(t *testing.T) {
	fault := filepath.Join(t.TempDir(), "fault")
	lb := startLB(t, [2][]string{lbEnv, append([]string{"TENSORFOLD_STANDIN_FAULT_FILE=" + fault}, lbEnv...)})
	refused := checkFailover(t, lb, func() {
		if err := os.WriteFile(fault, []byte("crash-on-start"), 0o644); err != nil {
			t.Fatal(err)
		}
		// one engine: its runtime file is in the run directory itself
		if err := syscall.Kill(enginePID(t, lb.roots[1], ""), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	})
	// what haproxy hands the host before it takes it out gets a 503 held
	// for --ready-wait, which haproxy sends on to the other host
	if refused > 0 {
		t.Errorf("%d requests reached the client as a 503: haproxy's retry-on 503 sends them to the other host once --ready-wait has let it take this one out", refused)
	}
	resp, err := http.Get(lb.hosts[1].url + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("GET /ready on the host whose engine failed: %d, want 503", resp.StatusCode)
	}
}

// TestHAProxyDrain: SIGTERM to one drama serve under a steady stream loses
// no request: GET /ready turns 503 and haproxy takes the host out, the
// request in flight there finishes, and drama serve exits 0.
func TestHAProxyDrain(t *testing.T) {
	lb := startLB(t, [2][]string{lbEnv, lbEnv}, "--grace", "20s")
	stop := make(chan struct{})
	wait, ended := lb.load(t, t.Name(), 4, stop)
	lb.steady(t)
	termed := time.Now()
	b := lb.hosts[1]
	b.cmd.Process.Signal(syscall.SIGTERM)
	var exit error
	select {
	case exit = <-b.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("drama serve did not stop within 30 s of SIGTERM\n%s", b.stderr)
	}
	endAfter(t, ended, time.Now()) // and some after it has gone
	close(stop)
	results := wait()
	if exit != nil {
		t.Errorf("drama serve after SIGTERM: %v, want exit status 0\n%s", exit, b.stderr)
	}
	var after int
	for _, r := range results {
		if r.start.After(termed) {
			after++
		}
		if !r.ok() {
			t.Errorf("request %s lost at a graceful stop: status %d, finish %q, %v", r.id, r.status, r.finish, r.err)
		}
	}
	if after == 0 || len(served(b)) == 0 {
		t.Errorf("%d requests after SIGTERM, %d served by the stopped host: the test proves nothing", after, len(served(b)))
	}
	t.Logf("%d requests, none lost; the stopped host served %d and exited %v after SIGTERM", len(results), len(served(b)), time.Since(termed).Round(time.Millisecond))
}

// lbSpeak sends n speech requests in voice through haproxy, from four
// clients at once, and returns every result with its body.
func (lb *lbSetup) lbSpeak(t *testing.T, name, voice string, n int) ([]lbResult, []string) {
	t.Helper()
	results, bodies := make([]lbResult, n), make([]string, n)
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: time.Minute}
			for i := range next {
				id := fmt.Sprintf("%s-%d", name, i)
				r := lbResult{id: id, start: time.Now()}
				body := fmt.Sprintf(`{"input":"Request %s in the shared voice.","voice":%q,"response_format":"pcm"}`, id, voice)
				req, _ := http.NewRequest("POST", lb.url+"/v1/audio/speech", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+lbKey)
				req.Header.Set("X-Request-Id", id)
				resp, err := client.Do(req)
				if err == nil {
					r.status = resp.StatusCode
					b, err := io.ReadAll(resp.Body)
					r.err = err
					resp.Body.Close()
					r.finish = resp.Trailer.Get("X-Finish-Reason")
					bodies[i] = string(b)
				} else {
					r.err = err
				}
				r.end = time.Now()
				results[i] = r
			}
		}()
	}
	wg.Wait()
	return results, bodies
}

// servedBoth checks that each host answered some of the requests named
// prefix, so that a host that did not clone (or did not delete) answered
// too.
func (lb *lbSetup) servedBoth(t *testing.T, prefix string) {
	t.Helper()
	for i, h := range lb.hosts {
		n := 0
		for id := range served(h) {
			if strings.HasPrefix(id, prefix+"-") {
				n++
			}
		}
		if n == 0 {
			t.Errorf("host gpu%d answered none of the requests %s: the test proves nothing", i+1, prefix)
		}
	}
}

// TestHAProxySharedVoiceStore: two drama serve behind the shipped
// configuration share one --voice-store. A clone made through the balancer
// (on one host) is spoken by 20 requests through it right after its 201,
// every one 200 whichever host takes it; once it is deleted through the
// balancer (on either host), every request for it is answered as for an
// unknown voice, by both hosts alike.
func TestHAProxySharedVoiceStore(t *testing.T) {
	shared := t.TempDir()
	clips := speechClips(t)
	lb := startLB(t, [2][]string{lbEnv, lbEnv}, "--voice-store", shared)
	for _, root := range lb.roots {
		withCodec(t, root)
	}
	status, body := cloneAt(t, lb.url, clips, "shared1", "Anna Example")
	created := time.Now()
	if status != 201 {
		t.Fatalf("clone through the balancer: %d %s", status, body)
	}
	results, bodies := lb.lbSpeak(t, "spoken", "shared1", 20)
	last := created
	for i, r := range results {
		if !r.ok() {
			t.Errorf("request %s in the new clone: status %d, finish %q, %v: %.200s", r.id, r.status, r.finish, r.err, bodies[i])
		}
		if r.end.After(last) {
			last = r.end
		}
	}
	// the bound: each host looks the clone up in the store before
	// refusing it, so none is refused; all are answered well within it
	if took := last.Sub(created); took > 30*time.Second {
		t.Errorf("the 20 requests ended %v after the clone's 201, over the bound of 30 s", took)
	}
	lb.servedBoth(t, "spoken")
	for i, h := range lb.hosts {
		if ids := voiceIDsAt(t, h.url); !strings.Contains(" "+strings.Join(ids, " ")+" ", " shared1 ") {
			t.Errorf("GET /v1/voices on gpu%d lacks the clone: %v", i+1, ids)
		}
	}
	t.Logf("20 requests in a clone made through the balancer: all 200, the last %v after its 201", last.Sub(created).Round(time.Millisecond))

	req, _ := http.NewRequest("DELETE", lb.url+"/v1/voices/shared1", nil)
	req.Header.Set("Authorization", "Bearer "+lbKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("delete through the balancer: %d %s", resp.StatusCode, msg)
	}
	results, bodies = lb.lbSpeak(t, "deleted", "shared1", 20)
	want := `"unknown voice \"shared1\": GET /v1/voices lists the voices served"`
	for i, r := range results {
		if r.status != 400 || !strings.Contains(bodies[i], want) {
			t.Errorf("request %s in the deleted clone: %d %.300s, want 400 %s", r.id, r.status, bodies[i], want)
		}
	}
	lb.servedBoth(t, "deleted")
}
