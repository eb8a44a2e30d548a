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

// NewTestRoot returns a root command "drama" with the global flags (--root,
// --variant, --json, -q) bound to f.Global and cmd under it, so a test can
// parse a whole command line as the real root does.
func NewTestRoot(f *Factory, cmd *cobra.Command) *cobra.Command {
	root := &cobra.Command{Use: "drama", SilenceErrors: true, SilenceUsage: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return FlagErrorf("%w", err) })
	pf := root.PersistentFlags()
	pf.StringVar(&f.Global.Root, "root", "", "drama root directory")
	pf.StringVar(&f.Global.Variant, "variant", "full", "model variant")
	pf.BoolVar(&f.Global.JSON, "json", false, "JSON on stdout")
	pf.BoolVarP(&f.Global.Quiet, "quiet", "q", false, "no progress or informational messages")
	root.AddCommand(cmd)
	return root
}
