package mirror

import (
	"net/http"

	"github.com/drama-tts/drama/internal/hostcheck"
)

// Guard returns h (a Server, or its CDN handler) for a listener bound to
// addr: a request whose Host names neither addr, nor localhost for a
// loopback address, nor (for a wildcard address) an IP address or this
// machine's name, nor one of allow ("*": any), is answered 421 Misdirected
// Request. It is what keeps a web page whose DNS name its owner has
// pointed at 127.0.0.1 (DNS rebinding) from reading what the mirror
// serves, the check drama serve makes (internal/hostcheck).
func Guard(addr string, allow []string, h http.Handler) http.Handler {
	hosts := hostcheck.New(addr, allow)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.Allowed(r.Host) {
			hubError(w, http.StatusMisdirectedRequest, "",
				"Host "+hostcheck.Quote(r.Host)+" is not an address this mirror listens on: use "+hosts.Addr()+
					", or start drama mirror serve with --allow-host "+hostcheck.HostOnly(r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}
