package encodecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/host"
)

// encoderBinaries are the native voice encoders per plugin.
var encoderBinaries = map[string]string{"cuda": "tensorfold-native", "metal": "drama3-generate"}

// pluginName returns --plugin, or the plugin of the variant: metal for
// macos, cuda otherwise.
func pluginName(opts *Options) string {
	switch {
	case opts.Plugin != "":
		return opts.Plugin
	case opts.F.Global.Variant == "macos":
		return "metal"
	}
	return "cuda"
}

// openPlugin finds the engine plugin (--plugin-dir, $DRAMA_PLUGIN_DIR,
// beside drama, <root>/plugins), checks its checksum and starts it.
func openPlugin(ctx context.Context, opts *Options) (engine.Engine, func(), error) {
	root, err := opts.F.Root()
	if err != nil {
		return nil, nil, err
	}
	exe, _ := os.Executable()
	search := host.Search{Flag: opts.PluginDir, Env: opts.F.Getenv(host.EnvPluginDir), Exe: exe, Root: root}
	c, err := host.Find(search.Dirs(), pluginName(opts))
	if err != nil {
		return nil, nil, cmdutil.EngineError(fmt.Errorf("%w: build it with `make build`, or pass --plugin-dir", err))
	}
	p, err := host.Open(ctx, c.Path, host.Options{})
	if err != nil {
		return nil, nil, cmdutil.EngineError(err)
	}
	release := func() { _ = p.Close(context.Background(), 0) }
	return p, release, nil
}

// installFor names the files the engine encodes with: codec.pth in
// --model-dir (default <root>/<variant>), and the voice encoder binary:
// --engine-bin, else $DRAMA_ENGINE_BIN, else <root>/engine/<binary>, else
// the plugin looks on PATH. Its pinned sha256 is read from
// <root>/engine/engine.sha256 when that file exists.
func installFor(opts *Options) (engine.Install, error) {
	root, err := opts.F.Root()
	if err != nil {
		return engine.Install{}, err
	}
	in := engine.Install{Root: root, Variant: opts.F.Global.Variant, ModelDir: opts.ModelDir, EngineBin: opts.EngineBin}
	if in.ModelDir == "" {
		in.ModelDir = filepath.Join(root, in.Variant)
	}
	if in.EngineBin == "" {
		in.EngineBin = opts.F.Getenv("DRAMA_ENGINE_BIN")
	}
	if p := filepath.Join(root, "engine", encoderBinaries[pluginName(opts)]); in.EngineBin == "" && isFile(p) {
		in.EngineBin = p
	}
	if in.EngineBin != "" {
		if in.EngineBin, err = filepath.Abs(in.EngineBin); err != nil {
			return engine.Install{}, err
		}
	}
	in.EngineSHA256, err = engineRecord(root)
	return in, err
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// engineRecord reads the engine binary's pinned sha256 from
// <root>/engine/engine.sha256 (sha256sum format); none means no check.
func engineRecord(root string) (string, error) {
	p := filepath.Join(root, "engine", "engine.sha256")
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 || len(fields[0]) != 64 {
		return "", cmdutil.MismatchError(fmt.Errorf("%s: want \"<sha256>  <file>\" as sha256sum writes it", p))
	}
	return strings.ToLower(fields[0]), nil
}
