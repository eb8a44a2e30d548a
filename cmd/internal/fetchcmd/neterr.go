package fetchcmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pins/hub"
)

// checkEndpoint refuses a malformed --endpoint or HF_ENDPOINT at once, as
// a usage error naming where it came from.
func checkEndpoint(f *cmdutil.Factory, flag string) error {
	if flag != "" {
		if err := hub.CheckEndpoint(flag); err != nil {
			return cmdutil.FlagErrorf("--endpoint: %v", err)
		}
		return nil
	}
	if v := strings.TrimRight(f.Getenv("HF_ENDPOINT"), "/"); v != "" {
		if err := hub.CheckEndpoint(v); err != nil {
			return cmdutil.FlagErrorf("HF_ENDPOINT: %v; fix it or pass --endpoint", err)
		}
	}
	return nil
}

// commandLine is the user's own command: the command path and every flag
// given, local or global, so that advice can repeat it.
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	add := func(fl *pflag.Flag) {
		if fl.Value.Type() == "bool" && fl.Value.String() == "true" {
			parts = append(parts, "--"+fl.Name)
			return
		}
		parts = append(parts, "--"+fl.Name, shellQuote(fl.Value.String()))
	}
	// VisitAll with Changed: the inherited set is built afresh and does not
	// know which of its flags were set.
	inherited := cmd.InheritedFlags()
	inherited.VisitAll(func(fl *pflag.Flag) {
		if fl.Changed {
			add(fl)
		}
	})
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && inherited.Lookup(fl.Name) == nil {
			add(fl)
		}
	})
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// unreachableError turns a server that could not be reached into what to
// do: check the address (naming where it came from), or work from the
// cache alone; both repeat the user's own command.
func unreachableError(err error, endpoint, from, cmdline string) error {
	var ne *hub.NetError
	if !errors.As(err, &ne) {
		return err
	}
	if cmdline == "" {
		cmdline = "drama fetch"
	}
	return &unreachable{err: err, msg: fmt.Sprintf("%v\n  the Hub address %s comes from %s: check it, or point --endpoint (or HF_ENDPOINT) at a Hub or mirror that answers, then run again:\n    %s\n  to use only what is already in the cache:\n    HF_HUB_OFFLINE=1 %s",
		ne, endpoint, from, cmdline, cmdline)}
}

// unreachable is a NetError with what to do; it unwraps to the original
// error chain.
type unreachable struct {
	err error
	msg string
}

func (u *unreachable) Error() string { return u.msg }
func (u *unreachable) Unwrap() error { return u.err }
