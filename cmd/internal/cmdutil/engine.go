package cmdutil

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/engine/host"
)

// EngineBinaries are the native engine binaries per engine plugin.
var EngineBinaries = map[string]string{"cuda": "tensorfold-native", "metal": "drama3-generate"}

// FindPlugin resolves an engine plugin name (or a binary's path) to the
// plugin binary: --plugin-dir, $DRAMA_PLUGIN_DIR, beside drama, then
// <root>/plugins.
func FindPlugin(f *Factory, pluginDir, name, root string) (string, error) {
	if strings.ContainsRune(name, os.PathSeparator) {
		return name, nil
	}
	exe, _ := os.Executable()
	dirs := host.Search{Flag: pluginDir, Env: f.Getenv(host.EnvPluginDir), Exe: exe, Root: root}.Dirs()
	c, err := host.Find(dirs, name)
	if err == nil {
		return c.Path, nil
	}
	if !errors.Is(err, host.ErrNotFound) {
		return "", fmt.Errorf("engine plugin %q: %w", name, err)
	}
	if EngineBinaries[name] != "" {
		return "", fmt.Errorf("engine plugin %q: %w", name, err) // host's message says how to build it
	}
	var found []string
	if all, derr := host.Discover(dirs); derr == nil {
		for _, c := range all {
			found = append(found, c.Name)
		}
	}
	have := "none"
	if len(found) > 0 {
		have = strings.Join(found, ", ")
	}
	return "", FlagErrorf("--engine %q: no engine plugin %s beside drama or in the plugin directories (found: %s): want cuda, metal, or a plugin binary's path",
		name, host.BinaryName(name), have)
}

// EngineBinary returns the native engine binary for a plugin: flag, else
// $DRAMA_ENGINE_BIN, else <root>/engine/<variant>/<binary> (where drama
// engine install puts it), else <root>/engine/<binary>, else the PATH. It
// returns "" when none is found; the caller decides whether that is an
// error.
func EngineBinary(f *Factory, flag, plugin, root string) (string, error) {
	for _, p := range []string{flag, f.Getenv("DRAMA_ENGINE_BIN")} {
		if p != "" {
			return filepath.Abs(p)
		}
	}
	name := EngineBinaries[plugin]
	if name == "" {
		return "", nil
	}
	if v := f.Global.Variant; v != "" && filepath.Base(v) == v && v != "." && v != ".." {
		if p := filepath.Join(root, "engine", v, name); isRegular(p) {
			return p, nil
		}
	}
	if p := filepath.Join(root, "engine", name); isRegular(p) {
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	return "", nil
}

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// EngineRecord reads the engine binary's pinned sha256 from
// <root>/engine/engine.sha256 (sha256sum's format); none means no check. A
// malformed record is a verification error (exit 3).
func EngineRecord(root string) (string, error) { return EngineRecordFor(root, "") }

// RecordEngineCommand returns the shell command line that records bin as
// the engine binary of root, as EngineRecord reads it: it makes
// <root>/engine when it is not there yet, then writes engine.sha256 in
// sha256sum's format.
func RecordEngineCommand(bin, root string) string {
	dir := filepath.Join(root, "engine")
	record := build.RootSums(root)
	cmd := "sha256sum " + ShellQuote(bin) + " > " + ShellQuote(record)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		cmd = "mkdir -p " + ShellQuote(dir) + " && " + cmd
	}
	return cmd
}

// StandInPackage is the main package of the stand-in native engine, as its
// binary's build information records it.
const StandInPackage = "github.com/drama-tts/drama/engine/native/standin/cmd/tensorfold-standin"

// IsStandIn reports whether bin is drama's stand-in native engine, which
// loads no model and needs no memory for one. It reads the Go build
// information recorded in the binary, without running it; any other
// binary, Go or not, is not the stand-in.
func IsStandIn(bin string) bool {
	if bin == "" {
		return false
	}
	info, err := buildinfo.ReadFile(bin)
	return err == nil && info.Path == StandInPackage
}

// EngineRecordFor reads the pinned sha256 of the engine binary bin, as
// build.PinnedSHA256 finds it: a binary that drama engine install put in
// <root>/engine/<variant>/ is checked against the engine.sha256 beside it,
// which must exist and name it (a missing record there is a verification
// error: the install did not finish); any other binary against
// <root>/engine/engine.sha256, as EngineRecord reads it. A record that
// does not give the sha256 is a verification error (exit 3) saying how to
// write it again.
func EngineRecordFor(root, bin string) (string, error) {
	sum, err := build.PinnedSHA256(root, bin)
	var re *build.RecordError
	switch {
	case !errors.As(err, &re):
		return sum, err
	case re.Variant != "" && errors.Is(err, os.ErrNotExist):
		return "", MismatchError(fmt.Errorf("%s has no record %s: the install did not finish: run `drama engine install --variant %s`", bin, re.Path, re.Variant))
	case re.Variant != "":
		return "", MismatchError(fmt.Errorf("%w: run `drama engine install --variant %s`", err, re.Variant))
	}
	return "", MismatchError(fmt.Errorf("%w: rewrite it with `sha256sum <engine binary> > %s`", err, re.Path))
}
