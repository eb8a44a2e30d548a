package cmdutil

import (
	"io"

	"github.com/spf13/cobra"
)

// Execute runs cmd with args, its own usage and help output discarded, and
// returns its error: the flag-parsing tests of every command use it with a
// runF that captures the parsed options.
func Execute(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.Execute()
}
