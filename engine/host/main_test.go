package host_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/host"
)

// modeEnv makes the re-executed test binary act as a host for the kill
// tests: it opens the plugin named by the variable, starts its engine,
// prints "PIDS <plugin> <native>" and waits to be killed.
const modeEnv = "DRAMA_HOSTTEST_HOST"

// api2Env makes the re-executed test binary a plugin of engine API 2 only.
const api2Env = "DRAMA_HOSTTEST_API2"

func serveAPI2() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  engine.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{2: {engine.PluginName: &engine.Plugin{Impl: enginetest.NewFake()}}},
	})
	os.Exit(0)
}

// nolinkEnv makes the re-executed test binary a plugin that leaves the
// host's PCM link unused, as a plugin built before it does.
const nolinkEnv = "DRAMA_HOSTTEST_NOLINK"

func serveWithoutLink() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  engine.Handshake,
		VersionedPlugins: engine.VersionedPlugins(sizedFake()),
		GRPCServer:       plugin.DefaultGRPCServer,
	})
	os.Exit(0)
}

// sizedFake is the fake engine without pauses, saying a whole
// synthesis's size in its header as the native engine does.
func sizedFake() engine.Engine {
	f := enginetest.NewFake()
	f.FrameDelay, f.Sized = 0, true
	return f
}

func TestMain(m *testing.M) {
	enginetest.ServeChild(map[string]func() engine.Engine{
		"fake": func() engine.Engine { return enginetest.NewFake() },
		"fast": func() engine.Engine {
			f := enginetest.NewFake()
			f.FrameDelay = 0
			return f
		},
		"sized": sizedFake,
		"stdout": func() engine.Engine {
			fmt.Println("hello from a plugin that prints")
			return enginetest.NewFake()
		},
	})
	if os.Getenv(api2Env) != "" {
		serveAPI2()
		return
	}
	if os.Getenv(nolinkEnv) != "" {
		serveWithoutLink()
		return
	}
	if path := os.Getenv(modeEnv); path != "" {
		os.Exit(actAsHost(path))
	}
	os.Exit(m.Run())
}

func actAsHost(path string) int {
	ctx := context.Background()
	p, err := host.Open(ctx, path, host.Options{Env: []string{enginetest.ServeEnv + "=fake"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var native int
	err = p.Start(ctx, engine.StartRequest{}, func(e engine.LifecycleEvent) {
		if e.PID > 0 {
			native = e.PID
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "PIDS %d %d\n", p.PID(), native)
	w.Flush()
	time.Sleep(time.Hour)
	return 0
}
