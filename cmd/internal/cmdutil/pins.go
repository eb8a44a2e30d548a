package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/drama-tts/drama/pins"
)

// LoadPins returns the pins a command works with and the variant they are
// for: the file given with --pins if any, else the variant's lock file in
// the root (written by a verified fetch), else the built-in pins.
// variantSet says whether --variant was given: a --pins file for another
// variant is then refused.
func LoadPins(f *Factory, pinsFile string, variantSet bool) (*pins.Pins, error) {
	variant := f.Global.Variant
	if pinsFile != "" {
		p, err := pins.ReadFile(pinsFile)
		if err != nil {
			return nil, err
		}
		if variantSet && p.Variant != variant {
			return nil, fmt.Errorf("pins file %s is for variant %s, not %s: drop --variant or pass --variant %s", pinsFile, p.Variant, variant, p.Variant)
		}
		return p, nil
	}
	root, err := f.Root()
	if err != nil {
		return nil, err
	}
	p, err := pins.ReadFile(filepath.Join(root, variant, pins.LockFileName))
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return pins.Builtin(variant)
}
