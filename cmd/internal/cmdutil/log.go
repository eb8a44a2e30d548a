package cmdutil

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drama-tts/drama/internal/safetext"
)

// HCLogBridge returns a writer that turns hclog's JSON lines (go-plugin's
// log) into records of log: each line's level, message, module and fields.
// Lines that report a lifecycle event (they carry a phase) are left out:
// the event itself arrives through the start stream.
func HCLogBridge(log *slog.Logger) io.Writer { return &hclogBridge{log: log} }

// hclogBridge turns hclog's JSON lines into slog records.
type hclogBridge struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (b *hclogBridge) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	for {
		i := bytes.IndexByte(b.buf, '\n')
		if i < 0 {
			break
		}
		b.line(b.buf[:i])
		b.buf = b.buf[i+1:]
	}
	return len(p), nil
}

func (b *hclogBridge) line(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var m map[string]any
	if json.Unmarshal(line, &m) != nil {
		b.log.Info(string(line))
		return
	}
	if _, ok := m["phase"]; ok {
		return
	}
	msg, _ := m["@message"].(string)
	lvl, _ := m["@level"].(string)
	var attrs []any
	if mod, _ := m["@module"].(string); mod != "" {
		mod = strings.TrimPrefix(mod, "plugin.")
		attrs = append(attrs, "module", mod)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !strings.HasPrefix(k, "@") && k != "timestamp" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		attrs = append(attrs, k, m[k])
	}
	b.log.Log(context.Background(), hclogLevel(lvl), msg, attrs...)
}

func hclogLevel(s string) slog.Level {
	switch s {
	case "trace", "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// LogFanout returns a handler that sends each record to every one of
// handlers that takes its level.
func LogFanout(handlers ...slog.Handler) slog.Handler { return fanout(handlers) }

// fanout sends each record to every handler that takes its level.
type fanout []slog.Handler

func (h fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, x := range h {
		if x.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (h fanout) Handle(ctx context.Context, r slog.Record) error {
	var first error
	for _, x := range h {
		if x.Enabled(ctx, r.Level) {
			if err := x.Handle(ctx, r.Clone()); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func (h fanout) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(fanout, len(h))
	for i, x := range h {
		out[i] = x.WithAttrs(attrs)
	}
	return out
}

func (h fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(h))
	for i, x := range h {
		out[i] = x.WithGroup(name)
	}
	return out
}

// NewTextLog returns a handler that writes each record of level or above to
// w as a line for people (see textHandler); a record without a "source"
// attribute is of source.
func NewTextLog(w io.Writer, level slog.Level, source string) slog.Handler {
	return &textHandler{w: w, mu: &sync.Mutex{}, level: level, source: source, now: time.Now}
}

// textHandler writes a record as a line for people:
// "15:04:05 source  message  key=value ...", warnings and errors marked.
// A record may carry outside text (a request's path and voice, an engine's
// or plugin's log line): the message, keys and values have their control
// characters escaped (safetext.Escape), so a record stays one line and
// cannot rewrite the terminal. The JSON handler's lines are encoded.
type textHandler struct {
	w      io.Writer
	mu     *sync.Mutex
	level  slog.Level
	source string
	attrs  []slog.Attr
	now    func() time.Time
}

func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	source := h.source
	var kv []string
	add := func(a slog.Attr) {
		if a.Key == "source" {
			source = a.Value.String()
			return
		}
		key := safetext.Escape(a.Key)
		if a.Value.Kind() == slog.KindDuration {
			kv = append(kv, key+"="+a.Value.Duration().String())
			return
		}
		v := a.Value.String()
		if strings.ContainsAny(v, " \t\"=") || v == "" {
			v = fmt.Sprintf("%q", v)
		}
		kv = append(kv, key+"="+safetext.Escape(v))
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { add(a); return true })
	t := r.Time
	if t.IsZero() {
		t = h.now()
	}
	var line strings.Builder
	fmt.Fprintf(&line, "%s %-6s ", t.Local().Format("15:04:05"), safetext.Escape(source))
	switch {
	case r.Level >= slog.LevelError:
		line.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		line.WriteString("warning: ")
	}
	line.WriteString(safetext.Escape(r.Message))
	if len(kv) > 0 {
		line.WriteString("  " + strings.Join(kv, " "))
	}
	line.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line.String())
	return err
}

func (h *textHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), attrs...)
	return &c
}

func (h *textHandler) WithGroup(string) slog.Handler { return h }
