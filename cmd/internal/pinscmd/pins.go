// Package pinscmd implements `drama pins`: show, diff and make pins files.
package pinscmd

import (
	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/fetchcmd"
)

// NewCmd returns the `drama pins` command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins <command>",
		Short: "Show, compare and make pins files",
	}
	cmd.AddCommand(NewCmdShow(f, nil), NewCmdDiff(f, nil), NewCmdMake(f, nil))
	cmd.AddCommand(fetchcmd.NewCmdLock(f, nil))
	return cmd
}
