package native_test

import (
	"os"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
)

// standinBin is the stand-in binary built for the tests that need a real
// engine process.
var standinBin string

func TestMain(m *testing.M) {
	enginetest.ServeChild(map[string]func() engine.Engine{
		"cuda": func() engine.Engine {
			return native.NewEngine(native.CUDA, native.EngineOptions{Version: "test", AnyOS: true})
		},
		"metal": func() engine.Engine {
			return native.NewEngine(native.Metal, native.EngineOptions{Version: "test", AnyOS: true})
		},
	})
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	nativetest.RunWithBinaries(m, "native-test-*", func(dir string) (err error) {
		standinBin, err = nativetest.Build(dir, "tensorfold-standin", nativetest.StandinPackage)
		return err
	})
}

// helperEnv makes the test binary act as a supervisor that launches the
// stand-in and prints its pid, for the parent-death tests.
const helperEnv = "NATIVE_TEST_HELPER"
