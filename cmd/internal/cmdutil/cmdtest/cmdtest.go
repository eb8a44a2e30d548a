// Package cmdtest holds what the tests of drama's commands share: streams
// over buffers, a factory over them, a root command with the global flags,
// and flag tables checked against a command's parsed options.
//
// Only tests import it; production code builds its factory with
// cmdutil.NewFactory.
package cmdtest

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// IOStreams returns streams over buffers, none of them a terminal, and the
// buffers.
func IOStreams() (ios *cmdutil.IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &cmdutil.IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// Factory returns a Factory over ios with an empty environment except for
// the values given as key, value pairs.
func Factory(ios *cmdutil.IOStreams, env ...string) *cmdutil.Factory {
	m := map[string]string{}
	for i := 0; i+1 < len(env); i += 2 {
		m[env[i]] = env[i+1]
	}
	return &cmdutil.Factory{IO: ios, Global: &cmdutil.Global{Variant: "full"}, Version: "test", Getenv: func(k string) string { return m[k] }}
}

// Execute runs cmd with args, its own usage and help output discarded, and
// returns its error: the flag-parsing tests of every command use it with a
// runF that captures the parsed options.
func Execute(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.Execute()
}

// NewRoot returns a root command "drama" with the global flags (--root,
// --variant, --json, -q) bound to f.Global and cmd under it, so a test can
// parse a whole command line as the real root does.
func NewRoot(f *cmdutil.Factory, cmd *cobra.Command) *cobra.Command {
	root := &cobra.Command{Use: "drama", SilenceErrors: true, SilenceUsage: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.FlagErrorf("%w", err) })
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
func ParseOptions[O any](newCmd func(*cmdutil.Factory, func(context.Context, *O) error) *cobra.Command, args ...string) (*O, error) {
	ios, _, _, _ := IOStreams()
	var got *O
	err := Execute(newCmd(Factory(ios), func(_ context.Context, o *O) error { got = o; return nil }), args...)
	return got, err
}

// FlagCase is one command line of a command's flag table.
type FlagCase[O any] struct {
	Args []string
	// WantErr, if set, is what the command's error must hold.
	WantErr string
	// Code, if set, is the exit code the command's error must give
	// (cmdutil.ExitUsage for a command line it refuses).
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
func CheckFlags[O any](t TB, newCmd func(*cmdutil.Factory, func(context.Context, *O) error) *cobra.Command, cases []FlagCase[O]) {
	t.Helper()
	for _, c := range cases {
		got, err := ParseOptions(newCmd, c.Args...)
		switch refused := c.WantErr != "" || c.Code != 0; {
		case refused && (err == nil || !strings.Contains(err.Error(), c.WantErr) || c.Code != 0 && cmdutil.ExitCode(err) != c.Code):
			t.Errorf("%q: %v (exit %d), want an error holding %q (exit %d: 0 for any)", c.Args, err, cmdutil.ExitCode(err), c.WantErr, c.Code)
		case !refused && (err != nil || !c.Check(got)):
			t.Errorf("%q: %v, options %+v", c.Args, err, got)
		}
	}
}
