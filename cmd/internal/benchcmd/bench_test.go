package benchcmd

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/realclient"
	"github.com/drama-tts/drama/engine/bench"
	"github.com/drama-tts/drama/engine/native/standin"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

func TestFlags(t *testing.T) {
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{
		{Check: func(o *Options) bool { return o.Warmup == 2 && o.Passes == 3 && o.Out == "." && !o.Start }},
		{Args: []string{"--voice", "a", "--voice", "b"}, Check: func(o *Options) bool { return len(o.Voices) == 2 }},
		{Args: []string{"--start", "--", "--engine-bin", "x"}, Check: func(o *Options) bool { return o.Start && strings.Join(o.ServeArgs, " ") == "--engine-bin x" }},
		{Args: []string{"--", "--engine-bin", "x"}, WantErr: "add --start"},
		{Args: []string{"--start", "--server", "http://x"}, WantErr: "exclude each other"},
		{Args: []string{"stray"}, WantErr: "unknown command"},
		{Args: []string{"--passes", "0"}, WantErr: "--passes"},
	})
}

func TestResolveServer(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "DRAMA_HOME", t.TempDir())
	if u, _ := ResolveServer(f, ""); u != DefaultServer {
		t.Errorf("default: %s", u)
	}
	if u, _ := ResolveServer(f, "127.0.0.1:9000"); u != "http://127.0.0.1:9000" {
		t.Errorf("flag: %s", u)
	}
	f = cmdtest.Factory(ios, "DRAMA_HOME", t.TempDir(), "DRAMA_ADDR", "127.0.0.1:9001")
	if u, _ := ResolveServer(f, ""); u != "http://127.0.0.1:9001" {
		t.Errorf("DRAMA_ADDR: %s", u)
	}
}

func standin_(t *testing.T, rtf float64) string {
	t.Helper()
	run, err := standin.Listen(standin.Options{RTF: rtf}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	return "http://" + run.Addr
}

func writeCorpus(t *testing.T, texts ...string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "corpus.txt")
	os.WriteFile(name, []byte("# test corpus\n"+strings.Join(texts, "\n")+"\n"), 0o644)
	return name
}

// benchRun runs drama bench against url and returns the output directory.
func benchRun(t *testing.T, url string, corpus string) (dir string, stdout string) {
	t.Helper()
	dir = t.TempDir()
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "DRAMA_HOME", t.TempDir())
	err := cmdtest.Execute(NewCmd(f, nil), "--server", url, "--corpus", corpus, "--warmup", "0", "--passes", "3", "--out", dir)
	if err != nil {
		t.Fatalf("drama bench: %v\n%s", err, errOut)
	}
	return dir, out.String()
}

func TestBenchWritesReports(t *testing.T) {
	dir, out := benchRun(t, standin_(t, 0.1), writeCorpus(t, "Hi.", "[laughs] Oh."))
	for _, want := range []string{"streamed\tall\tfirst_audio_s\t6\t", "whole\tall\trtf\t6\t", "streamed\tshort\trtf"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	rep, err := bench.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Requests) != 1+2*3*2 || rep.Corpus.Name == "" || rep.Summary.Invalid != 0 {
		t.Fatalf("report: %d requests, corpus %q, %d invalid", len(rep.Requests), rep.Corpus.Name, rep.Summary.Invalid)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Fatal(err)
	}
}

func TestBenchNoServer(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "DRAMA_HOME", t.TempDir())
	err := cmdtest.Execute(NewCmd(f, nil), "--server", "http://127.0.0.1:1", "--passes", "1", "--out", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "is drama serve running at http://127.0.0.1:1?") {
		t.Fatalf("%v", err)
	}
}

func TestCompareCommand(t *testing.T) {
	a, _ := benchRun(t, standin_(t, 0.2), writeCorpus(t, "Hi."))
	// a's requests all take what its first took, and b is that run twice
	// as slow, both written as drama bench writes a report, so the verdict
	// depends on compare alone, not on how the machine's load spread a's
	// passes.
	rep, err := bench.ReadReport(filepath.Join(a, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	first := rep.Requests[0]
	write := func(dir string, scale float64) {
		for i := range rep.Requests {
			r := &rep.Requests[i]
			r.FirstAudio, r.Total, r.RTF = first.FirstAudio*scale, first.Total*scale, first.RTF*scale
		}
		rep.Summarize()
		data, err := rep.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(a, 1)
	b := t.TempDir()
	write(b, 2)
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	if err := cmdtest.Execute(NewCmd(f, nil), "compare", filepath.Join(a, "report.json"), filepath.Join(b, "report.json")); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, line := range strings.Split(out.String(), "\n") {
		c := strings.Split(line, "\t")
		if len(c) == 7 && c[0] == "whole" && c[1] == "all" && c[2] == "rtf p50" {
			found = true
			ratio, _ := strconv.ParseFloat(strings.TrimSuffix(c[5], "x"), 64)
			if c[6] != "slower" || ratio < 1.99 || ratio > 2.01 {
				t.Errorf("2x slower: %q", line)
			}
		}
	}
	if !found {
		t.Fatalf("no whole rtf p50 row:\n%s", out)
	}
	err = cmdtest.Execute(NewCmd(f, nil), "compare", filepath.Join(a, "report.html"), filepath.Join(b, "report.json"))
	if err == nil || !strings.Contains(err.Error(), "report.html") {
		t.Fatalf("not a report: %v", err)
	}
}

// TestReportInChromium opens the HTML report in headless Chromium with
// the network cut off: the plots must be drawn (their colours are on the
// screenshot, their SVG in the rendered DOM) and the console must stay
// silent (the page has no script, so any line is a failed load or an
// error).
func TestReportInChromium(t *testing.T) {
	chromium := realclient.Chromium(t)
	dir, _ := benchRun(t, standin_(t, 0.05), writeCorpus(t, "Hi.", "Hello there."))
	page := filepath.Join(dir, "report.html")
	profile := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + profile,
		"--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0", "--window-size=1100,2600"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, chromium, append(base, "--dump-dom", "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	for _, id := range []string{bench.PlotFirstAudio, bench.PlotRTF, bench.PlotMemory} {
		i := bytes.Index(dom, []byte(`<figure id="`+id+`">`))
		if i < 0 || !bytes.Contains(dom[i:i+min(len(dom)-i, 4000)], []byte("<svg")) {
			t.Errorf("rendered DOM has no plot %s", id)
		}
	}
	cmd := exec.CommandContext(ctx, chromium, append(base, "--screenshot="+shot, "file://"+page)...)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, logs.String())
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Failed to load") || strings.Contains(line, "net::ERR") {
			t.Errorf("console: %s", line)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The bars and lines are drawn in these colours and nothing else is.
	for name, want := range map[string]color.RGBA{"whole": {0x1f, 0x77, 0xb4, 0xff}, "streamed": {0xff, 0x7f, 0x0e, 0xff}} {
		if n := countNear(img, want); n < 500 {
			t.Errorf("%s colour: %d pixels on the screenshot: the plots were not drawn", name, n)
		}
	}
}

func countNear(img image.Image, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, c.R) && near(g>>8, c.G) && near(bl>>8, c.B) {
				n++
			}
		}
	}
	return n
}

func near(v uint32, w uint8) bool { d := int(v) - int(w); return d > -8 && d < 8 }

// With --transcribe-url the table gives the word error rate over all warm
// whole replies and per text, as report.json does; bench compare sets two
// such reports side by side.
func TestBenchTranscribes(t *testing.T) {
	ts := transcribetest.New()
	defer ts.Close()
	// Nine words, a quarter of them garbled: 2 errors a reply.
	ts.Text = transcribetest.Garble(0.25, transcribetest.Hear(standin.SpokenText))
	url, corpus := standin_(t, 0), writeCorpus(t, "[laughs] One, two, three: it's 1,000 steps to the top!", "Hi.")
	run := func(args ...string) (string, string, error) {
		dir := t.TempDir()
		ios, _, out, errOut := cmdtest.IOStreams()
		f := cmdtest.Factory(ios, "DRAMA_HOME", t.TempDir())
		err := cmdtest.Execute(NewCmd(f, nil), append([]string{"--server", url, "--corpus", corpus, "--warmup", "0", "--passes", "2", "--out", dir}, args...)...)
		return dir, out.String() + errOut.String(), err
	}
	a, out, err := run("--transcribe-url", ts.URL)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"all\t4\t20\t4\t20.00 %\n", "text t01\t2\t18\t4\t22.22 %\n", "text t02\t2\t2\t0\t0.00 %\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep, err := bench.ReadReport(filepath.Join(a, "report.json"))
	if err != nil || rep.Summary.WER == nil || rep.Summary.WER.All.Errors != 4 {
		t.Fatalf("report.json: %v %+v", err, rep.Summary.WER)
	}
	page, _ := os.ReadFile(filepath.Join(a, "report.html"))
	if !bytes.Contains(page, []byte("<b>20.00 %</b>")) {
		t.Error("report.html lacks the word error rate")
	}
	ts.Text = transcribetest.Hear(standin.SpokenText)
	b, _, err := run("--transcribe-url", ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	ios, _, cmp, _ := cmdtest.IOStreams()
	if err := cmdtest.Execute(NewCmd(cmdtest.Factory(ios), nil), "compare", filepath.Join(a, "report.json"), filepath.Join(b, "report.json")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"whole\tall\twer\t20.00 %\t0.00 %\t0.00x\tbetter\n", "whole\ttext t01\twer\t22.22 %\t0.00 %\t0.00x\tbetter\n"} {
		if !strings.Contains(cmp.String(), want) {
			t.Errorf("compare lacks %q:\n%s", want, cmp)
		}
	}
	if strings.Contains(cmp.String(), "text t02") {
		t.Errorf("an unchanged text compared:\n%s", cmp)
	}
	// Without a transcriber: no table of it.
	if _, out, err := run(); err != nil || strings.Contains(out, "wer") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, _, err := run("--transcribe-url", "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "transcribing t01") ||
		!strings.Contains(err.Error(), "is the transcription server running there?") || strings.Contains(err.Error(), "is drama serve running") {
		t.Fatalf("no transcription server: %v", err)
	}
	if _, _, err := run("--transcribe-url", "127.0.0.1:8080"); err == nil || !strings.Contains(err.Error(), "--transcribe-url") {
		t.Fatalf("a URL without a scheme: %v", err)
	}
}
