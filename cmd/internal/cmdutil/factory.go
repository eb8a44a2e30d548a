package cmdutil

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/internal/safetext"
)

// Global holds the global flags, bound by the root command.
type Global struct {
	Root    string // --root; empty means $DRAMA_HOME, else the XDG data dir
	Variant string // --variant: one of pins.Variants
	JSON    bool   // --json: one JSON document (or NDJSON events) on stdout
	Quiet   bool   // --quiet: no progress or informational messages
}

// Factory gives commands their dependencies. Commands keep a pointer to it in
// their Options and read the globals when they run, after flag parsing.
type Factory struct {
	IO     *IOStreams
	Global *Global
	// Version is the drama version string.
	Version string
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
}

// NewFactory returns a Factory over the process's streams and environment.
func NewFactory(version string) *Factory {
	return &Factory{IO: System(), Global: &Global{Variant: "full"}, Version: version, Getenv: os.Getenv}
}

// Root returns the drama root directory: --root, else $DRAMA_HOME, else
// $XDG_DATA_HOME/drama, else ~/.local/share/drama.
func (f *Factory) Root() (string, error) {
	if f.Global.Root != "" {
		return f.Global.Root, nil
	}
	if v := f.Getenv("DRAMA_HOME"); v != "" {
		return v, nil
	}
	if v := f.Getenv("XDG_DATA_HOME"); v != "" {
		return filepath.Join(v, "drama"), nil
	}
	home := f.Getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("no root directory: set --root or DRAMA_HOME")
		}
	}
	return filepath.Join(home, ".local", "share", "drama"), nil
}

// Infof prints an informational line on stderr unless --quiet or --json.
// Control characters in it are escaped (safetext.Lines): its arguments may
// be outside text.
func (f *Factory) Infof(format string, args ...any) {
	if f.Global.Quiet || f.Global.JSON {
		return
	}
	fmt.Fprintln(f.IO.ErrOut, safetext.Lines(fmt.Sprintf(format, args...)))
}

// Warnf prints a warning on stderr unless --quiet, escaped as Infof's
// lines are.
func (f *Factory) Warnf(format string, args ...any) {
	if f.Global.Quiet {
		return
	}
	fmt.Fprintln(f.IO.ErrOut, "warning: "+safetext.Lines(fmt.Sprintf(format, args...)))
}
