package cmdutil

import (
	"path/filepath"

	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// Caches are the Hugging Face caches a root's installs may link into: the
// one the environment names (HF_HUB_CACHE, HF_HOME...) and the root's own,
// which drama fetch --no-cache uses.
func Caches(f *Factory, root string) []hub.Cache {
	return []hub.Cache{hub.CacheFromEnv(f.Getenv), {Dir: filepath.Join(root, pins.StateDirName, "hub")}}
}

// Installs lists the variants installed under the root with where each
// pinned file lives (hub.Locate); an install whose lock file does not
// parse has no entry in placed.
func Installs(f *Factory) (root string, installs []pins.Install, placed map[string][]hub.Placed, err error) {
	if root, err = f.Root(); err != nil {
		return "", nil, nil, err
	}
	if installs, err = pins.Installed(root); err != nil {
		return "", nil, nil, err
	}
	caches := Caches(f, root)
	placed = map[string][]hub.Placed{}
	for _, in := range installs {
		if in.Pins != nil {
			placed[in.Variant] = hub.Locate(in, caches)
		}
	}
	return root, installs, placed, nil
}

// VariantNames returns the variants of installs.
func VariantNames(installs []pins.Install) []string {
	out := make([]string, 0, len(installs))
	for _, in := range installs {
		out = append(out, in.Variant)
	}
	return out
}
