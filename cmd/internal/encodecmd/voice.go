package encodecmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/clone"
	"github.com/drama-tts/drama/voices"
)

// voiceID returns --id, or an id made from the name.
func voiceID(opts *Options) (string, error) {
	if opts.ID != "" {
		return opts.ID, nil
	}
	id, err := clone.IDFromName(opts.Name)
	if err != nil {
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
