// Package pinscmd implements `drama pins`: show, diff and make pins files.
package pinscmd

import (
	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// NewCmd returns the `drama pins` command group with show, diff and make.
// Its lock verb reads the Hub through drama fetch's client and is built by
// fetchcmd.NewCmdLock; the command tree (cmd/internal/cli) adds it, so that
// neither command package imports the other.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins <command>",
		Short: "Show, compare and make pins files",
	}
	cmd.AddCommand(NewCmdShow(f, nil), NewCmdDiff(f, nil), NewCmdMake(f, nil))
	return cmd
}
