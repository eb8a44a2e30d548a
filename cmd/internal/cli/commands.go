package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/benchcmd"
	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/configcmd"
	"github.com/drama-tts/drama/cmd/internal/doctorcmd"
	"github.com/drama-tts/drama/cmd/internal/encodecmd"
	"github.com/drama-tts/drama/cmd/internal/enginecmd"
	"github.com/drama-tts/drama/cmd/internal/fetchcmd"
	"github.com/drama-tts/drama/cmd/internal/listcmd"
	"github.com/drama-tts/drama/cmd/internal/mirrorcmd"
	"github.com/drama-tts/drama/cmd/internal/pinscmd"
	"github.com/drama-tts/drama/cmd/internal/pluginscmd"
	"github.com/drama-tts/drama/cmd/internal/pthcmd"
	"github.com/drama-tts/drama/cmd/internal/qualifycmd"
	"github.com/drama-tts/drama/cmd/internal/quantizecmd"
	"github.com/drama-tts/drama/cmd/internal/rmcmd"
	"github.com/drama-tts/drama/cmd/internal/saycmd"
	"github.com/drama-tts/drama/cmd/internal/servecmd"
	"github.com/drama-tts/drama/cmd/internal/servicecmd"
	"github.com/drama-tts/drama/cmd/internal/statuscmd"
	"github.com/drama-tts/drama/cmd/internal/stcmd"
	"github.com/drama-tts/drama/cmd/internal/tokenizecmd"
	"github.com/drama-tts/drama/cmd/internal/upcmd"
	"github.com/drama-tts/drama/cmd/internal/verifycmd"
	"github.com/drama-tts/drama/cmd/internal/voicecmd"
)

// addCommands adds every command group to root: one line per group.
func addCommands(root *cobra.Command, f *cmdutil.Factory) {
	root.AddCommand(verifycmd.NewCmd(f, nil))
	root.AddCommand(pinscmd.NewCmd(f))
	root.AddCommand(alias(fetchcmd.NewCmd(f, nil), []string{"pull"}, "download"))
	root.AddCommand(mirrorcmd.NewCmd(f))
	root.AddCommand(alias(servecmd.NewCmd(f, nil), nil, "run", "start"), saycmd.NewCmd(f, nil))
	root.AddCommand(pthcmd.NewCmd(f))
	root.AddCommand(voicecmd.NewCmd(f))
	root.AddCommand(stcmd.NewCmd(f))
	root.AddCommand(quantizecmd.NewCmd(f, nil))
	root.AddCommand(pluginscmd.NewCmd(f, nil))
	root.AddCommand(tokenizecmd.NewCmd(f, nil))
	root.AddCommand(encodecmd.NewCmd(f, nil))
	root.AddCommand(listcmd.NewCmd(f, nil))
	root.AddCommand(rmcmd.NewCmd(f, nil))
	root.AddCommand(statuscmd.NewCmd(f, nil), statuscmd.NewCmdStop(f, nil))
	root.AddCommand(configcmd.NewCmd(f))
	root.AddCommand(doctorcmd.NewCmd(f, nil))
	root.AddCommand(enginecmd.NewCmd(f))
	root.AddCommand(benchcmd.NewCmd(f, nil))
	root.AddCommand(qualifycmd.NewCmd(f, nil))
	root.AddCommand(servicecmd.NewCmd(f, servicePeers(f)))
	root.AddCommand(upcmd.NewCmd(f, upPeers(f), nil))
}

// alias gives cmd the other names it answers to (those of the tools
// people know: ollama pull) and the words it is suggested for when they
// are no command (hf download). It returns cmd.
func alias(cmd *cobra.Command, aliases []string, suggestFor ...string) *cobra.Command {
	cmd.Aliases = append(cmd.Aliases, aliases...)
	cmd.SuggestFor = append(cmd.SuggestFor, suggestFor...)
	return cmd
}

// servicePeers are the commands drama service installs and reports on.
func servicePeers(f *cmdutil.Factory) servicecmd.Peers {
	return servicecmd.Peers{
		Serve: func() *cobra.Command {
			return servecmd.NewCmd(f, func(context.Context, *servecmd.Options) error { return nil })
		},
		Status: func() *cobra.Command { return statuscmd.NewCmd(f, nil) },
	}
}

// upPeers are the commands drama up checks and runs: drama serve's flags,
// and any drama command run in this process on the same streams.
func upPeers(f *cmdutil.Factory) upcmd.Peers {
	return upcmd.Peers{
		CheckServe: func() *cobra.Command {
			return servecmd.NewCmd(f, func(context.Context, *servecmd.Options) error { return nil })
		},
		Run: func(ctx context.Context, args ...string) error {
			root := NewRootCmd(f)
			root.SetArgs(args)
			root.SetIn(f.IO.In)
			root.SetOut(f.IO.Out)
			root.SetErr(f.IO.ErrOut)
			return root.ExecuteContext(ctx)
		},
	}
}
