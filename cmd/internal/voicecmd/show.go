package voicecmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/voices"
)

// ShowOptions are the inputs of `drama voice show`.
type ShowOptions struct {
	F         *cmdutil.Factory
	File      string
	Tokenizer string
}

// NewCmdShow returns `drama voice show`.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{F: f}
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Show a voice file's id, format, references and sha256",
		Long: strings.TrimSpace(`
Show a voice file: its format, id, name, source and consent where the format
has them, the file's sha256 and size, and each reference with its frames,
seconds, codes_sha256 and transcript. An invalid file is shown as far as it
could be read, its problems listed on standard error, and the exit status is 3.`),
		Example: strings.TrimSpace(`
$ drama voice show anna.json
$ drama voice show anna.json --json`),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runShow(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Tokenizer, "tokenizer", "", "tokenizer.json whose added tokens transcripts must not contain")
	return cmd
}

// showResult is the --json output of `drama voice show`.
type showResult struct {
	*fileReport
	Source     string         `json:"source,omitempty"`
	Note       string         `json:"note,omitempty"`
	Created    string         `json:"created,omitempty"`
	Consent    *consentReport `json:"consent,omitempty"`
	RefDetails []refReport    `json:"reference_list"`
}

type consentReport struct {
	Who       string `json:"who"`
	When      string `json:"when"`
	Statement string `json:"statement"`
}

type refReport struct {
	Index       int     `json:"index"`
	Text        string  `json:"text"`
	Frames      int     `json:"frames"`
	Seconds     float64 `json:"seconds"`
	Samples     int     `json:"samples,omitempty"`
	CodesSHA256 string  `json:"codes_sha256"`
}

func runShow(_ context.Context, opts *ShowOptions) error {
	f := opts.F
	vopts, err := loadOptions(opts.Tokenizer)
	if err != nil {
		return err
	}
	res := newShowResult(inspect(opts.File, vopts))
	if res.voice == nil {
		printProblems(f, res.fileReport)
		return cmdutil.MismatchError(fmt.Errorf("%s: not a readable voice file", opts.File))
	}
	if f.Global.JSON {
		err = cmdutil.WriteJSON(f.IO.Out, res)
	} else {
		err = printShow(f, res)
	}
	if err != nil {
		return err
	}
	if !res.Valid {
		printProblems(f, res.fileReport)
		return cmdutil.MismatchError(fmt.Errorf("%s: %s", opts.File, plural(len(res.Problems), "%d problem", "%d problems")))
	}
	return nil
}

func newShowResult(r *fileReport) *showResult {
	res := &showResult{fileReport: r, RefDetails: []refReport{}}
	v := r.voice
	if v == nil {
		return res
	}
	res.Source, res.Note = string(v.Source), v.Note
	if !v.Created.IsZero() {
		res.Created = v.Created.Format(time.RFC3339Nano)
	}
	if c := v.Consent; c != nil {
		res.Consent = &consentReport{Who: c.Who, When: c.When.Format(time.RFC3339Nano), Statement: c.Statement}
	}
	for i, ref := range v.References {
		res.RefDetails = append(res.RefDetails, refReport{Index: i, Text: ref.Text, Frames: ref.Codes.Frames(),
			Seconds: seconds(ref.Codes.Frames()), Samples: ref.Samples, CodesSHA256: codesSHA(ref.Codes)})
	}
	return res
}

// codesSHA hashes codes that have the right shape; others show as "-".
func codesSHA(c voices.Codes) string {
	if len(c) != voices.NumCodebooks {
		return "-"
	}
	return c.SHA256()
}

func printShow(f *cmdutil.Factory, res *showResult) error {
	w := f.IO.Out
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%-11s%s\n", k+":", safetext.Escape(v)) // a voice file's text is outside text
		}
	}
	kv("file", res.File)
	kv("format", res.Format)
	kv("id", res.ID)
	kv("name", res.Name)
	kv("source", res.Source)
	kv("note", res.Note)
	kv("created", res.Created)
	if c := res.Consent; c != nil {
		kv("consent", c.Who+", "+c.When)
	}
	kv("sha256", res.SHA256)
	kv("size", fmt.Sprintf("%d bytes (canonical: %s)", res.Size, yesNo(res.Canonical)))
	kv("total", fmt.Sprintf("%d references, %d frames, %.2f s", res.References, res.Frames, res.Seconds))
	fmt.Fprintln(w)
	return printRefs(f, res.RefDetails)
}

func printRefs(f *cmdutil.Factory, refs []refReport) error {
	t := cmdutil.NewTable(f.IO, "ref", "frames", "seconds", "codes_sha256", "text")
	for _, r := range refs {
		t.AddRow(strconv.Itoa(r.Index), strconv.Itoa(r.Frames), fmt.Sprintf("%.2f", r.Seconds), r.CodesSHA256, shorten(r.Text, f.IO.IsStdoutTTY()))
	}
	return t.Render()
}

// shorten shortens a transcript to 60 characters on a terminal.
func shorten(s string, tty bool) string {
	if r := []rune(s); tty && len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}
