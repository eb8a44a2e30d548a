package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/drama-tts/drama/voices"
)

// accessProbes are the routes load balancers poll; their access lines are at
// debug level so they do not bury the requests.
var accessProbes = map[string]bool{"/health": true, "/ready": true, "/metrics": true}

// AccessLog logs one line per request when its reply ends: request id,
// method, path, status, how the reply ended (outcome: complete, error, or
// cut when a reply that began under its 200 was cut short) and the error
// code of an error or a cut (error: engine_failed, client_stalled,
// client_closed, ...), bytes and duration, the name of the API key it
// carried (never the key), and for speech the voice (with references of
// the request's own, the sha256 of each one's codes, as a voice file's
// codes_sha256), the format, the time in the queue, the time to the first
// audio byte and the real-time factor.
func AccessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := &accessEntry{start: time.Now(), rec: &Recorder{ResponseWriter: w}}
		r = e.watch(r)
		defer func() {
			level := slog.LevelInfo
			if accessProbes[r.URL.Path] && r.Method == http.MethodGet {
				level = slog.LevelDebug
			}
			log.Log(r.Context(), level, "request", e.attrs(w.Header(), r)...)
		}()
		next.ServeHTTP(e.rec, r)
	})
}

// accessEntry is what the access log learns of one request while it is
// answered: the reply as recorded, what the handlers report (the key's
// name, the outcome, the time in the queue) and, for speech, the fields
// of the request's body it logs.
type accessEntry struct {
	start  time.Time
	rec    *Recorder
	speech bool
	sp     struct {
		Voice      string `json:"voice"`
		Format     string `json:"response_format"`
		References []struct {
			Codes voices.Codes `json:"vq_codes"`
		} `json:"references"`
	}
	mu      sync.Mutex // the handlers' reports below
	key     string
	outcome Outcome
	wait    time.Duration
	waited  bool
}

// watch returns r with the hooks through which the handlers report to e
// and, for speech, reads the body's fields ahead, leaving the body whole
// for the handler.
func (e *accessEntry) watch(r *http.Request) *http.Request {
	ctx := WithKeyName(r.Context(), func(name string) {
		e.mu.Lock()
		e.key = name
		e.mu.Unlock()
	})
	ctx = WithOutcome(ctx, func(o Outcome) {
		e.mu.Lock()
		e.outcome = o
		e.mu.Unlock()
	})
	e.speech = r.Method == http.MethodPost && r.URL.Path == "/v1/audio/speech"
	if e.speech {
		head, _ := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		_ = json.Unmarshal(head, &e.sp)
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		ctx = WithQueueWait(ctx, func(d time.Duration) {
			e.mu.Lock()
			e.wait, e.waited = d, true
			e.mu.Unlock()
		})
	}
	return r.WithContext(ctx)
}

// attrs are the access line's attributes once the reply to r, whose
// headers are h, has ended.
func (e *accessEntry) attrs(h http.Header, r *http.Request) []any {
	e.mu.Lock()
	defer e.mu.Unlock()
	ended := "complete"
	switch {
	case e.outcome.Cut:
		ended = "cut"
	case e.rec.Status() >= 400:
		ended = "error"
	}
	attrs := []any{"id", h.Get("X-Request-Id"), "method", r.Method, "path", r.URL.Path,
		"status", e.rec.Status(), "outcome", ended}
	if e.outcome.Code != "" {
		attrs = append(attrs, "error", e.outcome.Code)
	}
	attrs = append(attrs, "bytes", e.rec.Written(), "duration_ms", time.Since(e.start).Milliseconds())
	if e.key != "" {
		attrs = append(attrs, "key", e.key)
	}
	if e.speech {
		attrs = append(attrs, e.speechAttrs(h)...)
	}
	return attrs
}

// speechAttrs are a speech request's own attributes: the voice (inline for
// references of the request's own, with the sha256 of each one's codes),
// the format, the time in the queue and, for a reply sent under its 200,
// the time to the first audio byte and the real-time factor. e.mu is held.
func (e *accessEntry) speechAttrs(h http.Header) []any {
	format := cmp.Or(e.sp.Format, "wav")
	voice := e.sp.Voice
	switch {
	case voice == "" && len(e.sp.References) > 0:
		voice = "inline" // the engine's voice with the request's references
	case voice == "":
		voice = "default"
	}
	attrs := []any{"voice", voice, "format", format}
	if len(e.sp.References) > 0 {
		sums := make([]string, len(e.sp.References))
		for i, ref := range e.sp.References {
			sums[i] = ref.Codes.SHA256()
		}
		attrs = append(attrs, "references_sha256", sums)
	}
	if e.waited {
		attrs = append(attrs, "queue_wait_ms", e.wait.Milliseconds())
	}
	if first := e.rec.First(); !first.IsZero() && e.rec.Status() == http.StatusOK {
		attrs = append(attrs, "first_audio_ms", first.Sub(e.start).Milliseconds())
		if rtf, ok := realTimeFactor(format, e.rec.Written(), time.Since(e.start), h); ok {
			attrs = append(attrs, "rtf", strconv.FormatFloat(rtf, 'f', 3, 64))
		}
	}
	return attrs
}

// realTimeFactor is wall time over audio time, for the formats whose size
// gives the audio's length (16-bit mono PCM, as wav or raw).
func realTimeFactor(format string, n int64, wall time.Duration, h http.Header) (float64, bool) {
	rate, err := strconv.Atoi(h.Get("X-Sample-Rate"))
	if err != nil || rate <= 0 {
		return 0, false
	}
	switch format {
	case "wav":
		n -= 44
	case "pcm":
	default:
		return 0, false
	}
	audio := float64(n/2) / float64(rate)
	if audio <= 0 {
		return 0, false
	}
	return wall.Seconds() / audio, true
}
