package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
)

// firstByte times a streamed request to the first byte of its body, and
// drains the rest.
func firstByte(url, body string) (time.Duration, error) {
	start := time.Now()
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadByte(); err != nil {
		return 0, err
	}
	d := time.Since(start)
	_, err = io.Copy(io.Discard, br)
	return d, err
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(p*float64(len(s)-1))]
}

// startStandin runs the stand-in native server directly.
func startStandin(b *testing.B) string {
	bin := binaries(b)
	addr := freeAddrB(b)
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(filepath.Join(bin, "tensorfold-standin"), "serve", "--port", port, "--load-time", "10ms")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := "http://" + addr
	if !enginetest.Within(10*time.Second, func() bool {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		b.Fatal("stand-in not up in 10 s")
	}
	return url
}

func freeAddrB(b *testing.B) string { return freeAddr(b) }

// BenchmarkServeAddedFirstByte compares the time to the first audio byte
// through drama serve (plugin, gRPC, queue) with the stand-in directly.
func BenchmarkServeAddedFirstByte(b *testing.B) {
	t := testing.TB(b)
	s := startServe(t)
	defer s.stop(t)
	direct := startStandin(b)
	body := `{"input":"A short line for timing.","response_format":"pcm","stream":true}`
	var viaServe, viaDirect []time.Duration
	for range 5 { // warm both paths
		firstByte(s.url, body)
		firstByte(direct, body)
	}
	b.ResetTimer()
	for b.Loop() {
		d1, err1 := firstByte(direct, body)
		d2, err2 := firstByte(s.url, body)
		if err1 != nil || err2 != nil {
			b.Fatal(err1, err2)
		}
		viaDirect, viaServe = append(viaDirect, d1), append(viaServe, d2)
	}
	b.ReportMetric(float64(percentile(viaDirect, 0.5).Microseconds())/1000, "direct-p50-ms")
	b.ReportMetric(float64(percentile(viaServe, 0.5).Microseconds())/1000, "serve-p50-ms")
	b.ReportMetric(float64((percentile(viaServe, 0.5)-percentile(viaDirect, 0.5)).Microseconds())/1000, "added-p50-ms")
	b.ReportMetric(float64((percentile(viaServe, 0.99)-percentile(viaDirect, 0.99)).Microseconds())/1000, "added-p99-ms")
}

// lastByte times a request to the last byte of its body.
func lastByte(url, body string) (time.Duration, error) {
	start := time.Now()
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), nil
}

// BenchmarkServeAddedWhole compares the time to the last byte of a reply
// through drama serve with the stand-in directly (unpaced, so the figures
// are the path's own cost): a whole reply ("stream": false, a WAV with
// exact sizes) and a streamed one (raw PCM, as the native server streams),
// of a medium text of the bench corpus (about 7.4 s of audio, 0.65 MB),
// the four requests alternating.
func BenchmarkServeAddedWhole(b *testing.B) {
	t := testing.TB(b)
	s := startServe(t)
	defer s.stop(t)
	direct := startStandin(b)
	const text = "The storm knocked out the power across the valley, so the bakery handed out free bread by candlelight."
	whole := `{"input":"` + text + `","response_format":"wav","stream":false}`
	streamed := `{"input":"` + text + `","response_format":"pcm","stream":true}`
	var d [4][]time.Duration // whole direct, whole serve, streamed direct, streamed serve
	urls := [4]string{direct, s.url, direct, s.url}
	bodies := [4]string{whole, whole, streamed, streamed}
	for range 5 { // warm both paths
		for i := range d {
			lastByte(urls[i], bodies[i])
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for i := range d {
			took, err := lastByte(urls[i], bodies[i])
			if err != nil {
				b.Fatal(err)
			}
			d[i] = append(d[i], took)
		}
	}
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	p50 := func(i int) time.Duration { return percentile(d[i], 0.5) }
	b.ReportMetric(ms(p50(0)), "whole-direct-p50-ms")
	b.ReportMetric(ms(p50(1)-p50(0)), "whole-added-p50-ms")
	b.ReportMetric(ms(p50(2)), "streamed-direct-p50-ms")
	b.ReportMetric(ms(p50(3)-p50(2)), "streamed-added-p50-ms")
}

// BenchmarkServe100Clients sends 100 concurrent streamed requests per
// iteration and reports the gap between syntheses as the clients see it:
// from the last byte of one reply to the first byte of the next (an upper
// bound: it includes the engine's own time to first audio), and drama
// serve's resident memory growth.
func BenchmarkServe100Clients(b *testing.B) {
	t := testing.TB(b)
	s := startServe(t, "--max-queue", "100")
	defer s.stop(t)
	body := `{"input":"Each client says the same short line.","response_format":"pcm","stream":true}`
	rss0 := rssKiB(s.cmd.Process.Pid)
	var gaps []time.Duration
	for b.Loop() {
		spans := make([][2]time.Time, 100)
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first, last, err := span(s.url, body)
				if err != nil {
					b.Error(err)
				}
				spans[i] = [2]time.Time{first, last}
			}()
		}
		wg.Wait()
		sort.Slice(spans, func(i, j int) bool { return spans[i][0].Before(spans[j][0]) })
		for i := 1; i < len(spans); i++ {
			gaps = append(gaps, max(0, spans[i][0].Sub(spans[i-1][1])))
		}
	}
	b.ReportMetric(float64(percentile(gaps, 0.5).Microseconds())/1000, "gap-p50-ms")
	b.ReportMetric(float64(percentile(gaps, 1).Microseconds())/1000, "gap-max-ms")
	b.ReportMetric(float64(rssKiB(s.cmd.Process.Pid)-rss0)/1024, "rss-growth-MB")
}

// span returns when the first and the last byte of a reply arrived.
func span(url, body string) (first, last time.Time, err error) {
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		return first, last, err
	}
	defer resp.Body.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if first.IsZero() {
				first = time.Now()
			}
			last = time.Now()
		}
		if err == io.EOF {
			return first, last, nil
		}
		if err != nil {
			return first, last, err
		}
	}
}

func rssKiB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}
