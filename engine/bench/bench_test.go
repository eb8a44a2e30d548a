package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/drama-tts/drama/internal/atomicfile"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine/native/standin"
)

func TestDefaultCorpus(t *testing.T) {
	sum := sha256.Sum256(defaultCorpus)
	if got := hex.EncodeToString(sum[:]); got != DefaultCorpusSHA256 {
		t.Fatalf("corpus sha256 %s, DefaultCorpusSHA256 says %s: update the constant and docs/bench.md together", got, DefaultCorpusSHA256)
	}
	c := DefaultCorpus()
	if len(c.Texts) != 24 || c.SHA256 != DefaultCorpusSHA256 {
		t.Fatalf("%d texts, sha256 %s", len(c.Texts), c.SHA256)
	}
	classes := map[string]int{}
	tags := 0
	for _, x := range c.Texts {
		classes[x.Class]++
		if strings.Contains(x.Text, "[") {
			tags++
		}
	}
	if classes[Short] != 8 || classes[Medium] != 8 || classes[Long] != 8 || tags < 6 {
		t.Fatalf("classes %v, %d texts with point tags", classes, tags)
	}
}

func TestParseCorpusErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"# only a comment\n\n", "no texts"},
		{"ok\n" + strings.Repeat("a", 4097) + "\n", "line 2: 4097 characters"},
		{"\xff\xfe\n", "not UTF-8"},
	} {
		_, err := ParseCorpus("c.txt", []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "c.txt") {
			t.Errorf("%q: %v, want %q", tc.data[:min(10, len(tc.data))], err, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{4, 1, 3, 2, 5}
	for _, tc := range []struct{ p, want float64 }{{0, 1}, {50, 3}, {100, 5}, {95, 4.8}, {25, 2}} {
		if got := Percentile(xs, tc.p); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("p%g = %g, want %g", tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("no values: want NaN")
	}
}

func TestDiffers(t *testing.T) {
	if ch, v := Differs([]float64{1, 1.01, 0.99}, []float64{2, 2.02, 1.98}, 0); !ch || v != "slower" {
		t.Errorf("2x: %v %s", ch, v)
	}
	if ch, v := Differs([]float64{1, 1.01, 0.99}, []float64{1.005, 0.995, 1.02}, 0); ch || v != "same" {
		t.Errorf("noise: %v %s", ch, v)
	}
	if ch, v := Differs([]float64{1}, []float64{1.03}, 0); ch {
		t.Errorf("within the 2 %% floor on each side: %v %s", ch, v)
	}
	if ch, v := Differs([]float64{0.010}, []float64{0.013}, 0.002); ch {
		t.Errorf("within the absolute floor: %v %s", ch, v)
	}
	if ch, v := Differs([]float64{2}, []float64{1}, 0); !ch || v != "faster" {
		t.Errorf("faster: %v %s", ch, v)
	}
}

// standinURL starts an in-process stand-in paced at rtf; it speaks the
// speech route as drama serve does.
func standinURL(t *testing.T, opts standin.Options) string {
	t.Helper()
	run, err := standin.Listen(opts, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	return "http://" + run.Addr
}

func tinyCorpus(t *testing.T, texts ...string) *Corpus {
	t.Helper()
	c, err := ParseCorpus("tiny", []byte(strings.Join(texts, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runAt(t *testing.T, rtf float64, corpus *Corpus) *Report {
	t.Helper()
	url := standinURL(t, standin.Options{RTF: rtf})
	rep, err := Run(context.Background(), Config{Client: &Client{URL: url}, Corpus: corpus, Warmup: 1, Passes: 3, ServerPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestRunSchedule(t *testing.T) {
	c := tinyCorpus(t, "Hi.", "[laughs] A somewhat longer line of text, to be medium sized for sure.")
	rep := runAt(t, 0.1, c)
	if n := len(rep.Requests); n != 1+2*(1+3)*2 {
		t.Fatalf("%d requests, want 17", n)
	}
	if n := (&Config{Corpus: c, Warmup: 1, Passes: 3}).Requests(); n != len(rep.Requests) {
		t.Fatalf("Requests() = %d, the run made %d", n, len(rep.Requests))
	}
	for cfg, want := range map[*Config]int{
		{Corpus: c}: 1 + 2*(DefaultWarmup+DefaultPasses)*2,
		{Corpus: c, Warmup: -1, Passes: 1, Voices: []string{"a", "b"}}: 1 + 2*1*2*2,
	} {
		if got := cfg.Requests(); got != want {
			t.Errorf("Requests() of %+v = %d, want %d", *cfg, got, want)
		}
	}
	first := rep.Requests[0]
	if first.Pass != "cold" || first.Mode != Whole || rep.Requests[1].Pass != "warmup" || rep.Requests[3].Pass != "warm" {
		t.Fatalf("order: %+v %+v %+v", first, rep.Requests[1], rep.Requests[3])
	}
	if rep.Summary.Invalid != 0 {
		t.Fatalf("%d invalid: %+v", rep.Summary.Invalid, rep.Requests)
	}
	for _, q := range rep.Requests {
		if q.FinishReason != "stop" || q.AudioSeconds <= 0 || q.RTF < 0.1 || q.Bytes == 0 {
			t.Fatalf("request %+v", q)
		}
	}
	st := rep.Mode(Streamed)
	if st.All.FirstAudio == nil || st.All.FirstAudio.N != 6 || len(st.All.FirstAudio.PassP50) != 3 {
		t.Fatalf("streamed first audio %+v", st.All.FirstAudio)
	}
	if st.All.FirstAudio.P50 >= st.All.Total.P50 {
		t.Fatalf("first audio %g not before the end %g", st.All.FirstAudio.P50, st.All.Total.P50)
	}
	if rep.Mode(Whole).All.FirstAudio != nil {
		t.Fatal("whole replies have no separate first audio")
	}
	if st.ByClass[Short] == nil || st.ByClass[Medium] == nil || st.ByClass[Long] != nil || st.ByVoice["default"] == nil {
		t.Fatalf("groups: %v %v", st.ByClass, st.ByVoice)
	}
	// The same text in the same voice: the same samples, whole or streamed.
	sums := map[string]map[string]bool{}
	for _, q := range rep.Requests {
		if sums[q.TextID] == nil {
			sums[q.TextID] = map[string]bool{}
		}
		sums[q.TextID][q.PCMSHA256] = true
	}
	for id, s := range sums {
		if len(s) != 1 {
			t.Fatalf("text %s: %d different audios", id, len(s))
		}
	}
	if len(rep.Memory.Samples) < 2 || rep.Memory.Peak.RSS <= 0 {
		t.Fatalf("memory: %d samples, peak %+v", len(rep.Memory.Samples), rep.Memory.Peak)
	}
	// report.json round trip
	data, err := rep.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "report.json")
	if err := atomicfile.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(name)
	if err != nil || back.Mode(Streamed).All.RTF.P50 != st.All.RTF.P50 {
		t.Fatalf("read back: %v", err)
	}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, html.String())
}

// checkHTML checks the page holds the three plots and loads nothing.
func checkHTML(t *testing.T, page string) {
	t.Helper()
	for _, id := range []string{PlotFirstAudio, PlotRTF, PlotMemory} {
		i := strings.Index(page, `<figure id="`+id+`">`)
		if i < 0 {
			t.Fatalf("no figure %s", id)
		}
		fig := page[i:]
		fig = fig[:strings.Index(fig, "</figure>")]
		if !strings.Contains(fig, "<svg") || strings.Count(fig, "<path") < 5 {
			t.Fatalf("figure %s drawn no plot:\n%.300s", id, fig)
		}
	}
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", "href=", "@import", "url(", "@font-face"} {
		if strings.Contains(page, bad) {
			t.Fatalf("the page holds %q: it must load nothing", bad)
		}
	}
}

func TestBrokenRepliesAreInvalid(t *testing.T) {
	url := standinURL(t, standin.Options{})
	c := &Client{URL: url}
	res, err := c.Speak(context.Background(), "this breaks "+standin.MarkerFail+" midway", "", Streamed)
	if err != nil || res.Valid() || !strings.Contains(res.Error, "broke off") {
		t.Fatalf("cut stream: %v %+v", err, res.Request)
	}
	res, err = c.Speak(context.Background(), "hello", "nobody", Whole)
	if err != nil || res.Valid() || res.Status != http.StatusBadRequest {
		t.Fatalf("unknown voice: %v %+v", err, res.Request)
	}
	if _, s := wavSamples([]byte("RIFF\x00\x00\x00\x00WAVEjunk")); s == "" {
		t.Fatal("a bad WAV passed")
	}
}

// paced returns a copy of rep whose requests took scale times as long,
// each also moved by a small deterministic jitter (up to jitter of its
// value, differing between requests), as a run at another pace would be.
func paced(rep *Report, scale, jitter float64) *Report {
	out := *rep
	out.Requests = slices.Clone(rep.Requests)
	for i := range out.Requests {
		r := &out.Requests[i]
		j := 1 + jitter*math.Sin(float64(7*i+3))
		r.FirstAudio *= scale * j
		r.Total *= scale * j
		r.RTF *= scale * j
	}
	out.Summarize()
	return &out
}

// steady returns rep with every request's times set from its own audio
// at real-time factor rtf (first audio after 0.05 s), as a run on an idle
// machine would measure them: the spread between passes is then the
// jitter paced adds, not the load of the machine that made rep.
func steady(rep *Report, rtf float64) *Report {
	out := *rep
	out.Requests = slices.Clone(rep.Requests)
	for i := range out.Requests {
		r := &out.Requests[i]
		r.RTF = rtf
		r.Total = r.AudioSeconds * rtf
		if r.FirstAudio > 0 {
			r.FirstAudio = 0.05
		}
	}
	out.Summarize()
	return &out
}

// TestCompareFlagsSlowdownNotNoise: from one real run on the paced
// stand-in, a run twice as slow is flagged slower with its ratio, and a run
// at the same pace with run-to-run jitter is not flagged. The real run
// gives the report its shape (modes, passes, groups); its times are set
// steady and the other two reports derived from it, so the verdicts depend
// on the comparison alone, never on how loaded the machine was.
func TestCompareFlagsSlowdownNotNoise(t *testing.T) {
	c := tinyCorpus(t, "Hi.")
	a := steady(runAt(t, 0.25, c), 0.25)
	noise := paced(a, 1, 0.01)
	slow := paced(a, 2, 0.01)
	find := func(rows []Row, mode, fig string) Row {
		for _, r := range rows {
			if r.Mode == mode && r.Group == "all" && r.Figure == fig {
				return r
			}
		}
		t.Fatalf("no row %s %s", mode, fig)
		return Row{}
	}
	for _, fig := range []string{"rtf p50", "total_s p50", "first_audio_s p50"} {
		for _, mode := range []string{Whole, Streamed} {
			if mode == Whole && fig == "first_audio_s p50" {
				continue // a whole reply has no first audio of its own
			}
			if r := find(Compare(a, slow), mode, fig); !r.Changed || r.Verdict != "slower" || r.Ratio < 1.9 || r.Ratio > 2.1 {
				t.Errorf("2x slower, %s %s: %+v", mode, fig, r)
			}
			if r := find(Compare(a, noise), mode, fig); r.Changed {
				t.Errorf("same pace, %s %s flagged: %+v", mode, fig, r)
			}
		}
	}
}
