package qualify

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drama-tts/drama/engine/bench"
	"github.com/drama-tts/drama/engine/native/standin"
	"github.com/drama-tts/drama/voices/transcribe"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

func testMarker(b Binding) *Marker {
	return &Marker{Qualified: true, Variant: b.Variant, Host: b.Host, PinsSHA256: b.PinsSHA256, NativeSHA256: b.NativeSHA256,
		Numerics: Numerics{Accepted: true, Statement: NumericsStatement, AcceptedAt: time.Now()}, QualifiedAt: time.Now()}
}

func TestMarkerBinding(t *testing.T) {
	root := t.TempDir()
	b := Binding{Variant: "full", Host: HostID(), PinsSHA256: strings.Repeat("a", 64), NativeSHA256: strings.Repeat("b", 64)}
	if st := Check(root, b); st.State != Unqualified || st.Reason != NoMarker {
		t.Fatalf("no marker: %+v", st)
	}
	m := testMarker(b)
	m.Numerics.Accepted = false
	if err := Write(root, m); err == nil {
		t.Fatal("a marker without the numerics accepted was written")
	}
	if err := Write(root, testMarker(b)); err != nil {
		t.Fatal(err)
	}
	if st := Check(root, b); !st.OK() {
		t.Fatalf("same binding: %+v", st)
	}
	// A rebuilt engine (its record changed) makes the marker stale.
	rebuilt := b
	rebuilt.NativeSHA256 = strings.Repeat("c", 64)
	if st := Check(root, rebuilt); st.State != Stale || !strings.Contains(st.Reason, "engine binary") {
		t.Fatalf("engine record changed: %+v", st)
	}
	newPins := b
	newPins.PinsSHA256 = strings.Repeat("d", 64)
	if st := Check(root, newPins); st.State != Stale || !strings.Contains(st.Reason, "pins") {
		t.Fatalf("pins changed: %+v", st)
	}
	other := b
	other.Host = "elsewhere"
	if st := Check(root, other); st.State != Stale || !strings.Contains(st.Reason, "host") {
		t.Fatalf("another host: %+v", st)
	}
	if st := Check(root, Binding{Variant: "nvfp4", Host: b.Host}); st.State != Unqualified {
		t.Fatalf("another variant: %+v", st)
	}
	os.WriteFile(Path(root, "full"), []byte(`{"format":"drama-qualified/1","qualified":true,"surprise":1}`), 0o644)
	if st := Check(root, b); st.State != Unqualified || !strings.Contains(st.Reason, "surprise") {
		t.Fatalf("bad marker: %+v", st)
	}
	if _, err := Read(root, "full"); !errors.Is(err, ErrBadMarker) || strings.Contains(err.Error(), "drama ") {
		t.Fatalf("bad marker: want ErrBadMarker naming no command, got %v", err)
	}
}

func TestParagraphIs300Characters(t *testing.T) {
	if n := utf8.RuneCountInString(Paragraph); n != 300 {
		t.Fatalf("paragraph has %d characters", n)
	}
}

func benchAt(t *testing.T, rtf float64) *bench.Report {
	t.Helper()
	run, err := standin.Listen(standin.Options{RTF: rtf}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	corpus, _ := bench.ParseCorpus("tiny", []byte("Hi."))
	rep, err := bench.Run(context.Background(), bench.Config{Client: &bench.Client{URL: "http://" + run.Addr}, Corpus: corpus, Warmup: -1, Passes: 1, ServerPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestGates(t *testing.T) {
	g := Gates{FirstAudio: DefaultFirstAudio, RTF: DefaultRTF, BookedBytes: 54 << 30}
	if res := g.Evaluate(benchAt(t, 0.5)); !AllPass(res) {
		t.Fatalf("at RTF 0.5: %+v", res)
	}
	res := g.Evaluate(benchAt(t, 1.2))
	failed := map[string]string{}
	for _, r := range res {
		if !r.Pass {
			failed[r.Name] = r.Detail
		}
	}
	for _, mode := range []string{"whole", "streamed"} {
		d := failed["rtf "+mode]
		if !strings.Contains(d, "warm "+mode+" RTF p50 1.") || !strings.Contains(d, "not under 1.000") {
			t.Errorf("at RTF 1.2, %s: %q", mode, d)
		}
	}
	if len(failed) != 2 {
		t.Errorf("want only the two RTF gates failed: %v", failed)
	}
	// The memory gate names the peak and the booking.
	tight := Gates{FirstAudio: 1, RTF: 10, BookedBytes: 1}
	for _, r := range tight.Evaluate(benchAt(t, 0)) {
		if r.Name == "memory" && (r.Pass || !strings.Contains(r.Detail, "over the 0.00 GiB booked")) {
			t.Errorf("memory: %+v", r)
		}
	}
}

// flaky wraps a stand-in and changes one sample of every second whole
// reply to the same sentence: an engine that is not deterministic.
type flaky struct {
	h     http.Handler
	count atomic.Int64
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	body.ReadFrom(r.Body)
	r.Body = nopCloser{bytes.NewReader(body.Bytes())}
	if !strings.Contains(body.String(), "kettle") || strings.Contains(body.String(), `"stream":true`) || f.count.Add(1) != 2 {
		f.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	out[len(out)-1] ^= 0x40
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(out)
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func TestE2E(t *testing.T) {
	s, err := standin.NewServer(standin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	good := httptest.NewServer(s)
	defer good.Close()
	res, err := E2E(context.Background(), E2EConfig{Client: &bench.Client{URL: good.URL}, Voices: []string{}})
	if err != nil || !AllPass(res) || len(res) != 5 {
		t.Fatalf("stand-in: %v %+v", err, res)
	}

	refs := []Reference{{Text: "Hello there.", VQCodes: [][]int{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}, {13, 14}, {15, 16}, {17, 18}, {19, 20}}}}
	res, err = E2E(context.Background(), E2EConfig{Client: &bench.Client{URL: good.URL}, Voices: []string{}, References: refs, ReferencesFrom: "x.json"})
	if err != nil || !AllPass(res) || len(res) != 6 || res[4].Name != "inline references (1 from x.json)" {
		t.Fatalf("with references: %v %+v", err, res)
	}
	metal, _ := standin.NewServer(standin.Options{Metal: true})
	refusing := httptest.NewServer(metal)
	defer refusing.Close()
	res, err = E2E(context.Background(), E2EConfig{Client: &bench.Client{URL: refusing.URL}, Voices: []string{}, References: refs, ReferencesFrom: "x.json"})
	if err != nil || res[4].Pass || !strings.Contains(res[4].Detail, "status 400") {
		t.Fatalf("references refused: %v %+v", err, res)
	}

	bad := httptest.NewServer(&flaky{h: s})
	defer bad.Close()
	res, err = E2E(context.Background(), E2EConfig{Client: &bench.Client{URL: bad.URL}, Voices: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Name == "sentence warm, byte-identical" {
			if r.Pass || !strings.Contains(r.Detail, "the replies differ") {
				t.Fatalf("differing warm reply passed: %+v", r)
			}
			return
		}
	}
	t.Fatal("no warm step")
}

func TestCheckStopped(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary")
	}
	pid := cmd.Process.Pid
	if r := CheckStopped([]int{pid}, -1, DefaultMemoryTolerance); r.Pass || !strings.Contains(r.Detail, "left running") {
		t.Fatalf("live process: %+v", r)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if r := CheckStopped([]int{pid}, bench.MemAvailable(), DefaultMemoryTolerance); !r.Pass {
		t.Fatalf("gone: %+v", r)
	}
	if r := CheckStopped([]int{pid}, bench.MemAvailable()+4<<30, DefaultMemoryTolerance); r.Pass || !strings.Contains(r.Detail, "below its level before the load") {
		t.Fatalf("memory not back: %+v", r)
	}
}

// benchHeard benches the stand-in (noise: a broken engine) with a
// transcriber that hears the stand-in's text and garbles share of its
// words, or with none when share < 0.
func benchHeard(t *testing.T, noise bool, share float64) *bench.Report {
	t.Helper()
	run, err := standin.Listen(standin.Options{Noise: noise}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	cfg := bench.Config{Client: &bench.Client{URL: "http://" + run.Addr}, Warmup: -1, Passes: 2}
	cfg.Corpus, _ = bench.ParseCorpus("tiny", []byte("[laughs] One two three four five six seven eight nine ten.\nA short line of six words."))
	if share >= 0 {
		ts := transcribetest.New()
		defer ts.Close()
		ts.Text = transcribetest.Garble(share, transcribetest.Hear(standin.SpokenText))
		cfg.Transcriber = &transcribe.Client{URL: ts.URL}
	}
	rep, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func werResult(t *testing.T, g Gates, rep *bench.Report) *Result {
	t.Helper()
	var found *Result
	for _, r := range g.Evaluate(rep) {
		if r.Name == "word error rate" {
			found = &r
		} else if !r.Pass {
			t.Errorf("%s failed: %s", r.Name, r.Detail)
		}
	}
	return found
}

// A broken engine's noise is valid, deterministic audio in real time: only
// the word error rate fails it, naming the figure. A good engine passes;
// one whose speech a transcriber mishears in a share of the words above
// the gate fails; without a transcriber nothing is gated and the marker
// says so.
func TestGateWER(t *testing.T) {
	g := Gates{FirstAudio: 10, RTF: 10, WER: DefaultWER}
	noise := werResult(t, g, benchHeard(t, true, 0))
	if noise == nil || noise.Pass || noise.Value != 1 ||
		!strings.Contains(noise.Detail, "word error rate 100.00 % (32 errors in 32 words of 4 replies") || !strings.Contains(noise.Detail, "is over the gate 5.00 %") {
		t.Fatalf("noise: %+v", noise)
	}
	good := benchHeard(t, false, 0)
	if r := werResult(t, g, good); r == nil || !r.Pass || r.Value != 0 || !strings.Contains(r.Detail, "0.00 % (0 errors in 32 words") {
		t.Fatalf("good: %+v", r)
	}
	// A tenth of the words: 1 of 10 and 0 of 6 a pass, 2 in 32: 6.25 %.
	if r := werResult(t, g, benchHeard(t, false, 0.1)); r == nil || r.Pass || !strings.Contains(r.Detail, "6.25 % (2 errors in 32 words") || !strings.Contains(r.Detail, "worst: text t01 at 10.00 %") {
		t.Fatalf("a tenth misheard: %+v", r)
	}
	if r := werResult(t, Gates{FirstAudio: 10, RTF: 10, WER: 0.07}, benchHeard(t, false, 0.1)); r == nil || !r.Pass {
		t.Fatalf("under a 7 %% gate: %+v", r)
	}
	none := benchHeard(t, false, -1)
	if r := werResult(t, g, none); r != nil {
		t.Fatalf("without a transcriber: %+v", r)
	}

	in := IntelligibilityOf(good, DefaultWER)
	if !in.Checked || in.WER == nil || *in.WER != 0 || in.Words != 32 || in.GateWER != 0.05 || in.Short() != "word error rate 0.00 %" ||
		!strings.HasSuffix(in.Transcriber, "/v1/audio/transcriptions") || !strings.HasPrefix(in.Summary, "word error rate 0.00 % (0 errors in 32 words") {
		t.Fatalf("checked: %+v", in)
	}
	out := IntelligibilityOf(none, DefaultWER)
	if out.Checked || out.WER != nil || out.Short() != NotChecked || !strings.HasPrefix(out.Summary, "intelligibility not checked") {
		t.Fatalf("not checked: %+v", out)
	}
	// The marker keeps it; an older marker without it reads as not checked.
	root := t.TempDir()
	b := Binding{Variant: "full", Host: HostID(), PinsSHA256: strings.Repeat("a", 64), NativeSHA256: strings.Repeat("b", 64)}
	m := testMarker(b)
	m.Intelligibility = in
	if err := Write(root, m); err != nil {
		t.Fatal(err)
	}
	if st := Check(root, b); !st.OK() || st.Marker.Intelligibility.Short() != "word error rate 0.00 %" {
		t.Fatalf("read back: %+v", st.Marker)
	}
	old := `{"format":"drama-qualified/1","qualified":true,"variant":"full","host":"h","gpu":"","pins_sha256":"","native_sha256":"","checkpoint_revision":"",
		"numerics":{"accepted":true,"statement":"","accepted_at":"2024-01-01T00:00:00Z"},"bench":{"first_audio_p50_s":0,"rtf_whole_p50":0,"rtf_streamed_p50":0,"peak_bytes":0,"booked_bytes":0,"ready_s":0},"qualified_at":"2024-01-01T00:00:00Z"}`
	os.WriteFile(Path(root, "full"), []byte(old), 0o644)
	if m, err := Read(root, "full"); err != nil || m.Intelligibility.Short() != NotChecked {
		t.Fatalf("an older marker: %v %+v", err, m)
	}
}
