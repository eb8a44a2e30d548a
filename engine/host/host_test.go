package host_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/host"
)

func TestOpenDescribeClose(t *testing.T) {
	path := enginetest.TestBinaryPlugin(t, "fake")
	p, err := host.Open(context.Background(), path, host.Options{Env: []string{enginetest.ServeEnv + "=fake"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Describe(context.Background())
	if err != nil || d.Name != "fake" || d.APIVersion != engine.APIVersion {
		t.Fatalf("Describe = %+v, %v", d, err)
	}
	pid := p.PID()
	if err := p.Close(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	if !enginetest.WaitGone(pid, 5*time.Second) {
		t.Fatalf("plugin %d still running after Close", pid)
	}
	if !p.Exited() {
		t.Error("Exited = false after Close")
	}
}

func TestChecksumRefusals(t *testing.T) {
	path := enginetest.TestBinaryPlugin(t, "fake")
	tests := []struct {
		name  string
		sum   string // checksum file content; "-" removes it
		is    error
		words string
	}{
		{"missing", "-", host.ErrChecksumMissing, "sha256sum drama-engine-fake > drama-engine-fake.sha256"},
		{"mismatch", strings.Repeat("ab", 32) + "  drama-engine-fake\n", host.ErrChecksumMismatch, "want abab"},
		{"malformed", "not a checksum\n", host.ErrChecksumMalformed, "line 1"},
		{"other file", strings.Repeat("ab", 32) + "  drama-engine-other\n", host.ErrChecksumMalformed, "no line names drama-engine-fake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(path + host.ChecksumSuffix)
			if tt.sum != "-" {
				os.WriteFile(path+host.ChecksumSuffix, []byte(tt.sum), 0o644)
			}
			_, err := host.Open(context.Background(), path, host.Options{Env: []string{enginetest.ServeEnv + "=fake"}})
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.words) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tt.is, tt.words)
			}
		})
	}
}

func TestBinaryChangedAfterChecksum(t *testing.T) {
	path := enginetest.TestBinaryPlugin(t, "fake")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("tampered"))
	f.Close()
	_, err = host.Open(context.Background(), path, host.Options{})
	var ce *host.ChecksumError
	if !errors.As(err, &ce) || ce.Status != host.ChecksumMismatch || ce.Got == ce.Want {
		t.Fatalf("err = %v, want a checksum mismatch", err)
	}
}

func TestStdoutBreaksHandshake(t *testing.T) {
	path := enginetest.TestBinaryPlugin(t, "fake")
	_, err := host.Open(context.Background(), path, host.Options{Env: []string{enginetest.ServeEnv + "=stdout"}})
	if !errors.Is(err, host.ErrHandshake) || !strings.Contains(err.Error(), "wrote to stdout before its handshake") {
		t.Fatalf("err = %v, want a handshake error about stdout", err)
	}
}

func TestOtherAPIVersionRefused(t *testing.T) {
	path := enginetest.TestBinaryPlugin(t, "fake")
	_, err := host.Open(context.Background(), path, host.Options{Env: []string{api2Env + "=1"}})
	if !errors.Is(err, host.ErrHandshake) || !strings.Contains(err.Error(), "another engine API version (drama speaks 1)") {
		t.Fatalf("err = %v, want a handshake error about the API version", err)
	}
}

func TestForeignBinaryExplained(t *testing.T) {
	path := unixPlugin(t, "Unix exec", "drama-engine-foreign", "\x00\x01 not a program for this machine")
	_, err := host.Open(context.Background(), path, host.Options{})
	if !errors.Is(err, host.ErrHandshake) || !strings.Contains(err.Error(), "is not a program for "+runtime.GOOS) {
		t.Fatalf("err = %v, want a message about the platform", err)
	}
}

func TestNotAPluginFailsHandshake(t *testing.T) {
	path := unixPlugin(t, "needs a shell script", "drama-engine-script", "#!/bin/sh\necho oops >&2\nexit 3\n")
	_, err := host.Open(context.Background(), path, host.Options{StartTimeout: 5 * time.Second})
	if !errors.Is(err, host.ErrHandshake) || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("err = %v, want a handshake error with the plugin's stderr", err)
	}
}

// TestSIGTERMStopsTheEngine sends the plugin SIGTERM, as a dying host's
// parent-death signal does, and wants its native child gone.
func TestSIGTERMStopsTheEngine(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM")
	}
	p := enginetest.Subprocess(t, enginetest.TestBinaryPlugin(t, "fake"), enginetest.ServeEnv+"=fake")
	if err := p.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	h, err := p.Health(context.Background())
	if err != nil || h.PID <= 0 {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	proc, _ := os.FindProcess(p.PID())
	proc.Signal(syscall.SIGTERM)
	for _, pid := range []int{h.PID, p.PID()} {
		if !enginetest.WaitGone(pid, 5*time.Second) {
			t.Fatalf("pid %d still running after SIGTERM to the plugin", pid)
		}
	}
}

// TestKillHostLeavesNoOrphan kills a host outright, repeatedly, and wants its
// plugin and the plugin's native child gone within 2 s each time: 5 trials,
// or $DRAMA_ORPHAN_TRIALS.
func TestKillHostLeavesNoOrphan(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL")
	}
	trials := 5
	if testing.Short() {
		trials = 1
	}
	if n, err := strconv.Atoi(os.Getenv("DRAMA_ORPHAN_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	path := enginetest.TestBinaryPlugin(t, "fake")
	for i := range trials {
		pluginPID, nativePID := startHost(t, path)
		for _, pid := range []int{pluginPID, nativePID} {
			if !enginetest.WaitGone(pid, 2*time.Second) {
				stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				if p, err := os.FindProcess(pid); err == nil {
					p.Kill()
				}
				t.Fatalf("trial %d: pid %d (plugin %d, native %d) still running 2 s after its host was killed: %s", i, pid, pluginPID, nativePID, stat)
			}
		}
	}
}

// startHost runs the test binary as a host of the plugin at path, reads
// the plugin's and native child's pids, and kills the host with SIGKILL.
func startHost(t *testing.T, path string) (int, int) {
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), modeEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pl, nat int
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, serr := fmt.Sscanf(line, "PIDS %d %d", &pl, &nat); err != nil || serr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("host said %q: %v %v", line, err, serr)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return pl, nat
}

// unixPlugin writes content as an executable plugin file named name, with
// its checksum beside it, and returns its path; off Unix the test is
// skipped, for why.
func unixPlugin(t *testing.T, why, name, content string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip(why)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	enginetest.WriteChecksum(t, path)
	return path
}
