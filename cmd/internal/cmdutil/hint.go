package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drama-tts/drama/internal/model"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// Suggest returns a drama command line for a next-step hint: "drama" and
// args, then the global flags the user gave this command (--root), so that
// following the advice acts on the same install. After the subcommand
// words (those before the first "-"), words come in flag, value pairs; a
// pair whose value is empty is dropped,
// and a flag with the value "true" is written alone. Values are quoted for
// a POSIX shell where they need it.
func (f *Factory) Suggest(words ...string) string {
	parts := []string{"drama"}
	i := 0
	for ; i < len(words) && !strings.HasPrefix(words[i], "-"); i++ {
		parts = append(parts, ShellQuote(words[i]))
	}
	for ; i+1 < len(words); i += 2 {
		flag, val := words[i], words[i+1]
		switch val {
		case "":
		case "true":
			parts = append(parts, flag)
		default:
			parts = append(parts, flag, ShellQuote(val))
		}
	}
	if f.Global.Root != "" && !contains(words, "--root") {
		parts = append(parts, "--root", ShellQuote(f.Global.Root))
	}
	return strings.Join(parts, " ")
}

func contains(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// ShellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@%+,.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// NotInstalledError says a variant has no files under the root, and how to
// install it. It matches fs.ErrNotExist with errors.Is.
type NotInstalledError struct {
	Variant, Root string
	Fetch         string // the drama fetch command line that installs it
}

// Error returns "VARIANT is not installed in ROOT: run FETCH".
func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("%s is not installed in %s: run %s", e.Variant, e.Root, e.Fetch)
}

// Is reports whether target is fs.ErrNotExist.
func (e *NotInstalledError) Is(target error) bool { return target == fs.ErrNotExist }

// RequireInstalled checks that the variant has files under the root before a
// command does any work with them. Its error names the variant and the root
// and gives the fetch that installs it, with the user's own flags (extra are
// more flag, value pairs for that hint, e.g. "--pins", file). The error is
// a *NotInstalledError.
func RequireInstalled(f *Factory, variant string, extra ...string) error {
	root, err := f.Root()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, variant)
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("%s is not a directory: drama keeps the %s variant's files there", dir, variant)
	}
	if HasFiles(dir) {
		return nil
	}
	return &NotInstalledError{Variant: variant, Root: root, Fetch: f.Suggest(append([]string{"fetch", "--variant", variant}, extra...)...)}
}

// GivenFlags returns the flags set on the command line of cmd (its own and
// the inherited global ones) as flag, value pairs in the order cobra keeps
// them: the one capture of the user's command line for advice that repeats
// it (Suggest writes the pairs). A boolean flag set to true is given as
// "--name", "true"; Suggest writes it alone.
func GivenFlags(cmd *cobra.Command) []string {
	var out []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Value.Type() == "stringSlice" || fl.Value.Type() == "stringArray" {
			if sv, ok := fl.Value.(pflag.SliceValue); ok {
				for _, v := range sv.GetSlice() {
					out = append(out, "--"+fl.Name, v)
				}
				return
			}
		}
		out = append(out, "--"+fl.Name, fl.Value.String())
	})
	return out
}

// WithFlag returns the flag, value pairs with flag set to value: replaced
// where it is, added at the end where it is not.
func WithFlag(pairs []string, flag, value string) []string {
	out := append([]string(nil), pairs...)
	for i := 0; i+1 < len(out); i += 2 {
		if out[i] == flag {
			out[i+1] = value
			return out
		}
	}
	return append(out, flag, value)
}

// HasFiles reports whether dir holds anything besides drama's own state
// (.drama): a variant's directory that does is installed.
func HasFiles(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() != model.StateDirName {
			return true
		}
	}
	return false
}

// PinsAdvice adds what to do to an error of pins.Verify or of a fetch that
// found p incomplete or its folder missing: the drama pins lock or drama fetch
// command that mends it, with the user's own flags (pinsFile, when not
// empty, is the --pins file given). Other errors, and nil, come back as they
// are.
func PinsAdvice(f *Factory, err error, p *pins.Pins, pinsFile string) error {
	switch {
	case errors.Is(err, pins.ErrIncomplete):
		return fmt.Errorf("%w: run %s (or %s) to fill them in", err,
			f.Suggest("pins", "lock", "--variant", p.Variant, "--pins", pinsFile),
			f.Suggest("fetch", "--variant", p.Variant, "--pins", pinsFile))
	case errors.Is(err, pins.ErrNoDir):
		return fmt.Errorf("%w: run %s, or pass the --root that holds it", err,
			f.Suggest("fetch", "--variant", p.Variant, "--pins", pinsFile))
	}
	return err
}

// RepairHint is the fetch that repairs the variant: its pins, the root, and
// the endpoint it was fetched from when that is not the one a bare fetch
// would use.
func RepairHint(f *Factory, p *pins.Pins, pinsFile, dir string) string {
	if p.Repo == "" {
		return "restore them from where they came from"
	}
	endpoint := hub.Source(dir)
	if endpoint == hub.Endpoint(f.Getenv) {
		endpoint = ""
	}
	return "run " + f.Suggest("fetch", "--variant", p.Variant, "--pins", pinsFile, "--endpoint", endpoint) + " to repair them"
}
