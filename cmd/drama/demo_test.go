package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runDemo runs scripts/demo.sh on the test's binaries in a directory of its
// own, with extra environment.
func runDemo(t *testing.T, env ...string) (string, error) {
	t.Helper()
	bin := binaries(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the demo needs curl")
	}
	cmd := exec.Command("../../scripts/demo.sh")
	cmd.Env = append(os.Environ(), append([]string{"BIN=" + bin, "DEMO=" + filepath.Join(t.TempDir(), "demo")}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestDemoPicksFreePortsAndEndsWithANextStep(t *testing.T) {
	out, err := runDemo(t)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if !strings.Contains(out, "\nnext: serve the demo root yourself") || !strings.Contains(out, "drama say \"Hello there.\" -o hello.wav") {
		t.Fatalf("the demo must end with a next step:\n%s", out)
	}
	if strings.Contains(out, "--admission off") {
		t.Error("the demo runs the stand-in as the README does, without --admission off")
	}
}

func TestDemoFailsAtOnceNamingABusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, name := range []string{"DEMO_HUB_PORT", "DEMO_PORT"} {
		out, err := runDemo(t, name+"="+port)
		want := "demo: port " + port + " (" + name + ") is in use"
		if err == nil || !strings.Contains(out, want) || strings.Contains(out, "did not answer") {
			t.Errorf("%s busy: err %v, want %q\n%s", name, err, want, out)
		}
	}
}
