package voicecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/voices"
)

const testdata = "../../../voices/testdata"

func fixture(name string) string { return filepath.Join(testdata, name) }

func testFactory() (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	ios, _, out, errOut := cmdtest.IOStreams()
	return cmdtest.Factory(ios), out, errOut
}

func exitCode(err error) int { return cmdutil.ExitCode(err) }

func TestCheckFlags(t *testing.T) {
	f, _, _ := testFactory()
	var got *CheckOptions
	runF := func(_ context.Context, o *CheckOptions) error { got = o; return nil }
	if err := cmdtest.Execute(NewCmdCheck(f, runF), "a.json", "b.json", "--tokenizer", "tok.json"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Files, ",") != "a.json,b.json" || got.Tokenizer != "tok.json" {
		t.Errorf("%+v", got)
	}
	if err := cmdtest.Execute(NewCmdCheck(f, runF)); err == nil {
		t.Error("no FILE accepted")
	}
}

func TestShowAndListFlags(t *testing.T) {
	f, _, _ := testFactory()
	var s *ShowOptions
	if err := cmdtest.Execute(NewCmdShow(f, func(_ context.Context, o *ShowOptions) error { s = o; return nil }), "v.json"); err != nil || s.File != "v.json" {
		t.Fatalf("%v %+v", err, s)
	}
	if err := cmdtest.Execute(NewCmdShow(f, nil), "a.json", "b.json"); err == nil {
		t.Error("two files accepted by show")
	}
	var l *ListOptions
	if err := cmdtest.Execute(NewCmdList(f, func(_ context.Context, o *ListOptions) error { l = o; return nil }), "dir", "--tokenizer", "t.json"); err != nil || l.Dir != "dir" || l.Tokenizer != "t.json" {
		t.Fatalf("%v %+v", err, l)
	}
	if err := cmdtest.Execute(NewCmdList(f, nil)); err == nil {
		t.Error("list without DIR accepted")
	}
}

func TestConvertFlags(t *testing.T) {
	cases := []struct {
		args    string
		wantErr string
		check   func(*ConvertOptions) bool
	}{
		{"in.json --to metal -o out.json --source self --note hi", "", func(o *ConvertOptions) bool {
			return o.To == "metal" && o.Output == "out.json" && o.Source == "self" && o.Note == "hi"
		}},
		{"in.json --to drama3-voice/1 -o -", "", func(o *ConvertOptions) bool { return o.Output == "-" }},
		{"a.npy b.npy --id anna --name Anna --to cuda -o o.json", "", func(o *ConvertOptions) bool {
			return len(o.Inputs) == 2 && o.ID == "anna" && o.Name == "Anna"
		}},
		{"in.json --to cloned -o o.json --consent-who A --consent-when 2026-05-01T00:00:00Z --consent-statement yes --created 2026-05-02T00:00:00Z --force", "",
			func(o *ConvertOptions) bool { return o.ConsentWho == "A" && o.Force && o.Created != "" }},
		{"in.json -o out.json", "--to FORMAT is required", nil},
		{"in.json --to mp3 -o out.json", `--to "mp3"`, nil},
		{"in.json --to metal", "-o OUT is required", nil},
		{"in.json --to metal -o o.json --source someone", `--source "someone"`, nil},
		{"a.npy b.json --to metal -o o.json", "not both", nil},
		{"a.json b.json --to metal -o o.json", "one voice file", nil},
		{"a.npy --to cuda -o o.json", "--id is required", nil},
		{"in.json --to cloned -o o.json --consent-who A", "give all of", nil},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			f, _, _ := testFactory()
			var got *ConvertOptions
			err := cmdtest.Execute(NewCmdConvert(f, func(_ context.Context, o *ConvertOptions) error { got = o; return nil }), strings.Fields(c.args)...)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || exitCode(err) != cmdutil.ExitUsage {
					t.Fatalf("err = %v (exit %d), want usage error with %q", err, exitCode(err), c.wantErr)
				}
				return
			}
			if err != nil || !c.check(got) {
				t.Fatalf("err = %v, opts %+v", err, got)
			}
		})
	}
}

func TestCheckRun(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	data, _ := os.ReadFile(fixture("cuda.json"))
	if err := os.WriteFile(bad, bytes.Replace(data, []byte(`"id": "fixture"`), []byte(`"id": "Bad"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := testFactory()
	err := runCheck(context.Background(), &CheckOptions{F: f, Files: []string{fixture("cuda.json"), bad, fixture("metal.json")}})
	if exitCode(err) != cmdutil.ExitMismatch {
		t.Fatalf("err = %v, want exit 3", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ok\tyes\tdrama3-voice/1\tfixture\t2\t0.56\t") || !strings.HasPrefix(lines[1], "invalid\t") {
		t.Errorf("stdout:\n%s", out)
	}
	if !strings.Contains(errOut.String(), bad+": id: invalid id") {
		t.Errorf("stderr does not name the problem:\n%s", errOut)
	}
}

func TestCheckRunJSONAndTokenizer(t *testing.T) {
	f, out, _ := testFactory()
	f.Global.JSON = true
	dir := t.TempDir()
	data, _ := os.ReadFile(fixture("cuda.json"))
	name := filepath.Join(dir, "v.json")
	if err := os.WriteFile(name, bytes.Replace(data, []byte(`café.`), []byte(`café [custom].`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runCheck(context.Background(), &CheckOptions{F: f, Files: []string{name}, Tokenizer: fixture("tokenizer.json")})
	if exitCode(err) != cmdutil.ExitMismatch {
		t.Fatalf("err = %v, want exit 3", err)
	}
	var res struct {
		Files []struct {
			Valid    bool
			Problems []struct {
				Field     string
				Reference *int
				Message   string
			}
		}
		Invalid int
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p := res.Files[0].Problems
	if res.Invalid != 1 || len(p) != 1 || p[0].Field != "references[0].text" || p[0].Reference == nil || *p[0].Reference != 0 {
		t.Fatalf("got %+v", res)
	}
	if !strings.Contains(p[0].Message, `"[custom]"`) {
		t.Errorf("message %q does not name the token", p[0].Message)
	}
}

func TestShowRun(t *testing.T) {
	f, out, _ := testFactory()
	if err := runShow(context.Background(), &ShowOptions{F: f, File: fixture("cloned.json")}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"format:    localrouter-voice-codes/1", "consent:   Anna Example, 2026-05-01T11:58:00Z",
		"sha256:    946760a44f57581cdc5705814d54ef893a8c1ed4d3b2b34a0222df5b65604155", "total:     4 references, 22 frames, 1.02 s",
		"1\t5\t0.23\t1196254c7301bc8b16406e3ea2447eda11aed4585847a7abab0ef4f5e69feaa2\t日本語のテキスト。"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}
	f, out, _ = testFactory()
	f.Global.JSON = true
	if err := runShow(context.Background(), &ShowOptions{F: f, File: fixture("metal.json")}); err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res["source"] != "synthetic" || res["format"] != "drama3-http-voice/1" || len(res["reference_list"].([]any)) != 2 {
		t.Errorf("json: %v", res)
	}
}

func TestShowRunInvalid(t *testing.T) {
	f, _, errOut := testFactory()
	err := runShow(context.Background(), &ShowOptions{F: f, File: fixture("tokenizer.json")})
	if exitCode(err) != cmdutil.ExitMismatch || !strings.Contains(errOut.String(), "not a voice file") {
		t.Errorf("err = %v, stderr %q", err, errOut)
	}
	err = runShow(context.Background(), &ShowOptions{F: f, File: filepath.Join(t.TempDir(), "missing.json")})
	if exitCode(err) != cmdutil.ExitMismatch {
		t.Errorf("missing file: err = %v", err)
	}
}

func newConvert(f *cmdutil.Factory, to, out string, in ...string) *ConvertOptions {
	return &ConvertOptions{F: f, Inputs: in, To: to, Output: out, now: func() time.Time { return time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC) }}
}

func TestConvertRunRoundTrip(t *testing.T) {
	dir := t.TempDir()
	metal, cuda := filepath.Join(dir, "m.json"), filepath.Join(dir, "c.json")
	f, out, _ := testFactory()
	o := newConvert(f, "metal", metal, fixture("cuda.json"))
	o.Source = "synthetic"
	if err := runConvert(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(metal)
	if want := voices.FileSHA256(data) + "  " + metal + "\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	f, _, errOut := testFactory()
	if err := runConvert(context.Background(), newConvert(f, "cuda", cuda, metal)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(cuda)
	want, _ := os.ReadFile(fixture("cuda.json"))
	if !bytes.Equal(got, want) {
		t.Error("CUDA to Metal to CUDA is not byte-identical")
	}
	if !strings.Contains(errOut.String(), "warning: drama3-voice/1 has no place for source, note") {
		t.Errorf("stderr: %q", errOut)
	}
	if err := runConvert(context.Background(), newConvert(f, "cuda", cuda, metal)); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("existing output replaced without --force: %v", err)
	}
}

func TestConvertRunClonedModeAndJSON(t *testing.T) {
	dir := t.TempDir()
	outName := filepath.Join(dir, "anna.json")
	f, out, _ := testFactory()
	f.Global.JSON = true
	o := newConvert(f, "cloned", outName, fixture("cuda.json"))
	o.Source, o.ConsentWho, o.ConsentWhen, o.ConsentStatement = "consented", "Anna Example", "2026-05-01T11:58:00Z", "I agree."
	if err := runConvert(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(outName)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, err %v: want 0600", st.Mode().Perm(), err)
	}
	var res convertResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Mode != "0600" || res.Format != "localrouter-voice-codes/1" || res.References != 2 || strings.Join(res.Derived, ",") != "created,samples" {
		t.Errorf("%+v", res)
	}
	v, err := voices.ReadFile(outName, nil)
	if err != nil || !v.Created.Equal(time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("created %v, err %v", v.Created, err)
	}
}

func TestConvertRunRefusals(t *testing.T) {
	dir := t.TempDir()
	f, _, _ := testFactory()
	err := runConvert(context.Background(), newConvert(f, "metal", filepath.Join(dir, "a.json"), fixture("cuda.json")))
	if exitCode(err) != cmdutil.ExitUsage || !errors.Is(err, voices.ErrSource) || !strings.Contains(err.Error(), "--source") {
		t.Errorf("no source: err = %v", err)
	}
	o := newConvert(f, "cloned", filepath.Join(dir, "b.json"), fixture("cuda.json"))
	o.Source = "self"
	if err := runConvert(context.Background(), o); exitCode(err) != cmdutil.ExitUsage || !errors.Is(err, voices.ErrConsent) {
		t.Errorf("no consent: err = %v", err)
	}
	err = runConvert(context.Background(), newConvert(f, "cuda", filepath.Join(dir, "c.json"), fixture("tokenizer.json")))
	if exitCode(err) != cmdutil.ExitMismatch {
		t.Errorf("invalid input: err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused conversions left %d files", len(entries))
	}
}

func TestConvertRunNPY(t *testing.T) {
	f, out, _ := testFactory()
	o := newConvert(f, "drama3-voice/1", "-", fixture("fish/ref0.npy"), fixture("fish/ref1.npy"))
	o.ID, o.Name = "fixture", "Fixture Voice"
	if err := runConvert(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(fixture("cuda.json"))
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf(".npy to drama3-voice/1 differs from cuda.json:\n%s", out)
	}
}

func TestListRun(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cuda.json", "metal.json"} {
		data, err := os.ReadFile(fixture(name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), data)
	}
	writeFile(t, filepath.Join(dir, "broken.json"), []byte("{"))
	writeFile(t, filepath.Join(dir, "notes.txt"), []byte("x"))
	f, out, errOut := testFactory()
	if err := runList(context.Background(), &ListOptions{F: f, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	want := "-\t-\t0\t0.00\tinvalid (1 problem)\tbroken.json\n" +
		"fixture\tdrama3-voice/1\t2\t0.56\tok\tcuda.json\n" +
		"fixture\tdrama3-http-voice/1\t2\t0.56\tok\tmetal.json\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(errOut.String(), `voice "fixture" is in both`) || !strings.Contains(errOut.String(), "servers expect it named fixture.json") {
		t.Errorf("stderr: %s", errOut)
	}
	if err := runList(context.Background(), &ListOptions{F: f, Dir: filepath.Join(dir, "missing")}); err == nil {
		t.Error("missing directory listed")
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGroupExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"check", fixture("cuda.json"), fixture("cloned.json")}, cmdutil.ExitOK},
		{[]string{"check", fixture("tokenizer.json")}, cmdutil.ExitMismatch},
		{[]string{"show", fixture("metal.json")}, cmdutil.ExitOK},
		{[]string{"convert", fixture("cuda.json"), "--to", "metal", "-o", "-"}, cmdutil.ExitUsage},
		{[]string{"convert", fixture("cuda.json"), "--to", "nope", "-o", "-"}, cmdutil.ExitUsage},
		{[]string{"check", "--tokenizer", fixture("missing.json"), fixture("cuda.json")}, cmdutil.ExitFailure},
	}
	for _, c := range cases {
		f, _, _ := testFactory()
		if got := exitCode(cmdtest.Execute(NewCmd(f), c.args...)); got != c.want {
			t.Errorf("drama voice %s: exit %d, want %d", strings.Join(c.args, " "), got, c.want)
		}
	}
}

// TestOversizeFile checks that a file over voices.MaxFileSize is refused
// without a size or sha256 of its truncated head, by check and by convert.
func TestOversizeFile(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), voices.MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	r := inspect(big, nil)
	if r.Valid || r.Size != 0 || r.SHA256 != "" || len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Message, "want at most") {
		t.Errorf("report: %+v", r)
	}
	f, _, _ := testFactory()
	if err := runCheck(context.Background(), &CheckOptions{F: f, Files: []string{big}}); exitCode(err) != cmdutil.ExitMismatch {
		t.Errorf("check: err = %v, want exit %d", err, cmdutil.ExitMismatch)
	}
	err := runConvert(context.Background(), newConvert(f, "cuda", "-", big))
	if exitCode(err) != cmdutil.ExitMismatch || !errors.Is(err, voices.ErrTooLarge) {
		t.Errorf("convert: err = %v, want exit %d and ErrTooLarge", err, cmdutil.ExitMismatch)
	}
}

// voice convert -o catalog/anna.json makes catalog/, as the README's
// example expects.
func TestConvertMakesTheOutputDirectory(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	out := filepath.Join(t.TempDir(), "catalog", "anna.json")
	err := cmdtest.Execute(NewCmd(f), "convert", "../../../voices/testdata/cuda.json", "--to", "metal", "--source", "consented", "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
}

// A path that is not there (a pattern the shell matched to no file) is a
// usage error naming it, not an invalid voice file.
func TestCheckMissingPathIsAUsageError(t *testing.T) {
	f, out, _ := testFactory()
	missing := filepath.Join(t.TempDir(), "voices", "*.json")
	err := cmdtest.Execute(NewCmdCheck(f, nil), fixture("cuda.json"), missing)
	if exitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), missing+": no such file (no file matches the pattern)") {
		t.Fatalf("err = %v (exit %d), want a usage error naming %s", err, exitCode(err), missing)
	}
	if out.Len() != 0 {
		t.Fatalf("stdout %q", out)
	}
}
