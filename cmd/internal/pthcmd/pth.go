// Package pthcmd implements `drama pth`: inspect a torch.save checkpoint and
// convert it to safetensors, reading it with package pth's restricted
// loader so nothing in the file runs.
package pthcmd

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pth"
)

// NewCmd returns the `drama pth` command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pth <command>",
		Short: "Inspect codec.pth and convert it to safetensors, safely",
		Long: `Read torch.save checkpoints (codec.pth) without running them: the state-dict
pickle runs on a machine that knows only the opcodes and globals a tensor
state dict uses, and tensor data is read in place.`,
	}
	cmd.AddCommand(NewCmdInspect(f, nil), NewCmdConvert(f, nil))
	return cmd
}

// openCheckpoint opens a checkpoint; an unreadable or refused file is an
// invalid input (exit 3).
func openCheckpoint(name string) (*pth.ReadCloser, error) {
	r, err := pth.OpenReader(name)
	if err == nil {
		return r, nil
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return nil, err
	}
	return nil, cmdutil.MismatchError(err)
}
