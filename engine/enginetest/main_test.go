package enginetest

import (
	"os"
	"testing"

	"github.com/drama-tts/drama/engine"
)

func TestMain(m *testing.M) {
	ServeChild(map[string]func() engine.Engine{"fake": func() engine.Engine { return NewFake() }})
	os.Exit(m.Run())
}
