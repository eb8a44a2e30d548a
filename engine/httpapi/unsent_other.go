//go:build !linux

package httpapi

import "net"

// boundUnsent is false where writes do not wait on TCP_NOTSENT_LOWAT (it
// bounds only readiness there): the send buffer is bounded instead.
func boundUnsent(net.Conn, int) bool { return false }
