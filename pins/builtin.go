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
	if !slices.Contains(Variants, variant) {
		return nil, fmt.Errorf("pins: unknown variant %q: want one of %v", variant, Variants)
	}
	name := "builtin/" + variant + ".json"
	data, err := builtinFS.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("pins: %w", err)
	}
	return Parse(data, name)
}
