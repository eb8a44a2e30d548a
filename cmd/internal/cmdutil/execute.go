package cmdutil

import (
	"context"
	"io"
	"strings"

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

// ParseOptions runs args on the command newCmd makes for a test factory,
// with a run that only keeps the options, and returns them (nil when the
// command line is refused) with the command's error.
func ParseOptions[O any](newCmd func(*Factory, func(context.Context, *O) error) *cobra.Command, args ...string) (*O, error) {
	ios, _, _, _ := Test()
	var got *O
	err := Execute(newCmd(TestFactory(ios), func(_ context.Context, o *O) error { got = o; return nil }), args...)
	return got, err
}

// FlagCase is one command line of a command's flag table.
type FlagCase[O any] struct {
	Args []string
	// WantErr, if set, is what the command's error must hold.
	WantErr string
	// Code, if set, is the exit code the command's error must give
	// (ExitUsage for a command line it refuses).
	Code int
	// Check says whether the options of an accepted command line are
	// right.
	Check func(*O) bool
}

// TB is the part of testing.TB that CheckFlags uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// CheckFlags parses each case's command line with ParseOptions and reports
// each case whose options or error are not what it wants.
func CheckFlags[O any](t TB, newCmd func(*Factory, func(context.Context, *O) error) *cobra.Command, cases []FlagCase[O]) {
	t.Helper()
	for _, c := range cases {
		got, err := ParseOptions(newCmd, c.Args...)
		switch refused := c.WantErr != "" || c.Code != 0; {
		case refused && (err == nil || !strings.Contains(err.Error(), c.WantErr) || c.Code != 0 && ExitCode(err) != c.Code):
			t.Errorf("%q: %v (exit %d), want an error holding %q (exit %d: 0 for any)", c.Args, err, ExitCode(err), c.WantErr, c.Code)
		case !refused && (err != nil || !c.Check(got)):
			t.Errorf("%q: %v, options %+v", c.Args, err, got)
		}
	}
}
