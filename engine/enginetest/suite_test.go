package enginetest

import (
	"bytes"
	"context"
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

// TestFakeStartsOnce: with StartsOnce a Fake that crashed cannot be
// started again (KindFailed); without it, it can.
func TestFakeStartsOnce(t *testing.T) {
	for _, once := range []bool{false, true} {
		f := NewFake()
		f.StartsOnce = once
		if err := f.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
			t.Fatal(err)
		}
		f.Crash()
		WaitFor(t, func() bool { h, _ := f.Health(context.Background()); return !h.Ready })
		err := f.Start(context.Background(), engine.StartRequest{}, nil)
		if once && !isFailed(err) || !once && err != nil {
			t.Errorf("StartsOnce %v: the start after a crash: %v", once, err)
		}
		f.Stop(context.Background(), engine.StopRequest{})
	}
}

func isFailed(err error) bool { k, ok := engine.KindOf(err); return ok && k == engine.KindFailed }
