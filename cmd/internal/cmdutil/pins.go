package cmdutil

import (
	"errors"
	"fmt"

	"github.com/drama-tts/drama/pins"
)

// LoadPins returns the pins a command works with through pins.Load: the
// --pins file if given (pinsFile), else the root's or the built-in pins of
// the variant, as o.For says. variantSet says whether --variant was given:
// a --pins file for another variant is then refused. A malformed file is an
// invalid input file (exit 3).
func LoadPins(f *Factory, pinsFile string, variantSet bool, o pins.For) (*pins.Pins, error) {
	var root string
	if o != pins.ForLock {
		var err error
		if root, err = f.Root(); err != nil {
			return nil, err
		}
	}
	p, err := pins.Load(root, f.Global.Variant, pins.LoadOptions{File: pinsFile, CheckVariant: variantSet, For: o})
	return p, PinsLoadError(err)
}

// PinsLoadError gives an error of pins.Load what the user does next: a
// malformed file exits 3, a file for another variant says which --variant
// it wants. Other errors, and nil, come back as they are.
func PinsLoadError(err error) error {
	var ve *pins.VariantError
	switch {
	case errors.As(err, &ve):
		return fmt.Errorf("%w: drop --variant or pass --variant %s", err, ve.Variant)
	case errors.Is(err, pins.ErrInvalid):
		return MismatchError(err)
	}
	return err
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
