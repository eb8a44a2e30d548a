package native_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/native"
)

// replayServer answers every request with the same stream: 1,024 frames
// (4 MiB of PCM, 47.6 s) in chunks of one frame and a finish-reason
// trailer, made once, so the benchmark measures the reading side.
func replayServer(b *testing.B) string {
	pcm := bytes.Repeat([]byte{1, 2, 3, 4}, 1024*native.SamplesPerFrame/2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Trailer", native.HeaderFinishReason)
		rc := http.NewResponseController(w)
		for off := 0; off < len(pcm); off += 4096 {
			w.Write(pcm[off : off+4096])
			rc.Flush()
		}
		w.Header().Set(native.HeaderFinishReason, "length")
	})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// BenchmarkStreamRead reads the replayed stream with this package's raw
// client and, as the peer, with net/http's client, alternating within one
// loop so both see the same load. Both parse the chunked body and the
// trailer; each reports MB/s of PCM.
func BenchmarkStreamRead(b *testing.B) {
	addr := replayServer(b)
	req := &native.SpeechRequest{Input: "x", Stream: true, ResponseFormat: "pcm"}
	body, _ := json.Marshal(req)
	size := int64(1024 * native.SamplesPerFrame * native.BytesPerSample)
	c := native.NewClient(addr)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var tNative, tHTTP time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := c.Synthesize(context.Background(), req, func([]byte) error { return nil })
		if err != nil || res.Bytes != size || res.FinishReason != "length" {
			b.Fatalf("%+v %v", res, err)
		}
		mid := time.Now()
		resp, err := hc.Post("http://"+addr+native.SpeechPath, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size || resp.Trailer.Get(native.HeaderFinishReason) != "length" {
			b.Fatalf("%d %v %v", n, err, resp.Trailer)
		}
		tNative, tHTTP = tNative+mid.Sub(start), tHTTP+time.Since(mid)
	}
	mb := float64(size) * float64(b.N) / 1e6
	b.ReportMetric(mb/tNative.Seconds(), "native-MB/s")
	b.ReportMetric(mb/tHTTP.Seconds(), "net-http-MB/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkKeptConnection times a short whole reply (a 4 KiB WAV) on a
// connection kept from the reply before against one on a new connection
// for each request (IdleTimeout -1), alternating within one loop; each
// reports its median in microseconds.
func BenchmarkKeptConnection(b *testing.B) {
	wav := append(native.WAVHeader(4096), make([]byte, 4096)...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set(native.HeaderFinishReason, "stop")
		w.Header().Set("Content-Length", strconv.Itoa(len(wav)))
		w.Write(wav)
	}))
	b.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	kept, fresh := native.NewClient(addr), native.NewClient(addr)
	fresh.IdleTimeout = -1
	req := &native.SpeechRequest{Input: "x", ResponseFormat: native.FormatWAV}
	var d [2][]time.Duration
	for b.Loop() {
		for i, c := range []*native.Client{kept, fresh} {
			start := time.Now()
			if res, err := c.Synthesize(context.Background(), req, func([]byte) error { return nil }); err != nil || res.Bytes != 4096 {
				b.Fatalf("%+v %v", res, err)
			}
			d[i] = append(d[i], time.Since(start))
		}
	}
	for i, name := range []string{"kept-p50-us", "new-p50-us"} {
		slices.Sort(d[i])
		b.ReportMetric(float64(d[i][len(d[i])/2].Nanoseconds())/1000, name)
	}
	b.ReportMetric(0, "ns/op")
}
