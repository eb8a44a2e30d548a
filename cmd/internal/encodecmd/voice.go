package encodecmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/voices"
)

// voiceID returns --id, or an id made from the name.
func voiceID(opts *Options) (string, error) {
	if opts.ID != "" {
		return opts.ID, nil
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(opts.Name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.TrimRight(b.String(), "-")
	if len(id) > 64 {
		id = strings.TrimRight(id[:64], "-")
	}
	if err := voices.CheckID(id); err != nil {
		return "", cmdutil.FlagErrorf("cannot make a voice id from --name %q: give --id (lower-case letters, digits, - and _)", opts.Name)
	}
	return id, nil
}

// outputPath returns -o, or <root>/voices/<id>.json; an existing file is
// refused unless --replace.
func outputPath(opts *Options, id string) (string, error) {
	out := opts.Output
	if out == "" {
		root, err := opts.F.Root()
		if err != nil {
			return "", err
		}
		dir := filepath.Join(root, "voices")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		out = filepath.Join(dir, id+".json")
	}
	_, err := os.Stat(out)
	switch {
	case err == nil && !opts.Replace:
		return "", cmdutil.FlagErrorf("%s exists: choose another -o or --id, or give --replace to overwrite it", out)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	return out, nil
}

// buildVoice makes the cloned voice and converts it to --format. The voice
// is checked once, by voices.Convert or, for the cloned format, by
// voices.Marshal in writeVoice.
func buildVoice(opts *Options, id string, refs []ref, codes []voices.Codes) (*voices.Voice, error) {
	now := opts.Now().UTC().Truncate(time.Second)
	v := &voices.Voice{Format: voices.FormatCloned, ID: id, Name: strings.TrimSpace(opts.Name), Created: now,
		Source: voices.SourceKind(opts.Source)}
	if v.Source != voices.SourceSynthetic {
		when := now
		if opts.When != "" {
			t, _ := time.Parse(time.RFC3339, opts.When)
			when = t.UTC()
		}
		if when.After(now) {
			return nil, cmdutil.FlagErrorf("--consent-when %s is in the future", opts.When)
		}
		v.Consent = &voices.Consent{Who: strings.TrimSpace(opts.Who), When: when, Statement: strings.TrimSpace(opts.Statement)}
	} else if opts.Who != "" || opts.Statement != "" {
		opts.F.Warnf("--source synthetic: the consent flags are not saved (a synthetic voice is no person's)")
	}
	for i, r := range refs {
		v.References = append(v.References, voices.Reference{Text: r.Text, Samples: r.Samples, Codes: codes[i]})
	}
	if voices.Format(opts.Format) == voices.FormatCloned {
		return v, nil // checked by voices.Marshal when written
	}
	conv, err := voices.Convert(v, voices.Format(opts.Format), voices.ConvertOptions{})
	if err != nil {
		return nil, err
	}
	if len(conv.Dropped) > 0 {
		opts.F.Warnf("%s has no place for %s: keep a %s copy as the record of consent (drama encode --format %s)",
			opts.Format, strings.Join(conv.Dropped, ", "), voices.FormatCloned, voices.FormatCloned)
	}
	for _, j := range conv.Joins {
		opts.F.Infof("joined references %d to %d into one of %d frames to fit %s", j.First+1, j.Last+1, j.Frames, opts.Format)
	}
	return conv.Voice, nil
}

// writeVoice writes v canonically, atomically, mode 0600, and returns the
// file's sha256.
func writeVoice(out string, v *voices.Voice) (string, error) {
	data, err := voices.Marshal(v, nil)
	if err != nil {
		return "", err
	}
	if err := voices.WriteAtomic(out, data, 0o600); err != nil {
		return "", err
	}
	return voices.FileSHA256(data), nil
}

type refResult struct {
	Text    string  `json:"text"`
	Samples int     `json:"samples,omitempty"`
	Frames  int     `json:"frames"`
	Seconds float64 `json:"seconds"`
}

type result struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Format     string      `json:"format"`
	Source     string      `json:"source,omitempty"`
	File       string      `json:"file"`
	SHA256     string      `json:"sha256"`
	References []refResult `json:"references"`
}

func printResult(f *cmdutil.Factory, out, sum string, v *voices.Voice) error {
	res := result{ID: v.ID, Name: v.Name, Format: string(v.Format), Source: string(v.Source), File: out, SHA256: sum}
	frames := 0
	for _, r := range v.References {
		n := r.Codes.Frames()
		frames += n
		res.References = append(res.References, refResult{Text: r.Text, Samples: r.Samples, Frames: n,
			Seconds: voices.Seconds(n)})
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, res)
	}
	t := cmdutil.NewTable(f.IO, "id", "format", "references", "frames", "file", "sha256")
	t.AddRow(v.ID, string(v.Format), fmt.Sprint(len(v.References)), fmt.Sprint(frames), out, sum)
	return t.Render()
}
