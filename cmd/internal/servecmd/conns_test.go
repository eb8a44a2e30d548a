package servecmd

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// Clients that open connections and leave them idle lock no one out: at
// --max-conns the one idle longest gives way to a new client, whose request
// is answered.
func TestIdleConnectionsLockNoOneOut(t *testing.T) {
	const maxConns = 4
	_, _, addr := serveFake(t, fmt.Sprintf("--max-conns %d", maxConns))
	var idle []net.Conn
	for range 3 * maxConns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		idle = append(idle, conn)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatalf("a new client with %d idle connections open, --max-conns %d: %v", len(idle), maxConns, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /health with %d idle connections open: %d", len(idle), resp.StatusCode)
	}
	closed := 0
	deadline := time.Now().Add(10 * time.Second)
	for _, conn := range idle[:2*maxConns] {
		conn.SetReadDeadline(deadline)
		var ne net.Error
		if _, err := conn.Read(make([]byte, 1)); !(errors.As(err, &ne) && ne.Timeout()) {
			closed++
		}
	}
	if closed < maxConns {
		t.Errorf("%d of the %d oldest idle connections closed, want at least %d", closed, 2*maxConns, maxConns)
	}
}

// --max-conns below 1 is a usage error naming the flag.
func TestMaxConnsRefused(t *testing.T) {
	_, err := parseServe("--max-conns 0")
	if err == nil || cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "--max-conns 0") {
		t.Fatalf("--max-conns 0: %v, want a usage error naming it", err)
	}
}
