// Package pinscmd implements `drama pins`: show, diff, make and lock pins
// files.
package pinscmd

import (
	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// NewCmd returns the `drama pins` command group with show, diff, make and
// lock. Lock reads the Hub through package shared, which drama fetch uses
// too.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins <command>",
		Short: "Show, compare, make and lock pins files",
	}
	cmd.AddCommand(NewCmdShow(f, nil), NewCmdDiff(f, nil), NewCmdMake(f, nil), NewCmdLock(f, nil))
	return cmd
}
