package hostcheck

import "testing"

func TestAllowed(t *testing.T) {
	c := New("127.0.0.1:8080", []string{"mirror.lan"})
	for host, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.1": true, "localhost:8080": true, "LOCALHOST": true,
		"mirror.lan:8080": true, "Mirror.LAN": true, "": true,
		"evil.example": false, "evil.example:8080": false, "127.0.0.2:8080": false, "10.0.0.1": false, "[::1]:8080": false,
	} {
		if got := c.Allowed(host); got != want {
			t.Errorf("bound 127.0.0.1, Host %q: %v, want %v", host, got, want)
		}
	}
	wild := New("0.0.0.0:8080", nil)
	wild.names = []string{"box"}
	for host, want := range map[string]bool{"10.1.2.3:8080": true, "[::1]:8080": true, "localhost": true, "BOX:8080": true, "evil.example": false} {
		if got := wild.Allowed(host); got != want {
			t.Errorf("bound 0.0.0.0, Host %q: %v, want %v", host, got, want)
		}
	}
	named := New("localhost:8080", nil)
	for host, want := range map[string]bool{"localhost:8080": true, "127.0.0.1": true, "[::1]:8080": true, "evil.example": false} {
		if got := named.Allowed(host); got != want {
			t.Errorf("bound localhost, Host %q: %v, want %v", host, got, want)
		}
	}
	if !New("", nil).Allowed("evil.example") {
		t.Error("no bound address takes every Host")
	}
	if !New("127.0.0.1:1", []string{"*"}).Allowed("evil.example") {
		t.Error("--allow-host * takes every Host")
	}
}

func TestHostOnly(t *testing.T) {
	for in, want := range map[string]string{"a.b:80": "a.b", "[::1]:80": "::1", "[::1]": "::1", "a.b": "a.b"} {
		if got := HostOnly(in); got != want {
			t.Errorf("HostOnly(%q) = %q, want %q", in, got, want)
		}
	}
}
