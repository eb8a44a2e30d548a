package httpapi

import (
	"context"
	"time"
)

type queueWaitKey struct{}

// WithQueueWait returns a context for a request to POST /v1/audio/speech
// under which the server calls fn once with the time the request waited in
// the queue for the engine, when it gets its turn. An access log wraps the
// handler and sets it.
func WithQueueWait(ctx context.Context, fn func(time.Duration)) context.Context {
	return context.WithValue(ctx, queueWaitKey{}, fn)
}

func reportQueueWait(ctx context.Context, d time.Duration) {
	if fn, ok := ctx.Value(queueWaitKey{}).(func(time.Duration)); ok && fn != nil {
		fn(d)
	}
}
