package pins

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// For says which pins Load returns when no pins file is given, and whether
// pins without digests take them from the root's lock file.
type For int

// What the pins are loaded for.
const (
	// ForInstalled: what the root has installed: the variant's lock file,
	// else the built-in pins; a pins file given is completed from the lock
	// (drama verify, drama pins show, drama serve, drama up).
	ForInstalled For = iota
	// ForFetch: what a fetch installs: the pins file given, else the
	// built-in pins, completed from the lock file when it is of the same
	// revision (drama fetch).
	ForFetch
	// ForLock: the pins as given (the file, else the built-in pins), never
	// completed from the lock (drama pins lock, drama pins diff).
	ForLock
)

// LoadOptions say which pins Load returns.
type LoadOptions struct {
	// File is a pins file given by the user; "" for the root's or the
	// built-in pins.
	File string
	// CheckVariant refuses a File for another variant than the one asked
	// for (the user named the variant).
	CheckVariant bool
	For          For
}

// VariantError is a pins file for another variant than the one asked for.
type VariantError struct {
	File    string
	Variant string // the file's
	Want    string
}

// Error names the file and both variants.
func (e *VariantError) Error() string {
	return fmt.Sprintf("pins file %s is for variant %s, not %s", e.File, e.Variant, e.Want)
}

// Load is the one loader of pins: those of o.File, else (o.For) the lock
// file of variant in root or the built-in pins of variant, completed from
// the root's lock file of the same revision where o.For says so. A file
// that does not parse is an error wrapping ErrInvalid; a file for another
// variant with o.CheckVariant is a *VariantError.
func Load(root, variant string, o LoadOptions) (*Pins, error) {
	var p *Pins
	var err error
	switch {
	case o.File != "":
		if p, err = ReadFile(o.File); err != nil {
			return nil, err
		}
		if o.CheckVariant && p.Variant != variant {
			return nil, &VariantError{File: o.File, Variant: p.Variant, Want: variant}
		}
	case o.For == ForInstalled:
		p, err = ReadFile(filepath.Join(root, variant, LockFileName))
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return p, err
		}
		return Builtin(variant)
	default:
		if p, err = Builtin(variant); err != nil {
			return nil, err
		}
	}
	if o.For == ForLock || p.Complete() {
		return p, nil
	}
	return CompleteFromLock(root, p), nil
}

// CompleteFromLock returns incomplete pins p with the digests of the lock
// file an earlier fetch of the same revision wrote in root (see
// CompletedBy), or p itself when that lock does not complete them.
func CompleteFromLock(root string, p *Pins) *Pins {
	l, err := ReadFile(filepath.Join(root, p.Variant, LockFileName))
	if err != nil {
		return p
	}
	if c, ok := p.CompletedBy(l); ok {
		return c
	}
	return p
}
