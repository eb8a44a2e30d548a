package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/pcmlink"
)

// Defaults for Options.
const (
	DefaultStartTimeout = 15 * time.Second
	DefaultTailSize     = engine.TailSize
	DefaultStopGrace    = 10 * time.Second
)

// Options configure Open.
type Options struct {
	// Logger receives the plugin's log lines; nil discards them.
	Logger hclog.Logger
	// StartTimeout bounds the handshake (DefaultStartTimeout when 0).
	StartTimeout time.Duration
	// Env is added to the plugin's environment (KEY=VALUE).
	Env []string
	// TailSize is how much of the plugin's stderr to keep (DefaultTailSize
	// when 0).
	TailSize int
}

// ErrHandshake is matched by errors.Is for every handshake failure.
var ErrHandshake = errors.New("plugin handshake failed")

// HandshakeError says why a plugin did not start.
type HandshakeError struct {
	Binary string
	Reason string // what went wrong and what to do
	Tail   string // the end of the plugin's stderr
	Err    error
}

// Error returns the reason, the cause and the plugin's last words.
func (e *HandshakeError) Error() string {
	s := fmt.Sprintf("host: plugin %s: %s", e.Binary, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if t := strings.TrimSpace(e.Tail); t != "" {
		s += "\nplugin stderr (last lines):\n" + lastLines(t, 20)
	}
	return s
}

// Unwrap returns the cause.
func (e *HandshakeError) Unwrap() error { return e.Err }

// Is matches ErrHandshake.
func (e *HandshakeError) Is(target error) bool { return target == ErrHandshake }

// Plugin is a started plugin process and the Engine it serves.
type Plugin struct {
	engine.Engine
	Path   string
	client *plugin.Client
	link   *pcmlink.Receiver // nil where the system has no socket pairs
	tail   *engine.Tail
	thread chan struct{} // closed to let the starting thread go
	once   sync.Once
}

// Open verifies the plugin binary at path against its checksum file, starts
// it and completes the handshake. The caller must Close the plugin.
func Open(ctx context.Context, path string, opts Options) (*Plugin, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("host: plugin %s: %w", path, err)
	}
	// go-plugin's SecureConfig hashes the binary right before it starts it;
	// reading the recorded sum here and hashing once keeps start fast.
	sum, err := ReadChecksum(abs)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults(abs)
	p := &Plugin{Path: abs, tail: engine.NewTail(opts.TailSize), thread: make(chan struct{})}
	cfg := p.clientConfig(abs, sum, opts)
	link, theirs, err := pcmlink.Pair()
	if err != nil {
		opts.Logger.Debug("no PCM link: audio goes over gRPC", "error", err)
	} else {
		p.link = link
		cfg.Cmd.ExtraFiles = []*os.File{theirs}
		cfg.Cmd.Env = append(cfg.Cmd.Env, pcmlink.EnvFD+"=3") // ExtraFiles[0] is descriptor 3
		cfg.VersionedPlugins = engine.HostPlugins(link)
	}
	p.client = plugin.NewClient(cfg)
	err = p.start(ctx)
	if theirs != nil {
		theirs.Close() // the plugin holds its own copy from here
	}
	if err != nil {
		if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			if _, verr := Verify(abs); verr != nil {
				return nil, verr
			}
		}
		return nil, p.handshakeError(err)
	}
	raw, err := p.rpc()
	if err != nil {
		p.kill()
		return nil, p.handshakeError(err)
	}
	p.Engine = raw
	return p, nil
}

func (o Options) withDefaults(path string) Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.TailSize <= 0 {
		o.TailSize = DefaultTailSize
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	o.Logger = o.Logger.Named(filepath.Base(path))
	return o
}

// clientConfig is the go-plugin configuration for one plugin.
func (p *Plugin) clientConfig(path string, sum []byte, o Options) *plugin.ClientConfig {
	cmd := exec.Command(path)
	cmd.Env = append(append(os.Environ(), o.Env...), engine.HostPIDEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = pluginAttr()
	return &plugin.ClientConfig{
		HandshakeConfig:  engine.Handshake,
		VersionedPlugins: engine.VersionedPlugins(nil),
		Cmd:              cmd,
		SkipHostEnv:      true,
		SecureConfig:     &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
		AutoMTLS:         true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true,
		StartTimeout:     o.StartTimeout,
		Logger:           o.Logger,
		Stderr:           p.tail,
		GRPCDialOptions:  engine.DialOptions(),
	}
}

// start runs the handshake from a goroutine locked to its OS thread that
// stays until the plugin is closed: Linux's parent-death signal fires when
// the thread that started the child ends, not the process.
func (p *Plugin) start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		_, err := p.client.Start()
		errc <- err
		<-p.thread
		runtime.UnlockOSThread()
	}()
	select {
	case err := <-errc:
		if err != nil {
			p.kill()
		}
		return err
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	}
}

// rpc dispenses the engine.
func (p *Plugin) rpc() (engine.Engine, error) {
	rpc, err := p.client.Client()
	if err != nil {
		return nil, err
	}
	raw, err := rpc.Dispense(engine.PluginName)
	if err != nil {
		return nil, err
	}
	e, ok := raw.(engine.Engine)
	if !ok {
		return nil, fmt.Errorf("dispensed %T, want an engine", raw)
	}
	return e, nil
}

// handshakeError explains a failed start in the user's terms.
func (p *Plugin) handshakeError(err error) error {
	he := &HandshakeError{Binary: p.Path, Err: err}
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		he.Reason = "start interrupted"
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		he.Reason = "wrote to stdout before its handshake; a plugin must log to stderr only (stdout carries the handshake), and the file must be a drama engine plugin built for " + runtime.GOOS + "/" + runtime.GOARCH
		he.Err = nil
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		he.Reason = "no handshake within the start timeout; the plugin may be hung or not a drama engine plugin"
	case strings.Contains(strings.ToLower(msg), "incompatible api version"):
		he.Reason = fmt.Sprintf("speaks another engine API version (drama speaks %d); install the plugin built with this drama", engine.APIVersion)
	case strings.Contains(msg, "exec format error"):
		he.Reason = "is not a program for " + runtime.GOOS + "/" + runtime.GOARCH
		if bi, err := ReadBinaryInfo(p.Path); err == nil && bi.OS != "" {
			he.Reason += " (it was built for " + bi.OS + "/" + bi.Arch + "); install the plugin built for this machine"
		}
	case strings.Contains(msg, "plugin exited before we could connect"):
		he.Reason = "exited during the handshake"
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		he.Reason = "the binary changed between its checksum check and its start; check who is writing to it"
	default:
		he.Reason = "start failed"
	}
	time.Sleep(20 * time.Millisecond) // let the stderr reader catch the last lines
	he.Tail = p.tail.String()
	return he
}

// Tail returns the end of the plugin's stderr.
func (p *Plugin) Tail() string { return p.tail.String() }

// Exited reports whether the plugin process has ended.
func (p *Plugin) Exited() bool { return p.client.Exited() }

// Close stops the engine (within grace, DefaultStopGrace when 0) and then
// the plugin process. It is safe to call more than once.
func (p *Plugin) Close(ctx context.Context, grace time.Duration) error {
	var err error
	p.once.Do(func() {
		if grace <= 0 {
			grace = DefaultStopGrace
		}
		if !p.client.Exited() && p.Engine != nil {
			sctx, cancel := context.WithTimeout(ctx, grace+2*time.Second)
			_, err = p.Engine.Stop(sctx, engine.StopRequest{Grace: grace})
			cancel()
		}
		p.client.Kill()
		p.closeLink()
		close(p.thread)
	})
	return err
}

// LinkBytes returns how many bytes of PCM came over the plugin's PCM link
// rather than its gRPC stream (pcmlink): 0 for a plugin without one.
func (p *Plugin) LinkBytes() int64 {
	if p.link == nil {
		return 0
	}
	return p.link.Bytes()
}

func (p *Plugin) closeLink() {
	if p.link != nil {
		p.link.Close()
	}
}

// kill ends the plugin process without stopping the engine first.
func (p *Plugin) kill() {
	p.once.Do(func() {
		p.client.Kill()
		p.closeLink()
		close(p.thread)
	})
}

// CleanupAll kills every plugin process this host started. Call it once on
// the way out (deferred in main), after closing plugins in order.
func CleanupAll() { plugin.CleanupClients() }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PID returns the plugin process's id, or 0 when it is not running.
func (p *Plugin) PID() int {
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}
