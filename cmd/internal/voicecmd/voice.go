// Package voicecmd implements `drama voice`: check, show, convert and list
// voice files in the three formats of package voices.
package voicecmd

import (
	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// NewCmd returns the `drama voice` command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "voice <command>",
		Short: "Check, show, convert and list voice files",
		Long: `Voice files hold reference passages (a transcript and its codec codes) in one
of three formats: drama3-voice/1 (CUDA server), drama3-http-voice/1 (Metal
catalog) and localrouter-voice-codes/1 (cloned voices). See docs/voices.md.`,
	}
	cmd.AddCommand(NewCmdCheck(f, nil), NewCmdShow(f, nil), NewCmdConvert(f, nil), NewCmdList(f, nil))
	cmd.AddCommand(NewCmdPrepare(f, nil))
	return cmd
}
