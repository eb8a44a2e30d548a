//go:build !unix

package native

import "net"

// peerClosed cannot peek here: a connection the server closed is found
// when the request on it gets no reply, and the request is sent again on a
// new one (Client.roundTrip).
func peerClosed(net.Conn) bool { return false }
