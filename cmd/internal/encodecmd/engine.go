package encodecmd

import (
	"context"
	"path/filepath"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/host"
)

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
	path, err := cmdutil.FindPlugin(opts.F, opts.PluginDir, pluginName(opts), root)
	if err != nil {
		return nil, nil, cmdutil.EngineError(err)
	}
	p, err := host.Open(ctx, path, host.Options{})
	if err != nil {
		return nil, nil, cmdutil.EngineError(err)
	}
	release := func() { _ = p.Close(context.Background(), 0) }
	return p, release, nil
}

// installFor names the files the engine encodes with: codec.pth in
// --model-dir (default <root>/<variant>), and the voice encoder binary:
// --engine-bin, else $DRAMA_ENGINE_BIN, else <root>/engine/<binary>, else
// the plugin looks on PATH. Its pinned sha256 is read as
// cmdutil.EngineRecordFor reads it.
func installFor(opts *Options) (engine.Install, error) {
	root, err := opts.F.Root()
	if err != nil {
		return engine.Install{}, err
	}
	in := engine.Install{Root: root, Variant: opts.F.Global.Variant, ModelDir: opts.ModelDir}
	if in.ModelDir == "" {
		in.ModelDir = filepath.Join(root, in.Variant)
	}
	if in.EngineBin, err = cmdutil.EngineBinary(opts.F, opts.EngineBin, pluginName(opts), root); err != nil {
		return engine.Install{}, err
	}
	in.EngineSHA256, err = cmdutil.EngineRecordFor(root, in.EngineBin)
	return in, err
}
