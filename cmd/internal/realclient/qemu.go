package realclient

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// QEMUAarch64 returns the path of Debian's qemu-user emulator for aarch64
// (/usr/bin/qemu-aarch64), which runs linux/arm64 binaries here, or skips
// the test with one line; under DRAMA_REAL_CLIENTS=require a missing one
// fails it. binfmt_misc must run aarch64 executables under it too (what
// scripts/qemu-binfmt.sh registers), since an arm64 drama starts arm64
// plugins.
func QEMUAarch64(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		missing(t, "qemu-aarch64", "not on PATH", "install Debian's qemu-user (apt-get install qemu-user)")
		return ""
	}
	check := exec.Command(filepath.Join(ModuleRoot(t), "scripts", "qemu-binfmt.sh"), "--check")
	if out, err := check.CombinedOutput(); err != nil {
		missing(t, "qemu-aarch64", strings.TrimSpace(string(out)), "run scripts/qemu-binfmt.sh as root")
		return ""
	}
	return p
}
