//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/voices/clip"
)

// startServeBin runs drama serve from the drama binary at drama (the one
// built from this tree when empty) on the stand-in, and waits until ready.
func startServeBin(t testing.TB, drama string, extra ...string) *server {
	t.Helper()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "full"), 0o755)
	return launchServe(t, drama, root, nil, extra...)
}

// stalledClient asks for a long streamed synthesis over a connection with
// a 4 KiB receive buffer and never reads; close ends it.
func stalledClient(b *testing.B, url string) (close func()) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	addr := strings.TrimPrefix(url, "http://")
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	body := stalledBody
	fmt.Fprintf(conn, "POST /v1/audio/speech HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	return func() { conn.Close() }
}

// stalledBody is the stalled client's request: about 47 s of audio.
var stalledBody = `{"input":"` + strings.Repeat("a long text that never gets read ", 120) + `","response_format":"pcm","stream":true}`

// whole times a reply to its last byte.
func whole(url, body string) time.Duration {
	start := time.Now()
	if resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body)); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return time.Since(start)
}

// waits runs n clients at once, each one short streamed synthesis, and
// returns each one's time to its first audio byte.
func waits(b *testing.B, url string, n int) []time.Duration {
	body := `{"input":"Each client says the same short line.","response_format":"pcm","stream":true}`
	out := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := firstByte(url, body)
			if err != nil {
				b.Error(err)
			}
			out[i] = d
		}()
	}
	wg.Wait()
	return out
}

func metricValue(url, name string) string {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}

// BenchmarkServeStalledClient: 20 clients at once, alone (the peer) and
// beside one client that stops reading, on the stand-in paced at
// TENSORFOLD_STANDIN_RTF=0.05; reports the p99 of their time to first
// audio in both rounds and the growth, against two bounds: the stall cut
// plus one normal synthesis, and the stall cut plus the stalled request's
// own synthesis (most of its audio fits in the buffers between the engine
// and the socket, so the engine goes on making it before the client is
// seen to have stopped).
func BenchmarkServeStalledClient(b *testing.B) {
	b.Setenv("TENSORFOLD_STANDIN_RTF", "0.05")
	const stall = 2 * time.Second
	t := testing.TB(b)
	s := startServeBin(t, "", "--max-queue", "64", "--stall-timeout", stall.String())
	defer s.stop(t)
	const short = `{"input":"Each client says the same short line.","response_format":"pcm","stream":true}`
	var alone, beside []time.Duration
	var synth, long time.Duration
	var synths int
	for b.Loop() {
		for range 3 {
			synth += whole(s.url, short)
			synths++
		}
		long += whole(s.url, stalledBody)
		alone = append(alone, waits(b, s.url, 20)...)
		closeStalled := stalledClient(b, s.url)
		waitReady(t, s, "the stalled client's request holds the engine", func(st readyState) bool {
			return len(st.PerEngine) == 1 && st.PerEngine[0].Busy
		})
		beside = append(beside, waits(b, s.url, 20)...)
		closeStalled()
	}
	n := time.Duration(len(alone) / 20)
	pa, pb := percentile(alone, 0.99), percentile(beside, 0.99)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(pa), "alone-p99-ms")
	b.ReportMetric(ms(pb), "beside-stalled-p99-ms")
	b.ReportMetric(ms(pb-pa), "growth-ms")
	b.ReportMetric(ms(stall+synth/time.Duration(synths)), "stall+short-synthesis-ms")
	b.ReportMetric(ms(stall+long/n), "stall+stalled-synthesis-ms")
	var cut float64
	fmt.Sscan(metricValue(s.url, "drama_stalled_clients_total"), &cut)
	b.ReportMetric(cut, "clients-cut")
}

// cloneBody is a multipart clone request whose one clip is a WAV of size
// bytes (44.1 kHz mono 16-bit: 250 MB is 47 minutes), streamed from a
// pipe so the client holds none of it.
func cloneBody(size int) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("name", "Long")
		mw.WriteField("source", "synthetic")
		fw, _ := mw.CreateFormFile("clip", "long.wav")
		data := size - 44
		h := clip.WAVHeader(44100, data)
		fw.Write(h)
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = byte(i * 7)
		}
		for left := data; left > 0; left -= len(chunk) {
			fw.Write(chunk[:min(left, len(chunk))])
		}
		mw.WriteField("transcript", "A very long recording.")
		pw.CloseWithError(mw.Close())
	}()
	return pr, mw.FormDataContentType()
}

// BenchmarkServeCloneUploadRSS posts a 250 MB clone (one 47-minute WAV
// clip) and samples drama serve's resident memory every 5 ms meanwhile;
// reports idle RSS and the peak above it. DRAMA_BENCH_DRAMA names another
// drama binary to measure (an older build, as the peer) with its default
// limits; this tree's build runs with limits that let the whole upload in.
func BenchmarkServeCloneUploadRSS(b *testing.B) {
	t := testing.TB(b)
	tmp := b.TempDir()
	b.Setenv("TMPDIR", tmp) // drama serve's system temporary directory
	peer := os.Getenv("DRAMA_BENCH_DRAMA")
	var extra []string
	if peer == "" {
		extra = []string{"--max-clip-bytes", "300000000", "--max-upload-bytes", "300000000"}
	}
	s := startServeBin(t, peer, extra...)
	defer s.stop(t)
	pid := s.cmd.Process.Pid
	// not a wait for an event: the idle figure is the server's after it
	// has sat idle a moment once ready
	time.Sleep(300 * time.Millisecond)
	idle := rssKiB(pid)
	var peak int64
	var status int
	for b.Loop() {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				peak = max(peak, rssKiB(pid))
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		body, ct := cloneBody(250_000_000)
		resp, err := http.Post(s.url+"/v1/voices", ct, body)
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
		b.Logf("reply: %d %.300s", status, msg)
		close(stop)
		wg.Wait()
	}
	b.ReportMetric(float64(idle)/1024, "idle-MiB")
	b.ReportMetric(float64(peak-idle)/1024, "peak-above-idle-MiB")
	b.ReportMetric(float64(status), "status")
	ents, _ := filepath.Glob(filepath.Join(tmp, "multipart-*"))
	b.ReportMetric(float64(len(ents)), "multipart-files-in-tmp")
}
