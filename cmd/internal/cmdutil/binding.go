package cmdutil

import (
	"github.com/drama-tts/drama/engine/qualify"
	"github.com/drama-tts/drama/pins"
)

// CurrentBinding is what a marker of the variant must be bound to now:
// this host, the pins in force and the engine record of the root.
func CurrentBinding(f *Factory, pinsFile string, variantSet bool) (qualify.Binding, *pins.Pins, error) {
	p, err := LoadPins(f, pinsFile, variantSet, pins.ForInstalled)
	if err != nil {
		return qualify.Binding{}, nil, err
	}
	root, err := f.Root()
	if err != nil {
		return qualify.Binding{}, nil, err
	}
	record, err := EngineRecord(root)
	if err != nil {
		return qualify.Binding{}, nil, err
	}
	sum, err := qualify.PinsSHA256(p)
	if err != nil {
		return qualify.Binding{}, nil, err
	}
	return qualify.Binding{Variant: p.Variant, Host: qualify.HostID(), PinsSHA256: sum, NativeSHA256: record}, p, nil
}
