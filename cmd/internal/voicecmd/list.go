package voicecmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// ListOptions are the inputs of `drama voice list`.
type ListOptions struct {
	F         *cmdutil.Factory
	Dir       string
	Tokenizer string
}

// NewCmdList returns `drama voice list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{F: f}
	cmd := &cobra.Command{
		Use:   "list DIR",
		Short: "List the voice files in a directory",
		Long: strings.TrimSpace(`
List the voice files (*.json) in DIR, as a server's --voices directory holds
them: id, format, references, seconds, status and file. Warns when a file is
not named <id>.json, as the servers expect, and when two files share an id.
Use 'drama voice check' for each problem of an invalid file.`),
		Example: strings.TrimSpace(`
$ drama voice list ~/.local/share/drama/voices
$ drama voice list catalog --json`),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Tokenizer, "tokenizer", "", "tokenizer.json whose added tokens transcripts must not contain")
	return cmd
}

// listResult is the --json output of `drama voice list`.
type listResult struct {
	Dir    string        `json:"dir"`
	Voices []*fileReport `json:"voices"`
}

func runList(_ context.Context, opts *ListOptions) error {
	f := opts.F
	vopts, err := loadOptions(opts.Tokenizer)
	if err != nil {
		return err
	}
	files, err := voiceFiles(opts.Dir)
	if err != nil {
		return err
	}
	res := listResult{Dir: opts.Dir, Voices: inspectAll(files, vopts)}
	warnNames(f, res.Voices)
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, res)
	}
	t := cmdutil.NewTable(f.IO, "id", "format", "references", "seconds", "status", "file")
	for _, r := range res.Voices {
		status := "ok"
		if !r.Valid {
			status = plural(len(r.Problems), "invalid (%d problem)", "invalid (%d problems)")
		}
		t.AddRow(dash(r.ID), dash(r.Format), strconv.Itoa(r.References), fmt.Sprintf("%.2f", r.Seconds), status, filepath.Base(r.File))
	}
	return t.Render()
}

// voiceFiles returns the *.json files of dir, sorted.
func voiceFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list voices: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// warnNames warns about files not named <id>.json and ids used twice.
func warnNames(f *cmdutil.Factory, reports []*fileReport) {
	seen := map[string]string{}
	for _, r := range reports {
		if r.ID == "" {
			continue
		}
		if base := filepath.Base(r.File); base != r.ID+".json" {
			f.Warnf("%s holds voice %q: servers expect it named %s.json", r.File, r.ID, r.ID)
		}
		if prev, ok := seen[r.ID]; ok {
			f.Warnf("voice %q is in both %s and %s", r.ID, prev, r.File)
		}
		seen[r.ID] = r.File
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf(one, n)
	}
	return fmt.Sprintf(many, n)
}
