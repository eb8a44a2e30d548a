package enginetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/drama-tts/drama/engine"
)

// spawn starts the child standing in for the native server: a long sleep
// in its own process group. The child is watched; an exit that Stop did
// not ask for leaves the engine in PhaseExited with a last-exit note.
func (f *Fake) spawn() (int, error) {
	path, err := exec.LookPath("sleep")
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(path, "86400")
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	f.mu.Lock()
	f.child, f.childDone, f.stopping = cmd, done, false
	f.setPhase(engine.PhaseSpawned)
	f.mu.Unlock()
	go f.wait(cmd, done)
	return cmd.Process.Pid, nil
}

// wait reaps the child and records an unexpected exit.
func (f *Fake) wait(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	close(done)
	if f.child == cmd {
		f.child = nil
	}
	if f.stopping {
		f.setPhase(engine.PhaseStopped)
		return
	}
	f.lastExit = fmt.Sprintf("native process %d exited: %v", cmd.Process.Pid, err)
	f.setPhase(engine.PhaseExited)
}

// Stop ends the child: SIGTERM, then SIGKILL after the grace period.
func (f *Fake) Stop(ctx context.Context, req engine.StopRequest) (engine.StopResult, error) {
	f.mu.Lock()
	cmd, done := f.child, f.childDone
	if cmd == nil {
		f.setPhase(engine.PhaseStopped)
		f.mu.Unlock()
		return engine.StopResult{}, nil
	}
	f.stopping = true
	f.mu.Unlock()
	grace := req.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	res := engine.StopResult{WasRunning: true}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(grace):
		res.Killed = true
		cmd.Process.Kill()
		<-done
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
	}
	res.ExitCode = cmd.ProcessState.ExitCode()
	return res, nil
}

// encodeClip derives deterministic codes from a clip's bytes.
func encodeClip(c engine.Clip) (engine.EncodedClip, error) {
	data := c.Data
	if c.Path != "" {
		b, err := os.ReadFile(c.Path)
		if err != nil {
			return engine.EncodedClip{}, engine.Invalidf("encode: clip %q: %w", c.ID, err)
		}
		data = b
	}
	if len(data) < 2 {
		return engine.EncodedClip{}, engine.Invalidf("encode: clip %q: no audio", c.ID)
	}
	samples := int64(len(data) / 2)
	frames := int((samples + engine.SamplesPerFrame - 1) / engine.SamplesPerFrame)
	codes := make([][]int, engine.NumCodebooks)
	for cb := range codes {
		limit := 1024
		if cb == 0 {
			limit = 4096
		}
		codes[cb] = make([]int, frames)
		for i := range frames {
			codes[cb][i] = (int(data[(i*2*engine.SamplesPerFrame)%len(data)]) * (cb + 7) * (i + 1)) % limit
		}
	}
	return engine.EncodedClip{ClipID: c.ID, Text: c.Text, Codes: codes, Frames: frames, Samples: samples}, nil
}
