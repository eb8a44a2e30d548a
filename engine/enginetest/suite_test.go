package enginetest

import (
	"bytes"
	"testing"

	"github.com/drama-tts/drama/engine"
)

func fakeConfig(e engine.Engine) Config {
	return Config{
		Engine:      e,
		Voice:       "alice",
		SilenceText: "A pause follows. [silence-test]",
		Clips: []engine.Clip{
			{ID: "one", Data: Tone(1, 3*engine.SamplesPerFrame+5), Text: "one"},
			{ID: "two", Data: Tone(2, 10*engine.SamplesPerFrame), Text: "two"},
		},
	}
}

func TestSuiteDirect(t *testing.T) {
	Run(t, fakeConfig(NewFake()))
}

func TestSuiteInProcess(t *testing.T) {
	Run(t, fakeConfig(InProcess(t, NewFake())))
}

func TestToneDeterministic(t *testing.T) {
	a, b := Tone(7, 100), Tone(7, 100)
	if !bytes.Equal(a, b) || bytes.Equal(a, Tone(8, 100)) {
		t.Fatal("Tone is not a function of its seed")
	}
}

func TestSuiteSubprocess(t *testing.T) {
	path := TestBinaryPlugin(t, "fake")
	p := Subprocess(t, path, ServeEnv+"=fake")
	Run(t, fakeConfig(p))
}
