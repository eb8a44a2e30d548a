// Package tokenizecmd implements `drama tokenize`.
package tokenizecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/prompt"
	"github.com/drama-tts/drama/voices"
)

// maxStdin bounds the text read from standard input.
const maxStdin = 64 << 20

// openFile reads a tokenizer.json; tests replace it to load each file once.
var openFile = prompt.Open

// Options are the inputs of `drama tokenize`.
type Options struct {
	F         *cmdutil.Factory
	Texts     []string
	Tokenizer string // --tokenizer
	Count     bool   // --count
	Prompt    bool   // --prompt
	Voice     string // --voice
	Config    string // --config
	MaxTokens int    // --max-tokens
}

// NewCmd returns `drama tokenize`. runF, if not nil, replaces the run (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "tokenize [flags] TEXT...",
		Short: "Show the token ids of texts, or count a whole prompt against the model's limit",
		Long: strings.TrimSpace(`
Encode each TEXT with the checkpoint's tokenizer.json, exactly as Hugging
Face's tokenizers do, and print one row per token: the text's number, the
token id, the token as the vocabulary writes it (byte-level: a space is "Ġ")
and the text it stands for. A TEXT of "-" is read from standard input.

Added tokens such as <|im_start|> inside a text are single tokens.

--prompt builds the whole Drama 3 prompt for each TEXT instead (system text,
the references of --voice, the text, the voice marker) and refuses one longer
than the model takes: the context length in the checkpoint's config.json less
2048 tokens for the reply, or --max-tokens. The text and the transcripts may
not hold the prompt's structural tokens.

--json prints one array with {"ids": [...], "tokens": [...], "count": N} for
each text; --count prints only the counts.`),
		Example: strings.TrimSpace(`
$ drama tokenize "[laughs] Hello there!"
$ drama tokenize --tokenizer ./tokenizer.json --json "Hi" "<|im_start|>user"
$ drama tokenize --count - < chapter.txt
$ drama tokenize --prompt --voice voices/anna.json --count "Read this aloud."`),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Texts = args
			if err := validate(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Tokenizer, "tokenizer", "", "tokenizer.json (default <root>/<variant>/tokenizer.json)")
	fl.BoolVar(&opts.Count, "count", false, "print only the number of tokens of each text")
	fl.BoolVar(&opts.Prompt, "prompt", false, "tokenize the whole Drama 3 prompt for each text and check its length")
	fl.StringVar(&opts.Voice, "voice", "", "with --prompt: a voice file whose references the prompt carries")
	fl.StringVar(&opts.Config, "config", "", "with --prompt: the checkpoint's config.json (default: beside the tokenizer)")
	fl.IntVar(&opts.MaxTokens, "max-tokens", 0, "with --prompt: the most tokens a prompt may have (default: from config.json)")
	return cmd
}

func validate(opts *Options) error {
	stdin := 0
	for _, t := range opts.Texts {
		if t == "-" {
			stdin++
		}
	}
	switch {
	case stdin > 1:
		return cmdutil.FlagErrorf(`"-" (standard input) may be given once`)
	case opts.MaxTokens < 0:
		return cmdutil.FlagErrorf("--max-tokens must be 0 (from config.json) or more")
	case !opts.Prompt && (opts.Voice != "" || opts.Config != "" || opts.MaxTokens != 0):
		return cmdutil.FlagErrorf("--voice, --config and --max-tokens need --prompt")
	}
	return nil
}

// result is one text's encoding.
type result struct {
	IDs    []int
	Tokens []string
}

func run(ctx context.Context, opts *Options) error {
	tok, err := openTokenizer(opts)
	if err != nil {
		return err
	}
	texts, err := readTexts(opts)
	if err != nil {
		return err
	}
	encode := func(text string) ([]int, error) { return tok.Encode(text) }
	if opts.Prompt {
		if encode, err = promptEncoder(opts, tok); err != nil {
			return err
		}
	}
	results := make([]result, len(texts))
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return err
		}
		ids, err := encode(text)
		if err != nil {
			return fmt.Errorf("text %d: %w", i+1, err)
		}
		toks, err := tok.Tokens(ids)
		if err != nil {
			return err
		}
		results[i] = result{IDs: ids, Tokens: toks}
	}
	return render(opts, tok, results)
}

// tokenizerPath returns --tokenizer, else <root>/<variant>/tokenizer.json.
func tokenizerPath(opts *Options) (string, error) {
	if opts.Tokenizer != "" {
		return opts.Tokenizer, nil
	}
	root, err := opts.F.Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, opts.F.Global.Variant, "tokenizer.json"), nil
}

func openTokenizer(opts *Options) (*prompt.Tokenizer, error) {
	if opts.Tokenizer == "" {
		if err := cmdutil.RequireInstalled(opts.F, opts.F.Global.Variant); err != nil {
			return nil, fmt.Errorf("%w (or give --tokenizer FILE)", err)
		}
	}
	name, err := tokenizerPath(opts)
	if err != nil {
		return nil, err
	}
	tok, err := openFile(name)
	var fe *prompt.FormatError
	switch {
	case errors.As(err, &fe):
		return nil, cmdutil.MismatchError(err)
	case errors.Is(err, os.ErrNotExist) && opts.Tokenizer == "":
		return nil, fmt.Errorf("%w: the %s variant has no tokenizer.json: run %s, or give --tokenizer FILE", err, opts.F.Global.Variant,
			opts.F.Suggest("fetch", "--variant", opts.F.Global.Variant))
	}
	return tok, err
}

// readTexts returns the texts, with "-" replaced by standard input.
func readTexts(opts *Options) ([]string, error) {
	out := make([]string, len(opts.Texts))
	for i, t := range opts.Texts {
		if t != "-" {
			out[i] = t
			continue
		}
		b, err := io.ReadAll(io.LimitReader(opts.F.IO.In, maxStdin+1))
		if err != nil {
			return nil, fmt.Errorf("read standard input: %w", err)
		}
		if len(b) > maxStdin {
			return nil, fmt.Errorf("standard input: want at most %d bytes, got more", maxStdin)
		}
		out[i] = string(b)
	}
	return out, nil
}

// promptEncoder returns a function that builds the prompt of a text.
func promptEncoder(opts *Options, tok *prompt.Tokenizer) (func(string) ([]int, error), error) {
	lim, err := limits(opts)
	if err != nil {
		return nil, err
	}
	b, err := prompt.NewBuilder(tok, lim)
	if err != nil {
		return nil, cmdutil.MismatchError(err)
	}
	var refs []voices.Reference
	if opts.Voice != "" {
		v, err := voices.ReadFile(opts.Voice, &voices.Options{SpecialTokens: voices.TranscriptSpecials(tok.SpecialTokens())})
		if err != nil {
			return nil, cmdutil.MismatchError(err)
		}
		refs = v.References
	}
	return func(text string) ([]int, error) {
		p, err := b.Build(text, refs)
		if err != nil {
			return nil, err
		}
		return p.IDs, nil
	}, nil
}

// limits reads the prompt limits: --max-tokens, else config.json.
func limits(opts *Options) (prompt.Limits, error) {
	if opts.MaxTokens > 0 {
		return prompt.Limits{Max: opts.MaxTokens}, nil
	}
	name := opts.Config
	if name == "" {
		tp, err := tokenizerPath(opts)
		if err != nil {
			return prompt.Limits{}, err
		}
		name = filepath.Join(filepath.Dir(tp), "config.json")
	}
	lim, err := prompt.ReadLimits(name)
	var fe *prompt.FormatError
	switch {
	case errors.As(err, &fe):
		return lim, cmdutil.MismatchError(err)
	case errors.Is(err, os.ErrNotExist) && opts.Config == "":
		opts.F.Warnf("no %s: the prompt length is not checked (give --config or --max-tokens)", name)
		return prompt.Limits{}, nil
	}
	return lim, err
}

type jsonResult struct {
	IDs    []int    `json:"ids"`
	Tokens []string `json:"tokens"`
	Count  int      `json:"count"`
}

type jsonCount struct {
	Count int `json:"count"`
}

func render(opts *Options, tok *prompt.Tokenizer, results []result) error {
	f := opts.F
	if f.Global.JSON {
		out := make([]any, len(results))
		for i, r := range results {
			if opts.Count {
				out[i] = jsonCount{Count: len(r.IDs)}
			} else {
				out[i] = jsonResult{IDs: r.IDs, Tokens: r.Tokens, Count: len(r.IDs)}
			}
		}
		return cmdutil.WriteJSON(f.IO.Out, out)
	}
	if opts.Count {
		t := cmdutil.NewTable(f.IO, "text", "tokens")
		for i, r := range results {
			t.AddRow(strconv.Itoa(i+1), strconv.Itoa(len(r.IDs)))
		}
		return t.Render()
	}
	t := cmdutil.NewTable(f.IO, "text", "id", "token", "bytes")
	for i, r := range results {
		for j, id := range r.IDs {
			b, _ := tok.TokenBytes(id)
			t.AddRow(strconv.Itoa(i+1), strconv.Itoa(id), r.Tokens[j], strconv.Quote(string(b)))
		}
	}
	return t.Render()
}
