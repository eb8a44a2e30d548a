package realclient

import (
	"os/exec"
	"testing"
)

// Chromium returns the path of a headless-capable Chromium (Debian's
// chromium package: /usr/bin/chromium), or skips the test with one line;
// under DRAMA_REAL_CLIENTS=require a missing Chromium fails it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "chromium", "no /usr/bin/chromium and none on PATH", "install Debian's chromium (apt-get install chromium)")
	return ""
}
