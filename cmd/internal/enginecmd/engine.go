// Package enginecmd implements `drama engine install|show|verify`: the
// native engine built from its pinned sources, and its record.
package enginecmd

import (
	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// NewCmd returns the `drama engine` command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Build, show and verify the native engine",
		Long: `The native engine is not a download: drama engine install builds it on this
host from the sources the variant pins (drama-tensorfold and TensorFold at
exact commits) and records each binary's sha256 beside it in
<root>/engine/<variant>/ (engine.json and engine.sha256). drama serve starts
only the recorded binary. See docs/engine-build.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdInstall(f, nil), NewCmdShow(f, nil), NewCmdVerify(f, nil))
	return cmd
}
