package servecmd

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/apikey"
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

// reloadKeysOnHUP re-reads --api-key-file (and DRAMA_API_KEY, as at start)
// at each SIGHUP until ctx ends. A file that is refused leaves the keys in
// force as they were, and the log says why.
func reloadKeysOnHUP(ctx context.Context, opts *Options, api *httpapi.Server, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reloadKeys(opts, api, logger)
			}
		}
	}()
}

// reloadKeys re-reads the keys once.
func reloadKeys(opts *Options, api *httpapi.Server, logger *slog.Logger) {
	keys, err := apikey.Load(opts.F.Getenv(apikey.EnvKey), opts.APIKeyFile)
	if err == nil {
		err = api.SetKeys(keys)
	}
	if err != nil {
		logger.Error("the API key file was not reloaded: the keys before it stay in force", "file", opts.APIKeyFile, "err", err)
		return
	}
	logger.Info("API keys reloaded", "file", opts.APIKeyFile, "keys", keys.Len(), "names", strings.Join(keys.Names(), ","))
}
