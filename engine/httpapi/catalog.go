package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// CatalogStore is a VoiceStore for an engine that serves voices only from a
// catalog it reads at start (Capabilities.VoiceCatalog, as the Metal
// build): a clone is spoken under its name in the catalog, and a clone the
// running catalog lacks is published there and the engine restarted.
type CatalogStore interface {
	VoiceStore
	// Spoken counts clone id as just spoken (the catalog keeps the most
	// recently spoken clones) and returns its catalog name and whether
	// the running engine's catalog holds it.
	Spoken(ctx context.Context, id string) (name string, live bool, err error)
	// Publish makes clone id one the next catalog keeps and returns its
	// catalog name; the engine serves it once restarted.
	Publish(ctx context.Context, id string) (name string, err error)
}

// Restarter starts the engine again within a request. engine/supervise's
// Supervisor implements it.
type Restarter interface {
	Restart(ctx context.Context) error
}

// CatalogPrefix begins the catalog name of a clone: "clone-" and 16 hex
// digits of the sha256 of its voice file.
const CatalogPrefix = "clone-"

// EngineRestart tells a client that its request paid for a restart of the
// engine, which loaded a voice into the engine's catalog.
type EngineRestart struct {
	Seconds float64 `json:"seconds"`
	Message string  `json:"message"`
}

// catalog returns the store when clones are published to a catalog.
func (s *Server) catalog() (CatalogStore, bool) {
	caps := s.capabilities()
	cs, ok := s.cfg.Voices.(CatalogStore)
	if !ok || caps.References || !caps.VoiceCatalog || s.cfg.Restarter == nil {
		return nil, false
	}
	return cs, true
}

// load publishes clone id and restarts the engine; the caller holds the
// engine's slot, so no synthesis runs meanwhile.
func (s *Server) load(ctx context.Context, cs CatalogStore, id string) (string, *EngineRestart, *apiError) {
	name, err := cs.Publish(ctx, id)
	if err != nil {
		return "", nil, fromEngine(err)
	}
	began := time.Now()
	err = s.cfg.Restarter.Restart(ctx)
	took := time.Since(began)
	s.forgetVoices()
	if err != nil {
		e := fromEngine(err)
		e.Message = fmt.Sprintf("voice %s is saved, but the engine did not start again with it in its catalog: %s", id, e.Message)
		return "", nil, e
	}
	s.metrics.catalogRestarts.Add(1)
	return name, &EngineRestart{Seconds: took.Seconds(),
		Message: fmt.Sprintf("the engine was restarted to load voice %s into its catalog as %s; this request paid for the restart (%.1f s), later ones do not", id, name, took.Seconds())}, nil
}

// loadForClone publishes a new clone, taking the engine's turn first.
func (s *Server) loadForClone(ctx context.Context, info *VoiceInfo) *apiError {
	cs, ok := s.catalog()
	if !ok {
		return nil
	}
	_, release, e := s.waitTurn(ctx, "", s.cfg.QueueTimeout)
	if e != nil {
		return e
	}
	defer release()
	name, restart, e := s.load(ctx, cs, info.ID)
	if e != nil {
		return e
	}
	info.CatalogName, info.EngineRestart = name, restart
	return nil
}

// restartHeader carries a restart a speech request paid for: seconds, then
// the message.
const restartHeader = "X-Engine-Restart"

func setRestartHeader(h http.Header, r *EngineRestart) {
	h.Set(restartHeader, strconv.FormatFloat(r.Seconds, 'f', 3, 64)+"; "+r.Message)
}

// catalogName reports whether an engine voice id is a clone's catalog
// name, listed as the clone rather than as an engine voice.
func (s *Server) catalogName(id string) bool {
	_, ok := s.catalog()
	return ok && strings.HasPrefix(id, CatalogPrefix)
}

// loadForSpeech publishes a clone a speech request asks for that the
// running catalog lacks; the reply says the request paid a restart.
func (s *Server) loadForSpeech(ctx context.Context, h http.Header, id string) *apiError {
	cs, ok := s.catalog()
	if !ok {
		return nil
	}
	_, restart, e := s.load(ctx, cs, id)
	if e != nil {
		return e
	}
	setRestartHeader(h, restart)
	return nil
}
