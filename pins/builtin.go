package pins

import (
	"embed"
	"fmt"
	"slices"
)

//go:embed builtin/*.json
var builtinFS embed.FS

// Variants are the variants with built-in pins.
var Variants = []string{"full", "nvfp4", "macos"}

// Builtin returns the embedded pins of a variant. They carry the repository,
// revision and totals of the model's notes; they are incomplete until
// completed from the Hub's listing of that commit.
func Builtin(variant string) (*Pins, error) {
	data, name, err := readBuiltin(builtinFS, "builtin/", variant)
	if err != nil {
		return nil, err
	}
	return Parse(data, name)
}

// readBuiltin reads the embedded file dir+variant+".json" of fsys and
// returns it with its name.
func readBuiltin(fsys embed.FS, dir, variant string) ([]byte, string, error) {
	if !slices.Contains(Variants, variant) {
		return nil, "", fmt.Errorf("pins: unknown variant %q: want one of %v", variant, Variants)
	}
	name := dir + variant + ".json"
	data, err := fsys.ReadFile(name)
	if err != nil {
		return nil, "", fmt.Errorf("pins: %w", err)
	}
	return data, name, nil
}
