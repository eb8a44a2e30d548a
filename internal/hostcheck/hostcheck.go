// Package hostcheck decides whether a request's Host header names the
// server that received it: the guard against DNS rebinding (a web page on
// another name whose name now points here) that drama serve and drama
// mirror serve share. Each server writes its own refusal (421 Misdirected
// Request) in its own error format.
package hostcheck

import (
	"net"
	"os"
	"strings"
)

// Checker holds what a Host header may name for one listener. Build it
// with New; it is safe for concurrent use.
type Checker struct {
	addr  string   // the bound address, host:port ("": every Host)
	allow []string // more names ("*": any)
	names []string // this machine's names, for a wildcard address
}

// New returns the Checker of a listener bound to addr (host:port, as
// net.Listener.Addr gives it) that also takes the names in allow ("*":
// any name). An empty addr takes every Host.
func New(addr string, allow []string) *Checker {
	c := &Checker{addr: addr, allow: allow}
	if name, err := os.Hostname(); err == nil {
		c.names = []string{strings.ToLower(name)}
	}
	return c
}

// Addr is the bound address the Checker was made for: how a client should
// name the server.
func (c *Checker) Addr() string { return c.addr }

// Allowed reports whether a request's Host names this server: the bound
// IP address, localhost for a loopback address, any IP address and this
// machine's names for a wildcard address, or a name the Checker allows.
// Without a bound address every Host is taken, and so is an HTTP/1.0
// request without one (browsers always send it; net/http refuses an
// HTTP/1.1 request without it).
func (c *Checker) Allowed(hostport string) bool {
	if c.addr == "" || hostport == "" {
		return true
	}
	host := strings.ToLower(HostOnly(hostport))
	for _, h := range c.allow {
		if h == "*" || strings.EqualFold(h, host) {
			return true
		}
	}
	bound, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return false
	}
	bip := net.ParseIP(bound)
	ip := net.ParseIP(host)
	switch {
	case bound == "" || (bip != nil && bip.IsUnspecified()):
		return ip != nil || host == "localhost" || c.machineName(host)
	case strings.EqualFold(bound, "localhost"):
		return Loopback(host)
	case bip == nil:
		return strings.EqualFold(bound, host)
	case ip != nil:
		return ip.Equal(bip)
	default:
		return host == "localhost" && bip.IsLoopback()
	}
}

func (c *Checker) machineName(host string) bool {
	for _, n := range c.names {
		if strings.EqualFold(n, host) {
			return true
		}
	}
	return false
}

// Loopback reports whether host (no port) names this machine's loopback
// interface: localhost, or a loopback IP address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostOnly strips the port (and an IPv6 literal's brackets) from a Host
// header.
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// Quote writes a Host header for a message: quoted, or "(empty)".
func Quote(h string) string {
	if h == "" {
		return "(empty)"
	}
	return "\"" + h + "\""
}
