package cmdutil

import (
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

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
func EngineRecord(root string) (string, error) {
	p := filepath.Join(root, "engine", "engine.sha256")
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 || len(fields[0]) != 64 || !isHex(fields[0]) {
		return "", MismatchError(fmt.Errorf("%s: want \"<sha256>  <file>\" as sha256sum writes it: rewrite it with `sha256sum <engine binary> > %s`", p, p))
	}
	return strings.ToLower(fields[0]), nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// RecordEngineCommand returns the shell command line that records bin as
// the engine binary of root, as EngineRecord reads it: it makes
// <root>/engine when it is not there yet, then writes engine.sha256 in
// sha256sum's format.
func RecordEngineCommand(bin, root string) string {
	dir := filepath.Join(root, "engine")
	record := filepath.Join(dir, "engine.sha256")
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

// EngineRecordFor reads the pinned sha256 of the engine binary bin. A
// binary that drama engine install put in <root>/engine/<variant>/ is
// checked against the engine.sha256 beside it, which must exist and name it
// (a missing record there is a verification error: the install did not
// finish); any other binary against <root>/engine/engine.sha256, as
// EngineRecord reads it.
func EngineRecordFor(root, bin string) (string, error) {
	dir := filepath.Dir(bin)
	if bin == "" || filepath.Clean(filepath.Dir(dir)) != filepath.Clean(filepath.Join(root, "engine")) {
		return EngineRecord(root)
	}
	p := filepath.Join(dir, "engine.sha256")
	variant := filepath.Base(dir)
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", MismatchError(fmt.Errorf("%s has no record %s: the install did not finish: run `drama engine install --variant %s`", bin, p, variant))
	}
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 2 && strings.TrimPrefix(fields[1], "*") == filepath.Base(bin) {
			if len(fields[0]) != 64 || !isHex(fields[0]) {
				break
			}
			return strings.ToLower(fields[0]), nil
		}
	}
	return "", MismatchError(fmt.Errorf("%s: no sha256 for %s: run `drama engine install --variant %s`", p, filepath.Base(bin), variant))
}
