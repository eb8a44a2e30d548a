package servecmd

import (
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/supervise"
)

// engineStatus gives the HTTP API the supervisor's status: the supervisor
// is the API's FailureReporter and Restarter as it is, and its
// StatusSource through this.
type engineStatus struct{ sup *supervise.Supervisor }

var (
	_ httpapi.StatusSource    = engineStatus{}
	_ httpapi.FailureReporter = (*supervise.Supervisor)(nil)
	_ httpapi.Restarter       = (*supervise.Supervisor)(nil)
)

// Status reports the engine's state.
func (s engineStatus) Status() httpapi.Status { return httpapi.Status(s.sup.Status()) }
