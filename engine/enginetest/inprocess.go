package enginetest

import (
	"testing"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/drama-tts/drama/engine"
)

// InProcess serves impl through go-plugin's real gRPC layer inside the test
// process and returns the host's Engine for it. The connection is closed
// when the test ends.
func InProcess(t testing.TB, impl engine.Engine) engine.Engine {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		engine.PluginName: &engine.Plugin{Impl: impl},
	})
	// Closing the client asks the server to shut down over its controller
	// service; stopping the server here as well would race with that stop
	// inside go-plugin.
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(engine.PluginName)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	e, ok := raw.(engine.Engine)
	if !ok {
		t.Fatalf("dispense: want an engine.Engine, got %T", raw)
	}
	return e
}
