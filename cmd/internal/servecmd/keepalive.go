package servecmd

import (
	"time"

	"github.com/drama-tts/drama/engine/serve"
)

// keepAliveFlag is --keep-alive, read by serve.ParseKeepAlive: a duration
// or seconds, 0 to unload the engine when each request ends, forever (the
// default) or a negative value to keep it loaded.
type keepAliveFlag struct{ d *time.Duration }

func (k keepAliveFlag) String() string {
	if k.d == nil {
		return serve.KeepForever
	}
	return serve.FormatKeepAlive(*k.d)
}

func (k keepAliveFlag) Set(v string) error {
	d, err := serve.ParseKeepAlive(v)
	if err == nil {
		*k.d = d
	}
	return err
}

func (keepAliveFlag) Type() string { return "duration" }
