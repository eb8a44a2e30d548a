package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine/native/standin"
	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/voices/transcribe"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

var werTexts = []string{
	"[laughs] One, two, three: it's 1,000 steps to the top!",
	"The lighthouse keeper climbed the stairs each evening at dusk, and talked to the gulls.",
	"Hi there.",
}

// werRun benches the stand-in (noise: a broken engine) with a transcriber
// that hears the stand-in's text and garbles share of its words.
func werRun(t *testing.T, noise bool, share float64) (*Report, *transcribetest.Server) {
	t.Helper()
	url := standinURL(t, standin.Options{Noise: noise})
	ts := transcribetest.New()
	t.Cleanup(ts.Close)
	ts.Text = transcribetest.Garble(share, transcribetest.Hear(standin.SpokenText))
	rep, err := Run(context.Background(), Config{Client: &Client{URL: url}, Corpus: tinyCorpus(t, werTexts...), Warmup: 1, Passes: 2,
		Transcriber: &transcribe.Client{URL: "http://user:secret@" + strings.TrimPrefix(ts.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	return rep, ts
}

// Each warm whole reply is transcribed, and the rates are errors over
// words pooled per text, per voice and over all: a transcriber that
// garbles a quarter of the words gives floor(n/4) errors a text.
func TestRunWER(t *testing.T) {
	rep, ts := werRun(t, false, 0.25)
	if got := len(ts.Requests()); got != len(werTexts)*2 {
		t.Fatalf("%d transcriptions, want one per warm whole reply: %d", got, len(werTexts)*2)
	}
	w := rep.Summary.WER
	if w == nil || w.Untranscribed != 0 || !strings.HasSuffix(w.Transcriber, "/v1/audio/transcriptions") || strings.Contains(w.Transcriber, "secret") {
		t.Fatalf("summary %+v", w)
	}
	words, errs := 0, 0
	for i, text := range werTexts {
		n := len(transcribe.Words(text))
		e := n / 4
		f := w.ByText[rep.Corpus.Texts[i].ID]
		if f == nil || f.Replies != 2 || f.Words != 2*n || f.Errors != 2*e || len(f.PassRates) != 2 || f.PassRates[0] != float64(e)/float64(n) {
			t.Errorf("text %d (%d words): %+v, want %d errors a reply", i, n, f, e)
		}
		words, errs = words+2*n, errs+2*e
	}
	if w.All.Words != words || w.All.Errors != errs || math.Abs(w.All.Rate-float64(errs)/float64(words)) > 1e-12 || w.All.Replies != 6 {
		t.Fatalf("all: %+v, want %d errors in %d words", w.All, errs, words)
	}
	if d := w.ByVoice["default"]; d == nil || d.Rate != w.All.Rate || d.Words != words {
		t.Fatalf("by voice: %+v", w.ByVoice)
	}
	for _, q := range rep.Requests {
		transcribed := q.Pass == "warm" && q.Mode == Whole
		if (q.WER != nil) != transcribed || (q.Transcript != nil) != transcribed {
			t.Fatalf("%s %s %s: transcript %v, wer %v", q.Pass, q.Mode, q.TextID, q.Transcript, q.WER)
		}
		if transcribed && (strings.Contains(*q.Transcript, "laughs") || strings.Contains(*q.Transcript, "garbled1") != (q.TextID != "t03")) {
			t.Fatalf("heard %q", *q.Transcript)
		}
	}
	// report.json and the page carry them; a report read back summarises
	// to the same figures.
	data, err := rep.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "report.json")
	atomicfile.WriteFile(name, data, 0o644)
	back, err := ReadReport(name)
	if err != nil {
		t.Fatal(err)
	}
	back.Summary.WER = nil
	back.Summarize()
	if bw := back.Summary.WER; bw == nil || bw.All.Errors != w.All.Errors || bw.All.Words != w.All.Words || bw.All.Rate != w.All.Rate || len(bw.ByText) != len(werTexts) {
		t.Fatalf("summarised again: %+v", back.Summary.WER)
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, page.String())
	if p := page.String(); !strings.Contains(p, `id="wer"`) || !strings.Contains(p, "<b>"+Percent(w.All.Rate)+"</b>") || !strings.Contains(p, "garbled1") {
		t.Fatalf("no word error rate on the page")
	}
	if rows := rep.WERRows(); len(rows) != 1+len(werTexts) || rows[0].Group != "all" || rows[1].Group != "text t01" {
		t.Fatalf("rows %+v", rows)
	}
}

// A broken engine's noise is heard as no words: every word missed.
func TestRunWERNoise(t *testing.T) {
	rep, _ := werRun(t, true, 0)
	if rep.Summary.Invalid != 0 {
		t.Fatalf("noise is valid audio: %d invalid", rep.Summary.Invalid)
	}
	if w := rep.Summary.WER; w == nil || w.All.Rate != 1 || w.All.Errors != w.All.Words || w.All.Words == 0 {
		t.Fatalf("noise: %+v", w)
	}
}

// Without a transcriber there is no word error rate and no transcript.
func TestRunWithoutTranscriber(t *testing.T) {
	rep := runAt(t, 0, tinyCorpus(t, "Hi."))
	if rep.Summary.WER != nil || rep.Transcriber != "" || rep.WERRows() != nil {
		t.Fatalf("%+v", rep.Summary.WER)
	}
	data, _ := json.Marshal(rep)
	if bytes.Contains(data, []byte(`"wer"`)) || bytes.Contains(data, []byte(`"transcript`)) {
		t.Fatal("report.json speaks of transcripts")
	}
}

// A transcriber that answers an error leaves the reply out and counts it;
// one that cannot be reached ends the run, naming it.
func TestRunTranscriberFailures(t *testing.T) {
	url := standinURL(t, standin.Options{})
	ts := transcribetest.New()
	defer ts.Close()
	heard := transcribetest.Hear(standin.SpokenText)
	ts.Text = func(name string, audio []byte) (string, int) {
		if strings.HasPrefix(name, "t02-") {
			return "", http.StatusInternalServerError
		}
		return heard(name, audio)
	}
	cfg := Config{Client: &Client{URL: url}, Corpus: tinyCorpus(t, "Hi.", "Oh no."), Warmup: -1, Passes: 1, Transcriber: &transcribe.Client{URL: ts.URL}}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Summary.WER
	if w.Untranscribed != 1 || w.All.Replies != 1 || w.All.Errors != 0 || w.ByText["t02"] != nil {
		t.Fatalf("%+v", w)
	}
	for _, q := range rep.Requests {
		if q.TextID == "t02" && q.Pass == "warm" && q.Mode == Whole && !strings.Contains(q.TranscribeError, "500") {
			t.Fatalf("t02: %+v", q)
		}
	}
	ts.Close()
	_, err = Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "transcribing t01") || !strings.Contains(err.Error(), ts.URL) {
		t.Fatalf("no transcriber: %v", err)
	}
}

// bench compare sets the rates side by side: a transcriber that garbles
// more words is worse beyond the spread between passes; texts whose rates
// are equal are left out.
func TestCompareWER(t *testing.T) {
	a, _ := werRun(t, false, 0)
	b, _ := werRun(t, false, 0.25)
	var wer []Row
	for _, r := range Compare(a, b) {
		if r.Figure == FigureWER {
			wer = append(wer, r)
		}
	}
	if len(wer) == 0 || wer[0].Group != "all" || wer[0].A != 0 || wer[0].B != b.Summary.WER.All.Rate || !wer[0].Changed || wer[0].Verdict != "worse" || wer[0].Ratio != 0 {
		t.Fatalf("rows %+v", wer)
	}
	// "Hi there." has two words: a quarter of two is none garbled.
	for _, r := range wer[1:] {
		if r.Group == "text t03" {
			t.Errorf("an unchanged text compared: %+v", r)
		}
	}
	if len(wer) != 3 {
		t.Errorf("want all, t01 and t02: %+v", wer)
	}
	back := Compare(b, a)
	for _, r := range back {
		if r.Figure == FigureWER && r.Group == "all" && (r.Verdict != "better" || r.Ratio != 0) {
			t.Fatalf("b to a: %+v", r)
		}
	}
	if _, err := json.Marshal(back); err != nil {
		t.Fatalf("compare rows as JSON: %v", err)
	}
}
