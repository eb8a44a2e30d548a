package native_test

import (
	"testing"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
)

func newEngine(f *native.Flavor) *native.Engine {
	return native.NewEngine(f, native.EngineOptions{Version: "test", AnyOS: true})
}

var flavors = []*native.Flavor{native.CUDA, native.Metal}

func TestConformanceDirect(t *testing.T) {
	skipUnsupported(t)
	for _, f := range flavors {
		t.Run(f.Name, func(t *testing.T) {
			enginetest.Run(t, nativetest.SuiteConfig(t, newEngine(f), f, standinBin))
		})
	}
}

func TestConformanceInProcess(t *testing.T) {
	skipUnsupported(t)
	for _, f := range flavors {
		t.Run(f.Name, func(t *testing.T) {
			enginetest.Run(t, nativetest.SuiteConfig(t, enginetest.InProcess(t, newEngine(f)), f, standinBin))
		})
	}
}

func TestConformanceSubprocess(t *testing.T) {
	skipUnsupported(t)
	for _, f := range flavors {
		t.Run(f.Name, func(t *testing.T) {
			p := enginetest.Subprocess(t, enginetest.TestBinaryPlugin(t, f.Name), enginetest.ServeEnv+"="+f.Name)
			enginetest.Run(t, nativetest.SuiteConfig(t, p, f, standinBin))
		})
	}
}
