package fetchcmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pins/hub"
)

// placeVariant gives the root a plain directory per variant: a symlink per
// file into the cache's snapshot, or with hardLinks a hard link to the
// blob (a plain file, sharing its bytes).
func placeVariant(dir string, res *hub.Result, hardLinks bool) error {
	for _, r := range res.Files {
		dst := filepath.Join(dir, filepath.FromSlash(r.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp := dst + ".drama-place.tmp"
		_ = os.Remove(tmp)
		var err error
		if hardLinks {
			err = os.Link(r.Blob, tmp)
		} else {
			err = os.Symlink(r.Snapshot, tmp)
		}
		if err == nil {
			err = os.Rename(tmp, dst)
		}
		if err != nil {
			return fmt.Errorf("place %s: %w", dst, err)
		}
	}
	return nil
}

// printResult writes the files and how each arrived: a table, or one JSON
// document with --json.
func printResult(f *cmdutil.Factory, res *hub.Result, dir string) error {
	if f.Global.JSON {
		// The last NDJSON line of the event stream.
		return json.NewEncoder(f.IO.Out).Encode(map[string]any{"event": "result", "dir": dir, "repo": res.Repo, "commit": res.Commit, "files": res.Files})
	}
	t := cmdutil.NewTable(f.IO, "PATH", "SIZE", "HOW")
	for _, r := range res.Files {
		t.AddRow(r.Path, cmdutil.HumanBytes(r.Size), string(r.How))
	}
	return t.Render()
}
