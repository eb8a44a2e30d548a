package serve

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine/supervise"
)

// KeepForever is the keep-alive that never unloads the engine, as
// ParseKeepAlive reads it and FormatKeepAlive writes it.
const KeepForever = "forever"

// ParseKeepAlive reads a keep-alive as ollama reads its own: a duration
// (5m, 1h30m) or a number of seconds, 0 to unload the engine when each
// request ends, and a negative value, or "forever", to keep it loaded for
// as long as drama serve runs (-1, as Config.KeepAlive takes it).
func ParseKeepAlive(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, KeepForever) {
		return -1, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return -1, nil
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errors.New("want a duration (10m, 1h), seconds (600), 0 (unload after each request) or forever")
	}
	return max(d, -1), nil
}

// FormatKeepAlive writes a keep-alive as ParseKeepAlive reads it.
func FormatKeepAlive(d time.Duration) string {
	if d < 0 {
		return KeepForever
	}
	return d.String()
}

// supervisorKeepAlive is Config.KeepAlive as supervise.Supervisor.KeepAlive
// takes it.
func supervisorKeepAlive(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0 // never unload
	case d == 0:
		return supervise.UnloadAtOnce
	}
	return d
}

// keepAliveWords says what the keep-alive does, for the log.
func keepAliveWords(d time.Duration) string {
	switch {
	case d < 0:
		return "the engine stays loaded"
	case d == 0:
		return "the engine unloads when each request ends; the next request loads it"
	}
	return "the engine unloads after " + d.String() + " without a request; the next request loads it"
}
