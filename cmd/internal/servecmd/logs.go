package servecmd

import (
	"log/slog"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// drama serve writes one stream of log records. Each record names where it
// came from with the "source" attribute: drama (the server itself), plugin
// (the engine plugin's own log lines) or engine (the engine's lifecycle:
// preflight, spawned, loading, ready, exited), and access (one line per
// request). On a terminal the records are human text; off a terminal, or
// with --json, one JSON object per line. --log-file adds a JSON copy of
// every record at info level, whatever -q says.

// Sources of log records.
const (
	sourceDrama  = "drama"
	sourcePlugin = "plugin"
	sourceEngine = "engine"
	sourceAccess = "access"
)

type logs struct {
	base   slog.Handler
	logger *slog.Logger // source drama
	file   *os.File
}

// newLogs builds drama serve's logger over stderr and, if logFile is set,
// that file (appended to).
func newLogs(f *cmdutil.Factory, logFile string) (*logs, error) {
	level := slog.LevelInfo
	if f.Global.Quiet {
		level = slog.LevelError
	}
	var console slog.Handler
	if f.IO.IsStderrTTY() && !f.Global.JSON {
		console = cmdutil.NewTextLog(f.IO.ErrOut, level, sourceDrama)
	} else {
		console = slog.NewJSONHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level})
	}
	l := &logs{}
	handlers := []slog.Handler{console}
	if logFile != "" {
		file, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, cmdutil.FlagErrorf("--log-file: %v", err)
		}
		l.file = file
		handlers = append(handlers, slog.NewJSONHandler(file, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	l.base = cmdutil.LogFanout(handlers...)
	l.logger = l.from(sourceDrama)
	return l, nil
}

// from returns the logger for records of another source.
func (l *logs) from(source string) *slog.Logger {
	return slog.New(l.base).With("source", source)
}

// Close closes the log file.
func (l *logs) Close() error {
	if l.file == nil {
		return nil
	}
	return l.file.Close()
}

// hclog returns the logger handed to go-plugin for the plugin's log lines:
// they are carried into the stream with source plugin. Lines that report a
// lifecycle event (they carry a phase) are left out: the event itself
// arrives through the start stream and is logged once, with source engine.
func (l *logs) hclog() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: cmdutil.HCLogBridge(l.from(sourcePlugin)),
		Level: hclog.Info, JSONFormat: true})
}
