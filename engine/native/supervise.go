package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drama-tts/drama/engine"
)

// Defaults of a launch.
const (
	DefaultReadyTimeout = 900 * time.Second
	DefaultPollInterval = 100 * time.Millisecond
	DefaultGrace        = 10 * time.Second
)

// Errors of a launch. An exit is an *ExitError.
var (
	ErrReadyTimeout = errors.New("native: engine not ready before the deadline")
	ErrStalled      = errors.New("native: engine stalled: no output and not ready")
	ErrUnsupported  = errors.New("native: supervising an engine process is supported on Linux and macOS only")
)

// ExitError is the engine process's exit, with the end of its output.
type ExitError struct {
	Code    int    // exit code, or -1 when killed by a signal
	Signal  string // the signal that killed it, if any, by name (SIGKILL)
	Tail    string // the end of its output
	Stopped bool   // it was asked to stop
}

// Error implements error.
func (e *ExitError) Error() string {
	how := "exited with code " + strconv.Itoa(e.Code)
	if e.Signal != "" {
		how = "was killed by " + e.Signal
	}
	s := "native: engine " + how
	if last := lastLines(e.Tail, 5); last != "" {
		s += "; its last output:\n" + last
	}
	return s
}

// lastLines returns the last n lines of s, each indented.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return "  " + strings.Join(lines, "\n  ")
}

// Config is how to launch one engine process.
type Config struct {
	Binary       string   // path of the engine binary, run directly
	Args         []string // its arguments (see Flavor.ServeArgs)
	Env          []string // its complete environment (see Environ)
	Dir          string   // working directory; "" is the current one
	Port         int      // loopback port of its health route
	LogPath      string   // file its output is appended to; "" for none
	RuntimeFile  string   // runtime record naming the child; "" for none
	ReadyTimeout time.Duration
	StallTimeout time.Duration // 0: no stall detection
	PollInterval time.Duration
	// Events receives lifecycle events, from the goroutine that called
	// Launch; it may be nil.
	Events func(engine.LifecycleEvent)
}

// Process is a launched engine.
type Process struct {
	cfg      Config
	cmd      *exec.Cmd
	tail     *engine.Tail
	log      *os.File
	done     chan struct{} // closed once the process was reaped
	exit     *ExitError
	progress chan float64
	output   chan struct{}
	stopMu   sync.Mutex
	stopped  bool
	copies   sync.WaitGroup // the output copiers
}

// progressRE finds a percentage in a log line.
var progressRE = regexp.MustCompile(`(\d{1,3}(?:\.\d+)?)\s*%`)

// Launch starts the engine and waits until its health route answers, while
// watching for its exit (an *ExitError with its output's tail), a stall
// and the deadline. On failure the process is stopped. ctx bounds only the
// wait for readiness.
func Launch(ctx context.Context, cfg Config) (*Process, error) {
	if !supported {
		return nil, ErrUnsupported
	}
	cfg = cfg.withDefaults()
	p := &Process{cfg: cfg, tail: engine.NewTail(0), done: make(chan struct{}),
		progress: make(chan float64, 1), output: make(chan struct{}, 1)}
	if err := p.start(); err != nil {
		return nil, err
	}
	if err := p.writeRuntime(); err != nil {
		p.Stop(DefaultGrace)
		return nil, err
	}
	msg := fmt.Sprintf("started %s (pid %d)", cfg.Binary, p.PID())
	if cfg.LogPath != "" {
		msg += "; its output goes to " + cfg.LogPath
	}
	p.event(engine.PhaseSpawned, msg, -1)
	if err := p.waitReady(ctx); err != nil {
		p.Stop(DefaultGrace)
		return nil, err
	}
	p.event(engine.PhaseReady, "health route answered on port "+strconv.Itoa(cfg.Port), 1)
	return p, nil
}

func (c Config) withDefaults() Config {
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	return c
}

// start spawns the process from a goroutine locked to its OS thread, which
// stays alive until the child is reaped: the parent-death signal fires
// when the thread that forked the child ends.
func (p *Process) start() error {
	cmd := exec.Command(p.cfg.Binary, p.cfg.Args...)
	cmd.Env, cmd.Dir, cmd.SysProcAttr = p.cfg.Env, p.cfg.Dir, sysProcAttr()
	outs, err := p.pipes(cmd)
	if err != nil {
		return err
	}
	p.cmd = cmd
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the child
		err := cmd.Start()
		started <- err
		if err == nil {
			p.reaped(cmd.Wait())
		}
	}()
	err = <-started
	for _, w := range outs {
		w.Close()
	}
	if err != nil {
		p.closeLog()
		return fmt.Errorf("native: start %s: %w", p.cfg.Binary, err)
	}
	return nil
}

// pipes gives the child its own stdout and stderr pipes and starts copying
// them into the log and the tail; it returns the write ends to close once
// the child holds them.
func (p *Process) pipes(cmd *exec.Cmd) ([]*os.File, error) {
	if p.cfg.LogPath != "" {
		rotateLog(p.cfg.LogPath)
		f, err := os.OpenFile(p.cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("native: engine log: %w", err)
		}
		p.log = f
	}
	var ends []*os.File
	mu := new(sync.Mutex)
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, e := range ends {
				e.Close()
			}
			return nil, fmt.Errorf("native: engine output pipe: %w", err)
		}
		ends = append(ends, w)
		p.copies.Add(1)
		go p.copyLines(r, mu)
	}
	cmd.Stdout, cmd.Stderr = ends[0], ends[1]
	return ends, nil
}

// MaxLogSize is the size past which the engine log is moved to
// <log>.1 (replacing an older one) before the next start appends to it.
const MaxLogSize = 16 << 20

func rotateLog(path string) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > MaxLogSize {
		os.Rename(path, path+".1")
	}
}

// copyLines copies the child's output line by line into the log and the
// tail, noting progress and output for stall detection.
func (p *Process) copyLines(r *os.File, mu *sync.Mutex) {
	defer p.copies.Done()
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			mu.Lock()
			p.tail.Write(line)
			if p.log != nil {
				p.log.Write(line)
			}
			mu.Unlock()
			p.note(line)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func (p *Process) note(line []byte) {
	select {
	case p.output <- struct{}{}:
	default:
	}
	m := progressRE.FindSubmatch(line)
	if m == nil {
		return
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || v > 100 {
		return
	}
	select {
	case <-p.progress:
	default:
	}
	p.progress <- v / 100
}

// reaped records the exit once Wait returned.
func (p *Process) reaped(err error) {
	e := &ExitError{Code: p.cmdExitCode(err)}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Code, e.Signal = -1, signalName(ws.Signal())
	}
	p.waitCopies(500 * time.Millisecond)
	e.Tail = p.tail.String()
	p.stopMu.Lock()
	e.Stopped = p.stopped
	p.stopMu.Unlock()
	p.exit = e
	if p.cfg.RuntimeFile != "" {
		removeRuntime(p.cfg.RuntimeFile)
	}
	close(p.done)
	p.closeLog()
}

func (p *Process) cmdExitCode(err error) int {
	if p.cmd.ProcessState != nil {
		return p.cmd.ProcessState.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// waitCopies waits until the output pipes reached their end, at most d: a
// grandchild may hold them open after the child exited.
func (p *Process) waitCopies(d time.Duration) {
	done := make(chan struct{})
	go func() {
		p.copies.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

func (p *Process) closeLog() {
	if p.log != nil {
		p.log.Sync()
		p.log.Close()
	}
}

func (p *Process) writeRuntime() error {
	if p.cfg.RuntimeFile == "" {
		return nil
	}
	pid := p.PID()
	exe, start, err := procIdentity(pid)
	if err != nil {
		return fmt.Errorf("native: identity of engine pid %d: %w", pid, err)
	}
	_, ownerStart, err := procIdentity(os.Getpid())
	if err != nil {
		return fmt.Errorf("native: identity of this process: %w", err)
	}
	rec := RuntimeRecord{PID: pid, StartTime: start, Exe: exe, Port: p.cfg.Port, Started: time.Now().UTC(),
		Owner: os.Getpid(), OwnerStart: ownerStart}
	return WriteRuntimeFile(p.cfg.RuntimeFile, rec)
}

// waitReady polls the health route until it answers.
func (p *Process) waitReady(ctx context.Context) error {
	client := NewClient("127.0.0.1:" + strconv.Itoa(p.cfg.Port))
	defer client.CloseIdle()
	tick := time.NewTicker(p.cfg.PollInterval)
	defer tick.Stop()
	deadline := time.NewTimer(p.cfg.ReadyTimeout)
	defer deadline.Stop()
	lastOutput := time.Now()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("native: waiting for the engine: %w", ctx.Err())
		case <-p.done:
			return p.exit
		case v := <-p.progress:
			p.event(engine.PhaseLoading, fmt.Sprintf("loading %.0f%%", v*100), v)
		case <-p.output:
			lastOutput = time.Now()
		case <-deadline.C:
			return fmt.Errorf("%w (%s)", ErrReadyTimeout, p.cfg.ReadyTimeout)
		case <-tick.C:
			if p.healthy(ctx, client) {
				return nil
			}
			if s := p.cfg.StallTimeout; s > 0 && time.Since(lastOutput) > s {
				return fmt.Errorf("%w for %s", ErrStalled, s)
			}
		}
	}
}

func (p *Process) healthy(ctx context.Context, c *Client) bool {
	hctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	defer cancel()
	return c.Health(hctx) == nil
}

func (p *Process) event(ph engine.Phase, msg string, progress float64) {
	if p.cfg.Events == nil {
		return
	}
	p.cfg.Events(engine.LifecycleEvent{Phase: ph, Message: msg, Progress: progress, PID: p.PID(), Time: time.Now()})
}

// PID returns the engine's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Addr returns the host:port of the engine's HTTP server.
func (p *Process) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.cfg.Port) }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit returns the exit once Done is closed, else nil.
func (p *Process) Exit() *ExitError {
	select {
	case <-p.done:
		return p.exit
	default:
		return nil
	}
}

// Tail returns the end of the engine's output.
func (p *Process) Tail() string { return p.tail.String() }

// Stop sends SIGTERM to the engine's process group, waits up to grace and
// then sends SIGKILL. It returns once the process was reaped; killed says
// the grace period ran out. Stopping an exited process returns its exit.
func (p *Process) Stop(grace time.Duration) (exit *ExitError, killed bool) {
	p.stopMu.Lock()
	p.stopped = true
	p.stopMu.Unlock()
	if grace <= 0 {
		grace = DefaultGrace
	}
	if p.signal(sigTerm) {
		select {
		case <-p.done:
		case <-time.After(grace):
			killed = p.signal(sigKill)
			<-p.done
		}
	}
	<-p.done
	return p.exit, killed
}

// signal sends sig to the group while the leader has not been reaped (so
// its pid cannot have been recycled); false when it already was.
func (p *Process) signal(sig syscall.Signal) bool {
	select {
	case <-p.done:
		return false
	default:
	}
	if err := signalGroup(p.PID(), sig); err != nil {
		p.cmd.Process.Signal(sig)
	}
	return true
}

// Environ builds an explicit environment for the engine from environ (as
// os.Environ gives it): only PATH, HOME, USER, the locale, TMPDIR, the CUDA
// and Metal settings and TENSORFOLD_* variables are kept; extra is added.
func Environ(environ []string, extra ...string) []string {
	keep := map[string]bool{"PATH": true, "HOME": true, "USER": true, "LANG": true, "LC_ALL": true, "TMPDIR": true,
		"CUDA_VISIBLE_DEVICES": true, "NVIDIA_VISIBLE_DEVICES": true, "CUDA_HOME": true, "LD_LIBRARY_PATH": true,
		"MTL_DEBUG_LAYER": true}
	var env []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && (keep[k] || strings.HasPrefix(k, "TENSORFOLD_")) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
