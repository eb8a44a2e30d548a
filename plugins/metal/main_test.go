package main

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
)

// pluginBin is this plugin built as make build builds it; standinBin the
// stand-in native server it drives in the tests.
var pluginBin, standinBin string

func TestMain(m *testing.M) {
	nativetest.PluginMain(m, "metal", "github.com/drama-tts/drama/plugins/metal", "drama3-generate", &pluginBin, &standinBin)
}

// TestRefusesOffMacOS: on any OS but macOS the real binary answers
// Describe but refuses Start and Encode with a message naming the OS and
// the plugin to use.
func TestRefusesOffMacOS(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("this is macOS")
	}
	p := enginetest.Subprocess(t, pluginBin)
	ctx := context.Background()
	d, err := p.Describe(ctx)
	if err != nil || d.Name != "metal" || !d.Capabilities.VoiceCatalog || d.Capabilities.MaxFrames != 8190 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	err = p.Start(ctx, nativetest.StartRequest(t, native.Metal, standinBin), nil)
	if err == nil || !strings.Contains(err.Error(), "runs on darwin only") || !strings.Contains(err.Error(), "drama-engine-cuda") {
		t.Errorf("start: %v, want a refusal naming darwin and drama-engine-cuda", err)
	}
	if _, err := p.Encode(ctx, engine.EncodeRequest{Clips: []engine.Clip{{ID: "a", Data: nativetest.WAVClip(1, 100)}}}, nil); err == nil {
		t.Error("encode: want a refusal")
	}
}

// TestConformance runs the suite against the real binary on macOS.
func TestConformance(t *testing.T) {
	if runtime.GOOS != "darwin" {
		t.Skip("the Metal plugin runs on macOS; elsewhere engine/native runs this suite with the flavor forced")
	}
	p := enginetest.Subprocess(t, pluginBin)
	enginetest.Run(t, nativetest.SuiteConfig(t, p, native.Metal, standinBin))
}
