package voicecmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/voices"
)

// ConvertOptions are the inputs of `drama voice convert`.
type ConvertOptions struct {
	F          *cmdutil.Factory
	Inputs     []string
	To         string
	Output     string
	Source     string
	Note       string
	ID, Name   string
	ConsentWho string
	// ConsentWhen and Created are RFC 3339 times; Created defaults to now.
	ConsentWhen      string
	ConsentStatement string
	Created          string
	Tokenizer        string
	Force            bool

	now func() time.Time
}

// formatAliases are the short names --to accepts besides the format names.
var formatAliases = map[string]voices.Format{
	"cuda": voices.FormatCUDA, "metal": voices.FormatMetal, "cloned": voices.FormatCloned,
}

// NewCmdConvert returns `drama voice convert`.
func NewCmdConvert(f *cmdutil.Factory, runF func(context.Context, *ConvertOptions) error) *cobra.Command {
	opts := &ConvertOptions{F: f, now: time.Now}
	cmd := &cobra.Command{
		Use:   "convert IN... --to FORMAT -o OUT",
		Short: "Convert a voice between formats without re-encoding",
		Long: strings.TrimSpace(`
Convert a voice file to another format: codes are transposed or copied,
never re-encoded, and the output is canonical, so its sha256 (printed) can be
pinned. FORMAT is drama3-voice/1 (cuda), drama3-http-voice/1 (metal) or
localrouter-voice-codes/1 (cloned).

IN may also be one or more fish-speech code arrays (.npy, shape (10, T),
int64, int32 or uint16), each with its transcript in a .lab file beside it;
they become the references, in order, of a voice named by --id.

A drama3-voice/1 input carries no source attestation: converting it to the
Metal catalog or a cloned voice needs --source. An attestation the input
carries is never changed. A cloned voice of one's own or another person's
voice needs the consent statement (--consent-who, --consent-when,
--consent-statement) unless the input has it. More than four references are
packed for the Metal catalog by joining the adjacent pair with the fewest
frames that fits in 646. Files of a person's voice are written with mode
0600. An existing OUT is replaced only with --force.`),
		Example: strings.TrimSpace(`
$ drama voice convert anna.json --to metal --source consented -o catalog/anna.json
$ drama voice convert clone.json --to drama3-voice/1 -o voices/anna.json
$ drama voice convert ref1.npy ref2.npy --id anna-fish --name "Anna (Fish references)" --to cuda -o voices/anna-fish.json`),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Inputs = args
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runConvert(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.To, "to", "", "output format: drama3-voice/1 (cuda), drama3-http-voice/1 (metal), localrouter-voice-codes/1 (cloned)")
	fl.StringVarP(&opts.Output, "output", "o", "", "output file (- for standard output)")
	fl.StringVar(&opts.Source, "source", "", "source attestation when the input has none: synthetic, self or consented")
	fl.StringVar(&opts.Note, "note", "", "note for the Metal catalog entry")
	fl.StringVar(&opts.ID, "id", "", "voice id (required for .npy inputs)")
	fl.StringVar(&opts.Name, "name", "", "display name (default: the input's, or the id)")
	fl.StringVar(&opts.ConsentWho, "consent-who", "", "who consented (cloned output from an input without consent)")
	fl.StringVar(&opts.ConsentWhen, "consent-when", "", "when consent was given, RFC 3339 UTC")
	fl.StringVar(&opts.ConsentStatement, "consent-statement", "", "the consent statement, in the words given")
	fl.StringVar(&opts.Created, "created", "", "creation time of a cloned voice, RFC 3339 UTC (default now)")
	fl.StringVar(&opts.Tokenizer, "tokenizer", "", "tokenizer.json whose added tokens transcripts must not contain")
	fl.BoolVar(&opts.Force, "force", false, "replace an existing output file")
	_ = cmd.RegisterFlagCompletionFunc("to", cobra.FixedCompletions([]string{"cuda", "metal", "cloned"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("source", cobra.FixedCompletions([]string{"synthetic", "self", "consented"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// validate checks the flags that need no file.
func (o *ConvertOptions) validate() error {
	if _, err := o.format(); err != nil {
		return err
	}
	if o.Output == "" {
		return cmdutil.FlagErrorf("-o OUT is required")
	}
	if o.Source != "" && !slices.Contains([]string{"synthetic", "self", "consented"}, o.Source) {
		return cmdutil.FlagErrorf("--source %q: want synthetic, self or consented", o.Source)
	}
	npy := slices.ContainsFunc(o.Inputs, isNPY)
	if npy && !all(o.Inputs, isNPY) {
		return cmdutil.FlagErrorf("give either one voice file or .npy code arrays, not both")
	}
	if !npy && len(o.Inputs) > 1 {
		return cmdutil.FlagErrorf("give one voice file to convert, got %d", len(o.Inputs))
	}
	if npy && o.ID == "" {
		return cmdutil.FlagErrorf("--id is required to make a voice from .npy code arrays")
	}
	n := countSet(o.ConsentWho, o.ConsentWhen, o.ConsentStatement)
	if n != 0 && n != 3 {
		return cmdutil.FlagErrorf("give all of --consent-who, --consent-when and --consent-statement, or none")
	}
	return nil
}

func (o *ConvertOptions) format() (voices.Format, error) {
	if f, ok := formatAliases[o.To]; ok {
		return f, nil
	}
	if slices.Contains(voices.Formats, voices.Format(o.To)) {
		return voices.Format(o.To), nil
	}
	if o.To == "" {
		return "", cmdutil.FlagErrorf("--to FORMAT is required: drama3-voice/1, drama3-http-voice/1 or localrouter-voice-codes/1")
	}
	return "", cmdutil.FlagErrorf("--to %q: want drama3-voice/1 (cuda), drama3-http-voice/1 (metal) or localrouter-voice-codes/1 (cloned)", o.To)
}

func isNPY(name string) bool { return strings.EqualFold(filepath.Ext(name), ".npy") }

func all(list []string, fn func(string) bool) bool {
	for _, s := range list {
		if !fn(s) {
			return false
		}
	}
	return true
}

func countSet(vals ...string) int {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

// convertResult is the --json output of `drama voice convert`.
type convertResult struct {
	Output     string        `json:"output"`
	Format     string        `json:"format"`
	SHA256     string        `json:"sha256"`
	Size       int           `json:"size"`
	Mode       string        `json:"mode"`
	References int           `json:"references"`
	Joins      []voices.Join `json:"joins"`
	Dropped    []string      `json:"dropped"`
	Derived    []string      `json:"derived"`
}

func runConvert(_ context.Context, opts *ConvertOptions) error {
	to, _ := opts.format()
	vopts, err := loadOptions(opts.Tokenizer)
	if err != nil {
		return err
	}
	in, origin, err := opts.readInput(vopts)
	if err != nil {
		return err
	}
	copts, err := opts.convertOptions(in, origin, to, vopts)
	if err != nil {
		return err
	}
	conv, err := voices.Convert(in, to, copts)
	if err == nil {
		var data []byte
		if data, err = voices.Marshal(conv.Voice, vopts); err == nil {
			return opts.finish(conv, data)
		}
	}
	return convertError(fmt.Errorf("convert %s to %s: %w", strings.Join(opts.Inputs, " "), to, err))
}

// finish writes the converted voice and reports it.
func (o *ConvertOptions) finish(conv *voices.Conversion, data []byte) error {
	if err := o.write(data, conv.Voice); err != nil {
		return err
	}
	return o.report(conv, data)
}

// convertError maps conversion errors to exit codes: a voice the rules
// refuse is invalid input (exit 3); a missing or contradicting attestation
// or consent is a usage error (exit 2) naming the flags to give.
func convertError(err error) error {
	var ve *voices.ValidationError
	switch {
	case errors.As(err, &ve) || errors.Is(err, voices.ErrNoFit) || errors.Is(err, voices.ErrTooLarge):
		return cmdutil.MismatchError(err)
	case errors.Is(err, voices.ErrSource):
		return cmdutil.FlagErrorf("%w (--source)", err)
	case errors.Is(err, voices.ErrConsent):
		return cmdutil.FlagErrorf("%w (--consent-who, --consent-when, --consent-statement)", err)
	}
	return err
}

// readInput reads the voice file, or builds a voice from .npy inputs. origin
// names the input for a Metal note.
func (o *ConvertOptions) readInput(vopts *voices.Options) (*voices.Voice, string, error) {
	if !isNPY(o.Inputs[0]) {
		data, err := voices.ReadBytes(o.Inputs[0])
		if err != nil {
			return nil, "", convertError(err)
		}
		v, err := voices.Parse(data, vopts)
		if err != nil {
			return nil, "", cmdutil.MismatchError(fmt.Errorf("%s: %w", o.Inputs[0], err))
		}
		return v, string(v.Format) + " sha256:" + voices.FileSHA256(data), nil
	}
	v := &voices.Voice{Format: voices.FormatCUDA, ID: o.ID, Name: o.ID}
	for _, name := range o.Inputs {
		ref, err := voices.ReadFishReference(name)
		if err != nil {
			return nil, "", cmdutil.MismatchError(err)
		}
		v.References = append(v.References, ref)
	}
	return v, "", nil
}

func (o *ConvertOptions) convertOptions(in *voices.Voice, origin string, to voices.Format, vopts *voices.Options) (voices.ConvertOptions, error) {
	c := voices.ConvertOptions{Source: voices.SourceKind(o.Source), Note: o.Note, ID: o.ID, Name: o.Name, Check: vopts}
	if to != in.Format && origin != "" {
		c.Origin = origin
	}
	created, err := o.parseTime("--created", o.Created, o.now().UTC().Truncate(time.Second))
	if err != nil {
		return c, err
	}
	c.Created = created
	if o.ConsentWho != "" {
		when, err := o.parseTime("--consent-when", o.ConsentWhen, time.Time{})
		if err != nil {
			return c, err
		}
		c.Consent = &voices.Consent{Who: o.ConsentWho, When: when, Statement: o.ConsentStatement}
	}
	return c, nil
}

func (o *ConvertOptions) parseTime(flag, s string, def time.Time) (time.Time, error) {
	if s == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, cmdutil.FlagErrorf("%s %q: want an RFC 3339 time such as 2026-05-01T12:00:00Z", flag, s)
	}
	return t.UTC(), nil
}

// write writes the output atomically, refusing to replace a file without
// --force. A missing output directory (catalog/ in catalog/anna.json) is
// made.
func (o *ConvertOptions) write(data []byte, v *voices.Voice) error {
	if o.Output == "-" {
		_, err := o.F.IO.Out.Write(data)
		return err
	}
	if _, err := os.Stat(o.Output); err == nil && !o.Force {
		return fmt.Errorf("%s exists: use --force to replace it", o.Output)
	}
	if err := os.MkdirAll(filepath.Dir(o.Output), 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	return atomicfile.WriteFile(o.Output, data, v.FileMode())
}

func (o *ConvertOptions) report(conv *voices.Conversion, data []byte) error {
	f, v := o.F, conv.Voice
	for _, j := range conv.Joins {
		f.Infof("joined references %d to %d of the input into one of %d frames", j.First, j.Last, j.Frames)
	}
	if len(conv.Dropped) > 0 {
		f.Warnf("%s has no place for %s: not carried over", v.Format, strings.Join(conv.Dropped, ", "))
	}
	if slices.Contains(conv.Derived, "samples") {
		f.Infof("samples derived from frames (frames x 2048, at most 30 s): the input does not carry them")
	}
	sum := voices.FileSHA256(data)
	if o.Output == "-" {
		f.Infof("sha256 %s", sum)
		return nil
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, convertResult{Output: o.Output, Format: string(v.Format), SHA256: sum, Size: len(data),
			Mode: fmt.Sprintf("%04o", v.FileMode()), References: len(v.References), Joins: nonNil(conv.Joins), Dropped: nonNil(conv.Dropped), Derived: nonNil(conv.Derived)})
	}
	_, err := fmt.Fprintf(f.IO.Out, "%s  %s\n", sum, o.Output)
	return err
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
