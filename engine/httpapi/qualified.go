package httpapi

import (
	"net/http"
)

// Qualification states, as drama qualify's marker check names them.
const (
	Qualified   = "qualified"
	Unqualified = "unqualified"
	Stale       = "stale"
)

// Qualification is whether this host is qualified for the served model:
// whether a passing drama qualify run's marker holds for it.
type Qualification struct {
	State  string // Qualified, Unqualified or Stale
	Detail string // why not, for clients: no local paths
	Hint   string // the command line that qualifies the host
	// Intelligibility is what the qualification found of the replies'
	// words, "word error rate 1.31 %" or "intelligibility not checked";
	// WER the rate itself (0.0131) when it was measured. Reported only
	// while State is Qualified.
	Intelligibility string
	WER             *float64
}

// QualificationSource reports the host's qualification each time it is
// asked (a marker written or made stale meanwhile counts at once).
type QualificationSource interface {
	Qualification() Qualification
}

// qualification returns the host's qualification, and false when the
// server was given no source.
func (s *Server) qualification() (Qualification, bool) {
	if s.cfg.Qualification == nil {
		return Qualification{}, false
	}
	return s.cfg.Qualification.Qualification(), true
}

// notQualified is the 503 a speech request gets under RequireQualified
// while the host is not qualified; nil when it may go on.
func (s *Server) notQualified() *apiError {
	if !s.cfg.RequireQualified {
		return nil
	}
	q, ok := s.qualification()
	if ok && q.State == Qualified {
		return nil
	}
	msg := "not qualified on this host: run " + q.Hint
	if q.Hint == "" {
		msg = "not qualified on this host: run drama qualify"
	}
	if q.Detail != "" {
		msg += " (" + q.Detail + ")"
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "not_qualified", Message: msg}
}
