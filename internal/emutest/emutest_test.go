package emutest

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

const childEnv = "EMUTEST_PRINT_EMULATOR"

// TestMain lets the test binary print what Emulator says in a child run
// under qemu-user.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Stdout.WriteString("emulator=" + Emulator() + "\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// emulatorOf runs this test binary, through prefix when one is given, and
// returns what Emulator said there.
func emulatorOf(t *testing.T, prefix ...string) string {
	t.Helper()
	argv := append(prefix, os.Args[0])
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "emulator=")
	if !ok {
		t.Fatalf("%v printed %q", argv, out)
	}
	return v
}

// TestEmulator runs this binary again as it runs now, where Emulator says
// the same as here, and under qemu-user for its own architecture, where
// Emulator names qemu.
func TestEmulator(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has /proc")
	}
	here := Emulator()
	if got := emulatorOf(t); got != here {
		t.Errorf("a child run the same way: Emulator = %q, here %q", got, here)
	}
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	qemu, err := exec.LookPath("qemu-" + arch)
	if arch == "" || err != nil {
		t.Skipf("no qemu-%s to run this binary under (Debian's qemu-user has it)", arch)
	}
	if got := emulatorOf(t, qemu); !strings.Contains(got, "qemu-"+arch) {
		t.Errorf("under %s: Emulator = %q, want qemu named", qemu, got)
	}
}

func TestScale(t *testing.T) {
	t.Setenv(ScaleEnv, "")
	if Scale(time.Second) != time.Second {
		t.Errorf("unset: Scale(1s) = %v", Scale(time.Second))
	}
	t.Setenv(ScaleEnv, "2.5")
	if Scale(time.Second) != 2500*time.Millisecond {
		t.Errorf("2.5: Scale(1s) = %v", Scale(time.Second))
	}
	for _, bad := range []string{"0.5", "x", "-3"} {
		t.Setenv(ScaleEnv, bad)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s=%s: no panic", ScaleEnv, bad)
				}
			}()
			Scale(time.Second)
		}()
	}
}
