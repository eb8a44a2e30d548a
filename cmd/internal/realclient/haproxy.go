package realclient

import (
	"os/exec"
	"testing"
)

// HAProxy returns the path of Debian's haproxy (/usr/sbin/haproxy), the load
// balancer the shipped docs/deploy/haproxy.cfg is tested with, or skips the
// test with one line; under DRAMA_REAL_CLIENTS=require a missing haproxy
// fails it.
func HAProxy(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"/usr/sbin/haproxy", "haproxy"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "haproxy", "no /usr/sbin/haproxy and none on PATH", "install Debian's haproxy (apt-get install haproxy)")
	return ""
}
