package cmdtest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
)

type countOptions struct{ N int }

func newCountCmd(f *cmdutil.Factory, runF func(context.Context, *countOptions) error) *cobra.Command {
	o := &countOptions{}
	cmd := &cobra.Command{Use: "count", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if o.N < 0 {
			return cmdutil.FlagErrorf("--n must be 0 or more")
		}
		if o.N > 9 {
			return fmt.Errorf("--n %d is too many", o.N)
		}
		return runF(cmd.Context(), o)
	}}
	cmd.Flags().IntVar(&o.N, "n", 1, "")
	return cmd
}

// reported records what CheckFlags reports.
type reported []string

func (e *reported) Helper()                        {}
func (e *reported) Errorf(format string, a ...any) { *e = append(*e, fmt.Sprintf(format, a...)) }

// CheckFlags passes the cases that hold and reports each one that does not:
// options that are wrong, an error that is missing, holds other words or
// gives another exit code.
func TestCheckFlags(t *testing.T) {
	n := func(want int) func(*countOptions) bool { return func(o *countOptions) bool { return o.N == want } }
	var got reported
	cmdtest.CheckFlags(&got, newCountCmd, []cmdtest.FlagCase[countOptions]{
		{Check: n(1)},
		{Args: []string{"--n", "3"}, Check: n(3)},
		{Args: []string{"--n", "-1"}, WantErr: "0 or more", Code: cmdutil.ExitUsage},
		{Args: []string{"--n", "12"}, WantErr: "too many"},
	})
	if len(got) != 0 {
		t.Fatalf("cases that hold were reported: %q", got)
	}
	cmdtest.CheckFlags(&got, newCountCmd, []cmdtest.FlagCase[countOptions]{
		{Args: []string{"--n", "3"}, Check: n(4)},                                   // wrong options
		{Args: []string{"--n", "3"}, WantErr: "0 or more"},                          // no error
		{Args: []string{"--n", "-1"}, WantErr: "too many"},                          // other words
		{Args: []string{"--n", "12"}, WantErr: "too many", Code: cmdutil.ExitUsage}, // other exit code
		{Args: []string{"stray"}, Check: n(1)},                                      // refused
	})
	if len(got) != 5 {
		t.Fatalf("want 5 cases reported, got %d: %q", len(got), got)
	}
}
