package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/config"
	"github.com/drama-tts/drama/pins"
)

// NewRootCmd returns the drama command with its global flags and every
// subcommand.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "drama <command>",
		Short: "Fetch, check, convert and serve Fish Audio's Drama 3 text-to-speech model",
		Long: strings.TrimSpace(`
drama takes an operator from nothing to a serving Drama 3 install and keeps
that install verifiable: pinned downloads from the Hugging Face Hub, safe
reading of codec.pth, voice files, quantized variants, and an OpenAI-style
speech API in front of the native engine.

Built with Fish Audio.`),
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       f.Version,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// Flags not given take their value from the environment or
			// the config file.
			if err := config.Apply(cmd, f); err != nil {
				return err
			}
			if !slices.Contains(pins.Variants, f.Global.Variant) {
				return cmdutil.FlagErrorf("unknown variant %q: use one of %s", f.Global.Variant, strings.Join(pins.Variants, ", "))
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.FlagErrorf("%w", err) })
	pf := root.PersistentFlags()
	pf.StringVar(&f.Global.Root, "root", "", "drama root directory (default $DRAMA_HOME, else $XDG_DATA_HOME/drama)")
	pf.StringVar(&f.Global.Variant, "variant", "full", "model variant: "+strings.Join(pins.Variants, ", "))
	pf.BoolVar(&f.Global.JSON, "json", false, "print one JSON document on stdout (NDJSON events for streaming commands)")
	pf.BoolVarP(&f.Global.Quiet, "quiet", "q", false, "print no progress or informational messages")
	_ = root.RegisterFlagCompletionFunc("variant", cobra.FixedCompletions(pins.Variants, cobra.ShellCompDirectiveNoFileComp))
	root.SetUsageTemplate(root.UsageTemplate() + "\n" + cmdutil.ExitStatusHelp + "\n")
	root.SetVersionTemplate("drama {{.Version}}\n")
	root.AddCommand(newVersionCmd(f))
	addCommands(root, f)
	usageErrors(root)
	return root
}

// usageErrors makes every argument error of cmd and its subcommands a usage
// error (exit 2), and has a command group refuse an unknown subcommand
// (cobra would print the group's help and exit 0, or exit 1 at the root).
func usageErrors(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2 // cobra's own default for its suggestions
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += ": did you mean " + strings.Join(s, " or ") + "?"
			}
			return cmdutil.FlagErrorf("%s", msg)
		}
	}
	if validate := cmd.Args; validate != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := validate(c, args); err != nil {
				return cmdutil.FlagErrorf("%w", err)
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageErrors(sub)
	}
}
