package engine

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/drama-tts/drama/engine/enginepb"
	"github.com/drama-tts/drama/engine/pcmlink"
)

// PluginName is the name under which a plugin binary offers its engine.
const PluginName = "engine"

// MaxMessage is the largest gRPC message either side accepts: 64 MiB, well
// above gRPC's 4 MiB default, so clips and long reference lists fit.
const MaxMessage = 64 << 20

// Handshake is the go-plugin handshake shared by drama and every engine
// plugin. The cookie only keeps a plugin binary from being run by hand by
// mistake; it is not a secret.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  APIVersion,
	MagicCookieKey:   "DRAMA_ENGINE_PLUGIN",
	MagicCookieValue: "8f3d2b7c1e6a4f09b5d8c3a2e1f7064b",
}

// Plugin is the go-plugin glue for an Engine: the host sets no Impl and
// dispenses an Engine; a plugin sets Impl to the engine it serves. Link is
// the PCM link between them (pcmlink), when there is one: the host's
// receiving end, or the plugin's sending end.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl       Engine
	HostLink   *pcmlink.Receiver
	PluginLink *pcmlink.Sender
}

// GRPCServer registers the engine service for p.Impl.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	registerEngine(s, p.Impl, p.PluginLink)
	return nil
}

// GRPCClient returns an Engine over conn.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &grpcClient{c: pb.NewEngineClient(conn), link: p.HostLink}, nil
}

// VersionedPlugins returns the plugin sets by API version, with impl
// served (nil on the host side).
func VersionedPlugins(impl Engine) map[int]plugin.PluginSet {
	return pluginSet(&Plugin{Impl: impl})
}

// HostPlugins returns the host's plugin sets by API version, with link the
// host's end of the PCM link it hands the plugin (nil for none).
func HostPlugins(link *pcmlink.Receiver) map[int]plugin.PluginSet {
	return pluginSet(&Plugin{HostLink: link})
}

func pluginSet(p *Plugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{APIVersion: {PluginName: p}}
}

// ServerOptions are the gRPC server options a plugin serves with: message
// limits raised to MaxMessage.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessage), grpc.MaxSendMsgSize(MaxMessage)}
}

// DialOptions are the gRPC dial options the host uses: message limits
// raised to MaxMessage.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessage), grpc.MaxCallSendMsgSize(MaxMessage))}
}

// NewLogger returns the logger a plugin should use: hclog JSON on stderr,
// which the host turns into structured log lines. A plugin never writes to
// stdout: the go-plugin handshake lives there.
func NewLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Output: os.Stderr, JSONFormat: true, Level: hclog.Info})
}

// stopGrace bounds the Stop a plugin makes on its way out.
const stopGrace = 10 * time.Second

// Serve runs impl as an engine plugin; call it from a plugin's main. It
// returns when the host has shut the plugin down, after stopping impl.
//
// The plugin also ends, stopping impl first, when its parent dies: it
// asks the kernel for SIGTERM on its parent's death where the OS can
// (Linux), watches its parent process on every OS, and treats SIGTERM as
// a request to stop.
func Serve(impl Engine) {
	logger := NewLogger("engine")
	// With the host gone, a log line to stderr would raise SIGPIPE and end
	// the plugin before it stops its engine; an ignored SIGPIPE makes it a
	// write error instead.
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		watchParent(ctx, hostPID(), parentPoll)
		if ctx.Err() != nil {
			return // Serve is returning: it stops impl itself
		}
		logger.Warn("parent process gone: stopping the engine")
		shutdown(impl, logger)
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; ok {
			logger.Info("SIGTERM: stopping the engine")
			shutdown(impl, logger)
		}
	}()
	setParentDeathSignal(logger)
	link, err := pcmlink.FromEnv()
	if err != nil {
		logger.Warn("no PCM link: audio goes over gRPC", "error", err)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: pluginSet(&Plugin{Impl: impl, PluginLink: link}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, ServerOptions()...)...)
		},
		Logger: logger,
	})
	signal.Stop(sigs)
	stopImpl(impl, logger)
}

// shutdown stops impl and exits the process with status 0: the plugin
// was asked to go (SIGTERM) or has no host left to serve.
func shutdown(impl Engine, logger hclog.Logger) {
	stopImpl(impl, logger)
	os.Exit(0)
}

func stopImpl(impl Engine, logger hclog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace+2*time.Second)
	defer cancel()
	if _, err := impl.Stop(ctx, StopRequest{Grace: stopGrace}); err != nil {
		logger.Error("stop on exit", "error", err)
	}
}

// HostPIDEnv is the variable in which the host gives a plugin its pid, so a
// plugin whose host died before it could look is not fooled by the process
// it was handed to.
const HostPIDEnv = "DRAMA_HOST_PID"

// hostPID returns the pid of the host: $DRAMA_HOST_PID when set, else the
// parent's pid.
func hostPID() int {
	if v, err := strconv.Atoi(os.Getenv(HostPIDEnv)); err == nil && v > 0 {
		return v
	}
	return os.Getppid()
}

// parentPoll is how often the parent watcher looks.
const parentPoll = 250 * time.Millisecond

// watchParent returns when the process's parent is no longer ppid (it died
// and the process was re-parented) or ctx ends.
func watchParent(ctx context.Context, ppid int, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if os.Getppid() != ppid {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
