package native

import (
	"context"
	"time"
)

// ProcIdentity exposes procIdentity to the tests.
var ProcIdentity = procIdentity

// SameExe exposes sameExe to the tests.
var SameExe = sameExe

// LaunchRetryingPort exposes launchRetryingPort to the tests.
var LaunchRetryingPort = launchRetryingPort

// SetBusyClock makes c's busy retry read now and pause with sleep.
func SetBusyClock(c *Client, now func() time.Time, sleep func(context.Context, time.Duration) error) {
	c.now, c.sleep = now, sleep
}
