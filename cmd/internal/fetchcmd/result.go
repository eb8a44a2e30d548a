package fetchcmd

import (
	"encoding/json"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pins/hub"
)

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
