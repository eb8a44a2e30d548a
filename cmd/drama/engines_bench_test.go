package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/bench"
)

// The engine benchmarks run drama serve over stand-in engines paced at
// TENSORFOLD_STANDIN_RTF=0.5 (wall seconds per second of audio), so that an
// engine is busy for half the audio's length and mostly asleep: a 2-core
// machine measures dispatch, not the stand-in's CPU.

// launchEngines starts drama serve with n stand-in engines on one GPU
// slot each and waits until all are ready.
func launchEngines(b *testing.B, n int, env []string, extra ...string) *server {
	b.Helper()
	root := variantRoot(b)
	args := append([]string{"--gpus", "0", "--engines-per-gpu", strconv.Itoa(n), "--max-queue", "256"}, extra...)
	s := launchServe(b, "", root, append([]string{"TENSORFOLD_STANDIN_RTF=0.5"}, env...), args...)
	waitReady(b, s, "every engine ready", func(st readyState) bool { return st.EnginesReady == n })
	return s
}

// streamed posts body and returns the time to the first audio byte and
// the seconds of audio received.
func streamed(url, body string) (time.Duration, float64, error) {
	start := time.Now()
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		return 0, 0, fmt.Errorf("status %d: %s", resp.StatusCode, msg)
	}
	buf := make([]byte, 32<<10)
	var first time.Duration
	total := 0
	for {
		k, err := resp.Body.Read(buf)
		if k > 0 && total == 0 {
			first = time.Since(start)
		}
		total += k
		if err == io.EOF {
			return first, float64(total) / 2 / engine.SampleRate, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}

// loadAvg is the 1-minute load average.
func loadAvg() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// runClients sends bodies from clients concurrent clients, each taking
// the next body in order, and returns the wall time, each request's first
// audio and the audio seconds in all.
func runClients(b *testing.B, url string, clients int, bodies []string) (time.Duration, []time.Duration, float64) {
	b.Helper()
	var mu sync.Mutex
	next, audio := 0, 0.0
	firsts := make([]time.Duration, 0, len(bodies))
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == len(bodies) {
					mu.Unlock()
					return
				}
				body := bodies[next]
				next++
				mu.Unlock()
				first, secs, err := streamed(url, body)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				firsts, audio = append(firsts, first), audio+secs
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firsts, audio
}

const runs = 3

// BenchmarkEnginesThroughput: audio seconds served per wall second with 1,
// 2 and 4 engines, 2 clients per engine keeping them busy; the median of
// 3 runs each, and its ratio to one engine's.
func BenchmarkEnginesThroughput(b *testing.B) {
	body := `{"input":"Hello there.","response_format":"pcm"}`
	for b.Loop() {
		load := loadAvg()
		var one float64
		for _, n := range []int{1, 2, 4} {
			s := launchEngines(b, n, nil)
			bodies := make([]string, 6*n)
			for i := range bodies {
				bodies[i] = body
			}
			runClients(b, s.url, 2*n, bodies[:2*n]) // warm
			var tput []float64
			for range runs {
				wall, _, audio := runClients(b, s.url, 2*n, bodies)
				tput = append(tput, audio/wall.Seconds())
			}
			s.stop(b)
			m := bench.Percentile(tput, 50)
			if n == 1 {
				one = m
			}
			b.ReportMetric(m, fmt.Sprintf("audio-s/s-%d-engines", n))
			b.Logf("%d engine(s): %.2f audio s/s (runs %.2f), %.2f x one engine, %.2f of %d x", n, m, tput, m/one, m/one/float64(n), n)
		}
		b.Logf("load average (1 min) at start %.2f, at end %.2f", load, loadAvg())
		b.ReportMetric(load, "load1")
	}
}

// sixVoices are six voices given as references in the request, each one
// a prefix of its own for the engines' prefix caches.
func sixVoices() []string {
	rows := func(v int) string {
		r := make([]string, 10)
		for i := range r {
			r[i] = fmt.Sprintf("[%d,%d]", v+i, v)
		}
		return "[" + strings.Join(r, ",") + "]"
	}
	var out []string
	for v := range 6 {
		out = append(out, fmt.Sprintf(`{"input":"Hi.","response_format":"pcm","references":[{"text":"Voice number %d speaking.","vq_codes":%s}]}`, v, rows(v)))
	}
	return out
}

// BenchmarkEnginesAffinity: first audio on 3 engines, 2 clients, 6 voices
// in a fixed shuffled order (24 requests a run), a cold voice costing
// 0.7 s of prefill (TENSORFOLD_STANDIN_PREFILL), with voice affinity and
// with round robin; p50 over each run, the median of 3 runs.
func BenchmarkEnginesAffinity(b *testing.B) {
	voices := sixVoices()
	rng := rand.New(rand.NewPCG(20, 6))
	var bodies []string
	for range 24 {
		bodies = append(bodies, voices[rng.IntN(len(voices))])
	}
	for b.Loop() {
		load := loadAvg()
		p50 := map[string]float64{}
		for _, policy := range []string{"affinity", "round-robin"} {
			s := launchEngines(b, 3, []string{"TENSORFOLD_STANDIN_PREFILL=700ms"}, "--dispatch", policy, "--allow-inline-references")
			var meds []float64
			for range runs {
				_, firsts, _ := runClients(b, s.url, 2, bodies)
				meds = append(meds, percentile(firsts, 0.5).Seconds()*1000)
			}
			s.stop(b)
			p50[policy] = bench.Percentile(meds, 50)
			b.ReportMetric(p50[policy], "first-audio-p50-ms-"+policy)
			b.Logf("%s: first audio p50 %.0f ms (runs %.0f)", policy, p50[policy], meds)
		}
		b.Logf("affinity %.1f x better than round robin; load average (1 min) at start %.2f, at end %.2f", p50["round-robin"]/p50["affinity"], load, loadAvg())
		b.ReportMetric(p50["round-robin"]/p50["affinity"], "rr/affinity")
		b.ReportMetric(load, "load1")
	}
}
