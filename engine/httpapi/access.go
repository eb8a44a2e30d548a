package httpapi

import (
	"bytes"
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
		start := time.Now()
		aw := &Recorder{ResponseWriter: w}
		var sp struct {
			Voice      string `json:"voice"`
			Format     string `json:"response_format"`
			References []struct {
				Codes voices.Codes `json:"vq_codes"`
			} `json:"references"`
		}
		var key string
		var outcome Outcome
		var keyMu sync.Mutex // key and outcome
		r = r.WithContext(WithKeyName(r.Context(), func(name string) {
			keyMu.Lock()
			key = name
			keyMu.Unlock()
		}))
		r = r.WithContext(WithOutcome(r.Context(), func(o Outcome) {
			keyMu.Lock()
			outcome = o
			keyMu.Unlock()
		}))
		speech := r.Method == http.MethodPost && r.URL.Path == "/v1/audio/speech"
		var wait time.Duration
		var waitMu sync.Mutex
		waited := false
		if speech {
			head, _ := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
			_ = json.Unmarshal(head, &sp)
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
			r = r.WithContext(WithQueueWait(r.Context(), func(d time.Duration) {
				waitMu.Lock()
				wait, waited = d, true
				waitMu.Unlock()
			}))
		}
		defer func() {
			keyMu.Lock()
			out := outcome
			keyMu.Unlock()
			ended := "complete"
			switch {
			case out.Cut:
				ended = "cut"
			case aw.Status() >= 400:
				ended = "error"
			}
			attrs := []any{"id", w.Header().Get("X-Request-Id"), "method", r.Method, "path", r.URL.Path,
				"status", aw.Status(), "outcome", ended}
			if out.Code != "" {
				attrs = append(attrs, "error", out.Code)
			}
			attrs = append(attrs, "bytes", aw.Written(), "duration_ms", time.Since(start).Milliseconds())
			keyMu.Lock()
			if key != "" {
				attrs = append(attrs, "key", key)
			}
			keyMu.Unlock()
			if speech {
				format := sp.Format
				if format == "" {
					format = "wav"
				}
				voice := sp.Voice
				switch {
				case voice == "" && len(sp.References) > 0:
					voice = "inline" // the engine's voice with the request's references
				case voice == "":
					voice = "default"
				}
				attrs = append(attrs, "voice", voice, "format", format)
				if len(sp.References) > 0 {
					sums := make([]string, len(sp.References))
					for i, ref := range sp.References {
						sums[i] = ref.Codes.SHA256()
					}
					attrs = append(attrs, "references_sha256", sums)
				}
				waitMu.Lock()
				if waited {
					attrs = append(attrs, "queue_wait_ms", wait.Milliseconds())
				}
				waitMu.Unlock()
				if !aw.First().IsZero() && aw.Status() == http.StatusOK {
					attrs = append(attrs, "first_audio_ms", aw.First().Sub(start).Milliseconds())
					if rtf, ok := realTimeFactor(format, aw.Written(), time.Since(start), w.Header()); ok {
						attrs = append(attrs, "rtf", strconv.FormatFloat(rtf, 'f', 3, 64))
					}
				}
			}
			level := slog.LevelInfo
			if accessProbes[r.URL.Path] && r.Method == http.MethodGet {
				level = slog.LevelDebug
			}
			log.Log(r.Context(), level, "request", attrs...)
		}()
		next.ServeHTTP(aw, r)
	})
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
