package httpapi

import (
	"net/http"
	"time"
)

// Recorder is an http.ResponseWriter that remembers what went through it:
// the status, how many body bytes and when the first of them went out. It
// passes flushes on, and lets http.ResponseController reach the writer
// below it (trailers, deadlines). The API's metrics and its reports of a
// reply cut short use one, and so does drama serve's access log.
type Recorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	written     int64
	first       time.Time
	failed      error // the first write to the connection that failed
}

// WriteHeader sends the header with code; the first code is the one
// remembered.
func (w *Recorder) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write sends body bytes, the header with 200 first if none went out.
func (w *Recorder) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.first.IsZero() && len(p) > 0 {
		w.first = time.Now()
	}
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	if err != nil && w.failed == nil {
		w.failed = err
	}
	return n, err
}

// Flush passes streaming flushes through.
func (w *Recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer below.
func (w *Recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Status is the status sent: 200 while none was.
func (w *Recorder) Status() int {
	if !w.wroteHeader {
		return http.StatusOK
	}
	return w.status
}

// Written is how many body bytes went out.
func (w *Recorder) Written() int64 { return w.written }

// First is when the first body byte went out; zero before.
func (w *Recorder) First() time.Time { return w.first }
