// Package cli builds drama's root command, runs it, and maps its outcome to
// the exit-code table.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/safetext"
)

// version is set at build time with -ldflags "-X ...cli.version=...".
var version = "dev"

// Main runs drama with the process's arguments and streams and returns the
// exit code. SIGINT or SIGTERM cancels the command's context; the command
// cleans up and Main returns 130.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := cmdutil.NewFactory(buildVersion(version))
	return Run(ctx, f, os.Args[1:])
}

// Run runs drama with args on the factory's streams and returns the exit code.
func Run(ctx context.Context, f *cmdutil.Factory, args []string) int {
	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%w: %w", context.Canceled, err)
	}
	code := cmdutil.ExitCode(err)
	if cmdutil.IsSilent(err) {
		return code
	}
	printError(f, cmd.CommandPath(), code, err)
	return code
}

func printError(f *cmdutil.Factory, path string, code int, err error) {
	msg := err.Error()
	if code == cmdutil.ExitInterrupted {
		msg = "interrupted"
		var ie *cmdutil.InterruptedError
		if errors.As(err, &ie) {
			msg = ie.Error()
		}
	}
	if f.Global.JSON {
		_ = cmdutil.WriteJSON(f.IO.ErrOut, map[string]any{"error": msg, "exit_code": code})
		return
	}
	// An error may carry outside text (a Hub's message, a file name, an
	// engine's log lines): its control characters are shown escaped. The
	// JSON error is encoded, not escaped.
	fmt.Fprintf(f.IO.ErrOut, "drama: %s\n", safetext.Lines(msg))
	if code == cmdutil.ExitUsage {
		fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", path)
	}
}
