package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/drama-tts/drama/pins"
)

// LoadPins returns the pins a command works with and the variant they are
// for: the file given with --pins if any (its digests from the root's lock
// file when it lacks them and the lock holds them), else the variant's lock file in
// the root (written by a verified fetch), else the built-in pins.
// variantSet says whether --variant was given: a --pins file for another
// variant is then refused.
func LoadPins(f *Factory, pinsFile string, variantSet bool) (*pins.Pins, error) {
	variant := f.Global.Variant
	if pinsFile != "" {
		p, err := ReadPinsFile(f, pinsFile, variantSet)
		if err != nil || p.Complete() {
			return p, err
		}
		root, err := f.Root()
		if err != nil {
			return nil, err
		}
		return CompleteFromLock(root, p), nil
	}
	root, err := f.Root()
	if err != nil {
		return nil, err
	}
	p, err := pins.ReadFile(filepath.Join(root, variant, pins.LockFileName))
	if err == nil {
		return p, nil
	}
	if errors.Is(err, pins.ErrInvalid) {
		return nil, MismatchError(err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return pins.Builtin(variant)
}

// ReadPinsFile reads a pins file given with --pins. A malformed file is an
// invalid input file (exit 3); a file for another variant than an explicit
// --variant is refused.
func ReadPinsFile(f *Factory, name string, variantSet bool) (*pins.Pins, error) {
	p, err := pins.ReadFile(name)
	if errors.Is(err, pins.ErrInvalid) {
		return nil, MismatchError(err)
	}
	if err != nil {
		return nil, err
	}
	if variantSet && p.Variant != f.Global.Variant {
		return nil, fmt.Errorf("pins file %s is for variant %s, not %s: drop --variant or pass --variant %s", name, p.Variant, f.Global.Variant, p.Variant)
	}
	return p, nil
}

// CompleteFromLock returns incomplete pins p with the digests of the lock
// file an earlier fetch of the same revision wrote in root (see
// pins.Pins.CompletedBy), or p itself when that lock does not complete
// them.
func CompleteFromLock(root string, p *pins.Pins) *pins.Pins {
	l, err := pins.ReadFile(filepath.Join(root, p.Variant, pins.LockFileName))
	if err != nil {
		return p
	}
	if c, ok := p.CompletedBy(l); ok {
		return c
	}
	return p
}

// LoadSources returns the engine sources pins of file (--sources, refused
// when variantSet and it names another variant), else the variant's
// built-in sources pins (drama engine install, drama up).
func LoadSources(f *Factory, file string, variantSet bool) (*pins.Sources, error) {
	if file == "" {
		return pins.BuiltinSources(f.Global.Variant)
	}
	s, err := pins.ReadSourcesFile(file)
	if errors.Is(err, pins.ErrInvalid) {
		return nil, MismatchError(err)
	}
	if err != nil {
		return nil, err
	}
	if variantSet && s.Variant != f.Global.Variant {
		return nil, fmt.Errorf("sources file %s is for variant %s, not %s: drop --variant or pass --variant %s", file, s.Variant, f.Global.Variant, s.Variant)
	}
	return s, nil
}
