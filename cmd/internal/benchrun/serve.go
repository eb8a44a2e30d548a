// Package benchrun holds what drama bench and drama qualify both do: start
// a drama serve for a run, load the corpus, count requests on a progress
// display and write the reports.
package benchrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// ServeOptions say how to start a drama serve for a run.
type ServeOptions struct {
	// Drama is the drama binary; "" means this one.
	Drama string
	// Args are extra arguments of drama serve (--engine-bin, --admission,
	// ...), after --root, --variant and --addr.
	Args         []string
	ReadyTimeout time.Duration
	// Grace is how long the server may take to stop after SIGTERM before
	// it is killed.
	Grace time.Duration
	// Started, if set, is called with the server's pid as soon as it runs.
	Started func(pid int)
}

// Served is a drama serve started for a run.
type Served struct {
	URL   string
	PID   int
	Ready time.Duration // from start to ready
	cmd   *exec.Cmd
	done  chan error
	log   *tailBuffer
	once  sync.Once
	grace time.Duration
}

// StartServe starts drama serve on a free loopback port with the root and
// variant of f and waits until it is ready. On failure it stops what it
// started and returns the server's last lines in the error.
func StartServe(ctx context.Context, f *cmdutil.Factory, opts ServeOptions) (*Served, error) {
	drama := opts.Drama
	if drama == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("cannot find the drama binary to start drama serve: %w", err)
		}
		drama = exe
	}
	root, err := f.Root()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--root", root, "--variant", f.Global.Variant, "--addr", addr}, opts.Args...)
	cmd := exec.Command(drama, args...)
	// The server and its client share the key: a DRAMA_API_KEY set for
	// this command makes the server require it and the client send it.
	cmd.Env = os.Environ()
	if key := f.APIKey(); key != "" {
		cmd.Env = append(cmd.Env, cmdutil.APIKeyEnv+"="+key)
	}
	s := &Served{URL: "http://" + addr, cmd: cmd, done: make(chan error, 1), log: &tailBuffer{max: 64 << 10}, grace: opts.Grace}
	if s.grace <= 0 {
		s.grace = 30 * time.Second
	}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start drama serve: %w", err)
	}
	s.PID = cmd.Process.Pid
	if opts.Started != nil {
		opts.Started(s.PID)
	}
	go func() { s.done <- cmd.Wait() }()
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = 15 * time.Minute
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	readyc := make(chan error, 1)
	go func() { readyc <- Client(f, s.URL).WaitReady(rctx) }()
	select {
	case err := <-readyc:
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("drama serve %s was not ready within %s: %w\n%s", strings.Join(args, " "), timeout, err, s.Tail())
		}
	case err := <-s.done:
		s.done <- err
		return nil, fmt.Errorf("drama serve %s exited before it was ready (%v):\n%s", strings.Join(args, " "), err, s.Tail())
	}
	s.Ready = time.Since(start)
	return s, nil
}

// Tail returns the server's last lines of output.
func (s *Served) Tail() string { return strings.TrimSpace(s.log.String()) }

// Stop sends SIGTERM, waits up to the grace period, then kills. It
// returns drama serve's exit error, if any.
func (s *Served) Stop() error {
	var err error
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-s.done:
		case <-time.After(s.grace):
			_ = s.cmd.Process.Kill()
			<-s.done
			err = fmt.Errorf("drama serve did not stop within %s of SIGTERM and was killed", s.grace)
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 0 {
			err = nil
		}
	})
	return err
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("no free loopback port for drama serve: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.buf.String()
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
