package servecmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// keepAliveFlag is --keep-alive, read as ollama reads its keep-alive: a
// duration (5m, 1h30m) or a number of seconds, 0 to unload the engine when
// each request ends, and a negative value, or "forever", to keep it
// loaded for as long as drama serve runs (the default).
type keepAliveFlag struct{ d *time.Duration }

// keepForever is the --keep-alive value that never unloads the engine.
const keepForever = "forever"

func (k keepAliveFlag) String() string {
	if k.d == nil || *k.d < 0 {
		return keepForever
	}
	return k.d.String()
}

func (k keepAliveFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, keepForever) {
		*k.d = -1
		return nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		*k.d = time.Duration(n) * time.Second
		if n < 0 {
			*k.d = -1
		}
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration (10m, 1h), seconds (600), 0 (unload after each request) or forever")
	}
	*k.d = max(d, -1)
	return nil
}

func (keepAliveFlag) Type() string { return "duration" }
