package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/host"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
)

// pluginBin is this plugin built as make build builds it; standinBin the
// stand-in native server it drives in the tests.
var pluginBin, standinBin string

func TestMain(m *testing.M) {
	nativetest.PluginMain(m, "cuda", "github.com/drama-tts/drama/plugins/cuda", "tensorfold-standin", &pluginBin, &standinBin)
}

func linuxOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the CUDA plugin runs on Linux")
	}
}

// TestConformance runs the suite against the real plugin binary as a
// subprocess of this test, driving the stand-in.
func TestConformance(t *testing.T) {
	linuxOnly(t)
	p := enginetest.Subprocess(t, pluginBin)
	enginetest.Run(t, nativetest.SuiteConfig(t, p, native.CUDA, standinBin))
}

// TestChecksumMismatchRefused: a plugin binary that differs from its
// checksum file is refused before it runs.
func TestChecksumMismatchRefused(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, filepath.Base(pluginBin))
	for _, suffix := range []string{"", host.ChecksumSuffix} {
		b, err := os.ReadFile(pluginBin + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "" {
			b = append(b, 0)
		}
		if err := os.WriteFile(bin+suffix, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := host.Open(context.Background(), bin, host.Options{}); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("open a changed plugin: %v, want a checksum refusal", err)
	}
}

// TestDescribe checks what the real binary says about itself.
func TestDescribe(t *testing.T) {
	p := enginetest.Subprocess(t, pluginBin)
	d, err := p.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := d.Capabilities
	if d.Name != "cuda" || d.Engine != "tensorfold-native" || !c.References || !c.LongForm || c.VoiceCatalog || d.MemoryEstimate["nvfp4"] == 0 {
		t.Errorf("describe %+v", d)
	}
	if d.APIVersion != engine.APIVersion || d.OS != runtime.GOOS {
		t.Errorf("describe %+v", d)
	}
}
