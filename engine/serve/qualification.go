package serve

import (
	"context"
	"log/slog"
	"strings"

	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/qualify"
)

// Qualification reports whether drama qualify's marker holds for the
// served variant on this host with the engine binary in use; it reads the
// marker at each call (httpapi.QualificationSource).
type Qualification struct {
	Root string
	// Want is what a marker must be bound to: this host, the variant's
	// pins and the engine binary's sha256; Err says it could not be
	// worked out.
	Want qualify.Binding
	Err  error
	// Hint is the drama qualify command that qualifies the host.
	Hint string
}

// Check returns the marker check and, for the log, its reason.
func (q *Qualification) Check() (httpapi.Qualification, string) {
	out := httpapi.Qualification{State: httpapi.Unqualified, Hint: q.Hint}
	if q.Err != nil {
		out.Detail = "what a marker must be bound to could not be worked out"
		return out, q.Err.Error()
	}
	st := qualify.Check(q.Root, q.Want)
	switch st.State {
	case qualify.Qualified:
		out.State = httpapi.Qualified
		out.Intelligibility, out.WER = st.Marker.Intelligibility.Short(), st.Marker.Intelligibility.WER
	case qualify.Stale:
		out.State = httpapi.Stale
		got := st.Marker.Binding()
		var what []string
		if got.Host != q.Want.Host {
			what = append(what, "another host")
		}
		if got.PinsSHA256 != q.Want.PinsSHA256 {
			what = append(what, "other pins")
		}
		if got.NativeSHA256 != q.Want.NativeSHA256 {
			what = append(what, "another engine binary")
		}
		out.Detail = "its marker is stale: it was made for " + strings.Join(what, ", ")
	case qualify.Unqualified:
		switch {
		case st.Marker != nil:
			out.Detail = "its marker records no passing run"
		case st.Reason == qualify.NoMarker:
			out.Detail = qualify.NoMarker
		default:
			out.Detail = "its marker cannot be read"
		}
	}
	return out, st.Reason
}

// Qualification implements httpapi.QualificationSource.
func (q *Qualification) Qualification() httpapi.Qualification {
	out, _ := q.Check()
	return out
}

// Log says at start whether the host is qualified: at info level, or at
// warn when required (speech is answered 503 until it is), with the drama
// qualify command that qualifies it.
func (q *Qualification) Log(ctx context.Context, logger *slog.Logger, required bool) {
	st, reason := q.Check()
	if st.State == httpapi.Qualified {
		logger.Info("qualified on this host", "variant", q.Want.Variant)
		return
	}
	level := slog.LevelInfo
	if required {
		level = slog.LevelWarn
		reason += "; speech requests are answered 503 until it is (--require-qualified)"
	}
	logger.Log(ctx, level, "not qualified on this host: run "+st.Hint, "qualification", st.State, "reason", reason)
}
