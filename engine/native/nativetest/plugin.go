package nativetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/host"
	"github.com/drama-tts/drama/internal/filehash"
)

// BuildPlugin builds the plugin main package pkg as dir/drama-engine-name
// with its checksum file beside it, as make build does.
func BuildPlugin(dir, name, pkg string) (string, error) {
	bin, err := Build(dir, host.BinaryName(name), pkg)
	if err != nil {
		return "", err
	}
	sum, _, err := filehash.SHA256(context.Background(), bin, nil)
	if err != nil {
		return "", err
	}
	line := sum + "  " + filepath.Base(bin) + "\n"
	return bin, os.WriteFile(bin+host.ChecksumSuffix, []byte(line), 0o644)
}

// hostEnv makes a test binary act as a drama host (see HostMain).
const hostEnv = "NATIVETEST_HOST"

// PluginMain is the TestMain of a plugin's tests: it turns a re-executed
// test binary into a host (HostMain), builds the plugin main package pkg
// as drama-engine-name and the stand-in native server as standinName in a
// temporary directory, sets *plugin and *standin to their paths, runs the
// tests, removes the directory and exits with the tests' code.
func PluginMain(m *testing.M, name, pkg, standinName string, plugin, standin *string) {
	HostMain()
	RunWithBinaries(m, name+"-plugin-test-*", func(dir string) (err error) {
		if *plugin, err = BuildPlugin(dir, name, pkg); err == nil {
			*standin, err = Build(dir, standinName, StandinPackage)
		}
		return err
	})
}

// RunWithBinaries is the end of a TestMain whose tests need binaries
// built first: build builds them into a new temporary directory (named
// by pattern, as os.MkdirTemp takes it), the tests run, the directory is
// removed and the process exits with the tests' code. A failed build
// exits 1 with its error.
func RunWithBinaries(m *testing.M, pattern string, build func(dir string) error) {
	dir, err := os.MkdirTemp("", pattern)
	if err == nil {
		err = build(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// HostMain, called first in TestMain, turns a re-executed test binary into
// a host: it opens the plugin named in its environment, starts the engine
// with the request given there, prints "pids PLUGIN NATIVE" and waits to
// be killed. It returns when the binary was not run as a host.
func HostMain() {
	spec := os.Getenv(hostEnv)
	if spec == "" {
		return
	}
	var h struct {
		Plugin string
		Start  engine.StartRequest
	}
	if err := json.Unmarshal([]byte(spec), &h); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	ctx := context.Background()
	p, err := host.Open(ctx, h.Plugin, host.Options{})
	if err == nil {
		err = p.Start(ctx, h.Start, nil)
	}
	var hl engine.Health
	if err == nil {
		hl, err = p.Health(ctx)
	}
	if err != nil {
		fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
	fmt.Printf("pids %d %d\n", p.PID(), hl.PID)
	select {}
}

// StartHost runs the test binary as a host of the plugin at path, started
// with req, and returns the host process with the plugin's and the native
// engine's pids. The caller kills the host.
func StartHost(t testing.TB, path string, req engine.StartRequest) (host *exec.Cmd, pluginPID, nativePID int) {
	t.Helper()
	spec, _ := json.Marshal(map[string]any{"Plugin": path, "Start": req})
	cmd, line := Reexec(t, hostEnv+"="+string(spec))
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "pids" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("host said %q", line)
	}
	pluginPID, _ = strconv.Atoi(f[1])
	nativePID, _ = strconv.Atoi(f[2])
	return cmd, pluginPID, nativePID
}

// Reexec starts the test binary again, running no test, with env added to
// its environment (a TestMain that sees it becomes a helper process), and
// returns it with the first line it prints. The caller kills it.
func Reexec(t testing.TB, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	return cmd, line
}
