package cli

import (
	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// addCommands adds every command group to root: one line per group.
func addCommands(root *cobra.Command, f *cmdutil.Factory) {
}
