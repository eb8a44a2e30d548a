package tokenizecmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine/prompt"
	"github.com/drama-tts/drama/engine/prompt/prompttest"
	"github.com/drama-tts/drama/voices"
)

func TestNewCmdFlags(t *testing.T) {
	is := func(w Options) func(*Options) bool {
		return func(got *Options) bool {
			return slices.Equal(got.Texts, w.Texts) && got.Count == w.Count && got.Tokenizer == w.Tokenizer && got.Prompt == w.Prompt &&
				got.Voice == w.Voice && got.Config == w.Config && got.MaxTokens == w.MaxTokens
		}
	}
	args := strings.Fields
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{
		{Args: args("hello"), Check: is(Options{Texts: []string{"hello"}})},
		{Args: args("a b - --count --tokenizer t.json"), Check: is(Options{Texts: []string{"a", "b", "-"}, Count: true, Tokenizer: "t.json"})},
		{Args: args("--prompt --voice v.json --config c.json --max-tokens 9 x"), Check: is(Options{Texts: []string{"x"}, Prompt: true, Voice: "v.json", Config: "c.json", MaxTokens: 9})},
		{Args: args(""), WantErr: "requires at least 1 arg"},
		{Args: args("- -"), WantErr: `"-" (standard input) may be given once`},
		{Args: args("--voice v.json x"), WantErr: "need --prompt"},
		{Args: args("--prompt --max-tokens -1 x"), WantErr: "--max-tokens must be"},
		{Args: args("--bogus x"), WantErr: "unknown flag"},
	})
}

var (
	dirOnce sync.Once
	dir     string
	dirErr  error
)

// install writes a Drama tokenizer.json and a config.json into a shared
// root, as <root>/full/, once for the package.
func install(t *testing.T) string {
	t.Helper()
	dirOnce.Do(func() {
		dir, dirErr = os.MkdirTemp("", "tokenizecmd")
		if dirErr != nil {
			return
		}
		v := filepath.Join(dir, "full")
		if dirErr = os.MkdirAll(v, 0o755); dirErr != nil {
			return
		}
		if _, dirErr = prompttest.WriteDrama(v); dirErr != nil {
			return
		}
		dirErr = os.WriteFile(filepath.Join(v, "config.json"), []byte(`{"max_seq_len": 2148}`), 0o644)
	})
	if dirErr != nil {
		t.Fatal(dirErr)
	}
	return dir
}

func TestMain(m *testing.M) {
	// Load each tokenizer.json once: an 11 MB file takes seconds under -race.
	var mu sync.Mutex
	loaded := map[string]*prompt.Tokenizer{}
	openFile = func(name string) (*prompt.Tokenizer, error) {
		mu.Lock()
		defer mu.Unlock()
		if tok, ok := loaded[name]; ok {
			return tok, nil
		}
		tok, err := prompt.Open(name)
		if err == nil {
			loaded[name] = tok
		}
		return tok, err
	}
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func newOpts(t *testing.T, texts ...string) (*Options, *cmdutil.IOStreams) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = install(t)
	return &Options{F: f, Texts: texts}, ios
}

func TestRunTable(t *testing.T) {
	opts, ios := newOpts(t, "Hello world", "-")
	ios.In.(interface{ WriteString(string) (int, error) }).WriteString("<|im_start|>é")
	if err := run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	want := "1\t9707\tHello\t\"Hello\"\n" +
		"1\t1879\tĠworld\t\" world\"\n" +
		"2\t151644\t<|im_start|>\t\"<|im_start|>\"\n" +
		"2\t963\tÃ©\t\"é\"\n"
	if got := ios.Out.(interface{ String() string }).String(); got != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
	}
}

func TestRunJSONAndCount(t *testing.T) {
	opts, ios := newOpts(t, "Hi there", "")
	opts.F.Global.JSON = true
	if err := run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		IDs    []int    `json:"ids"`
		Tokens []string `json:"tokens"`
		Count  int      `json:"count"`
	}
	out := ios.Out.(interface{ String() string }).String()
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(got) != 2 || !slices.Equal(got[0].IDs, []int{13048, 1052}) || !slices.Equal(got[0].Tokens, []string{"Hi", "Ġthere"}) ||
		got[0].Count != 2 || got[1].IDs == nil || got[1].Count != 0 {
		t.Errorf("JSON = %s", out)
	}

	opts, ios = newOpts(t, "Hi there")
	opts.Count = true
	if err := run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if got := ios.Out.(interface{ String() string }).String(); got != "1\t2\n" {
		t.Errorf("--count: %q", got)
	}
}

func writeVoice(t *testing.T, frames int) string {
	t.Helper()
	codes := make(voices.Codes, voices.NumCodebooks)
	for c := range codes {
		codes[c] = make([]int, frames)
		for i := range codes[c] {
			codes[c][i] = (i * 7) % 1024
		}
	}
	v := &voices.Voice{Format: voices.FormatCUDA, ID: "anna", Name: "Anna",
		References: []voices.Reference{{Text: "This is my voice.", Codes: codes}}}
	name := filepath.Join(t.TempDir(), "anna.json")
	data, err := voices.Marshal(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, v.FileMode()); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestRunPrompt(t *testing.T) {
	opts, ios := newOpts(t, "Read this aloud.")
	opts.Prompt, opts.Count, opts.Voice = true, true, writeVoice(t, 10)
	if err := run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(interface{ String() string }).String()
	fields := strings.Fields(out)
	if len(fields) != 2 || fields[0] != "1" {
		t.Fatalf("stdout %q", out)
	}
	// 10 reference frames, each a semantic token, plus the text around them.
	if n, err := strconv.Atoi(fields[1]); err != nil || n < 40 || n > 100 {
		t.Errorf("prompt count %s, want 40 to 100", fields[1])
	}

	// config.json says 2148 positions: 2148-2048 = 100 tokens at most.
	opts, _ = newOpts(t, "Read this aloud.")
	opts.Prompt, opts.Voice = true, writeVoice(t, 60)
	err := run(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "text 1: prompt: prompt too long: want at most 100 tokens") {
		t.Fatalf("err = %v", err)
	}
	if cmdutil.ExitCode(err) != cmdutil.ExitFailure {
		t.Errorf("exit code %d", cmdutil.ExitCode(err))
	}

	opts, _ = newOpts(t, "Say <|im_end|> now")
	opts.Prompt, opts.MaxTokens = true, 100000
	if err := run(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "structural token") {
		t.Fatalf("structural token: err = %v", err)
	}
}

func TestRunErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(bad, []byte(`{"model": {"type": "Unigram"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, _ := newOpts(t, "x")
	opts.Tokenizer = bad
	err := run(context.Background(), opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(err.Error(), "model.type") {
		t.Errorf("bad tokenizer: %v (exit %d)", err, cmdutil.ExitCode(err))
	}

	opts, _ = newOpts(t, "x")
	opts.F.Global.Variant = "nvfp4"
	err = run(context.Background(), opts)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nvfp4 is not installed in "+opts.F.Global.Root+": run drama fetch --variant nvfp4 --root "+opts.F.Global.Root+" (or give --tokenizer FILE)") {
		t.Errorf("missing install: %v", err)
	}
}
