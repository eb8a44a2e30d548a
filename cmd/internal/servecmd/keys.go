package servecmd

import (
	"log/slog"
	"strings"
)

// logKeys says at start how requests are let in.
func logKeys(opts *Options, logger *slog.Logger) {
	switch {
	case opts.keys != nil:
		attrs := []any{"keys", opts.keys.Len(), "names", strings.Join(opts.keys.Names(), ",")}
		if opts.APIKeyFile != "" {
			attrs = append(attrs, "file", opts.APIKeyFile, "reload", "SIGHUP")
		}
		logger.Info("API keys required on every route but /health, /ready and the page's shell", attrs...)
	case opts.NoAuth:
		logger.Warn("--no-auth: no API key is asked for; the proxy in front must authenticate every request")
	}
}
