package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/drama-tts/drama/internal/atomicfile"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/voices"
)

// CatalogClones is how many cloned voices a catalog holds: the most
// recently spoken (or cloned) ones.
const CatalogClones = 16

// spokenFile lists the cloned voices this drama serve spoke, most recently
// first, one id a line, so the catalog keeps them across its runs. It sits
// beside the catalog, in the root's private directory: each host has its
// own catalog, while the voices may be shared (--voice-store). Older
// drama serve kept it in the voices directory, where it is read once.
const spokenFile = "spoken.list"

// catalogStore is the voice store of an engine that serves voices only
// from a catalog read at start (the Metal build). The catalog, a directory
// drama serve writes before each start of the engine, holds the operator's
// --voices files and the CatalogClones most recently spoken clones in the
// catalog's format under their content names (clone- and 16 hex digits of
// the sha256 of the voice file).
type catalogStore struct {
	*voiceStore
	dir    string // the catalog the engine reads
	source string // the operator's --voices directory, or ""
	max    int
	spoken string // spokenFile's path

	mu    sync.Mutex
	order []string          // clone ids, most recently spoken first
	live  map[string]string // clone id -> catalog name in the running catalog
}

var _ httpapi.CatalogStore = (*catalogStore)(nil)

func newCatalogStore(vs *voiceStore, dir, source string) *catalogStore {
	c := &catalogStore{voiceStore: vs, dir: dir, source: source, max: CatalogClones, live: map[string]string{},
		spoken: filepath.Join(filepath.Dir(dir), spokenFile)}
	b, err := os.ReadFile(c.spoken)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = os.ReadFile(filepath.Join(vs.files.Dir(), spokenFile)) // where an older drama serve kept it
	}
	if err == nil {
		for _, id := range strings.Fields(string(b)) {
			if voices.CheckID(id) == nil && !slices.Contains(c.order, id) {
				c.order = append(c.order, id)
			}
		}
	}
	return c
}

// saveOrder writes the order of the spoken clones. c.mu must be held.
func (c *catalogStore) saveOrder() error {
	if err := os.MkdirAll(filepath.Dir(c.spoken), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(c.spoken, []byte(strings.Join(c.order, "\n")+"\n"), 0o600)
}

// catalogName is the content name of a cloned voice: clone- and 16 hex
// digits of the sha256 of its file.
func (c *catalogStore) catalogName(id string) (string, error) {
	p, err := c.path(id)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s", httpapi.ErrVoiceNotFound, id)
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return httpapi.CatalogPrefix + hex.EncodeToString(sum[:8]), nil
}

// front puts id first among the spoken clones and saves the order when it
// changed. c.mu must be held.
func (c *catalogStore) front(id string) error {
	if len(c.order) > 0 && c.order[0] == id {
		return nil
	}
	c.order = slices.Insert(slices.DeleteFunc(c.order, func(s string) bool { return s == id }), 0, id)
	return c.saveOrder()
}

// Spoken counts clone id as just spoken and says whether the running
// catalog holds it.
func (c *catalogStore) Spoken(ctx context.Context, id string) (string, bool, error) {
	name, err := c.catalogName(id)
	if err != nil {
		return "", false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.front(id); err != nil {
		return "", false, err
	}
	return name, c.live[id] == name, nil
}

// Publish puts clone id first, so the catalog written at the next start
// holds it.
func (c *catalogStore) Publish(ctx context.Context, id string) (string, error) {
	name, err := c.catalogName(id)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return name, c.front(id)
}

// Delete removes a cloned voice and its place among the spoken ones.
func (c *catalogStore) Delete(ctx context.Context, id string) error {
	if err := c.voiceStore.Delete(ctx, id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order = slices.DeleteFunc(c.order, func(s string) bool { return s == id })
	return c.saveOrder()
}

// prepare is the supervisor's Prepare: for a catalog engine it writes the
// catalog and starts the engine with it as its voices directory; other
// engines start as asked.
func (c *catalogStore) prepare(ctx context.Context, eng engine.Engine, req engine.StartRequest) (engine.StartRequest, error) {
	d, err := eng.Describe(ctx)
	if err != nil || !d.Capabilities.VoiceCatalog {
		return req, err
	}
	if err := c.write(); err != nil {
		return req, engine.Errorf(engine.KindFailed, "writing the voice catalog %s: %w", c.dir, err)
	}
	req.VoicesDir = c.dir
	return req, nil
}

// write rebuilds the catalog: the operator's voice files as they are, then
// the most recently spoken clones converted to the catalog's format.
func (c *catalogStore) write() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(c.dir, "*.json"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	if c.source != "" {
		own, err := filepath.Glob(filepath.Join(c.source, "*.json"))
		if err != nil {
			return err
		}
		for _, p := range own {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := atomicfile.WriteFile(filepath.Join(c.dir, filepath.Base(p)), b, 0o600); err != nil {
				return err
			}
		}
	}
	live := map[string]string{}
	for _, id := range c.order {
		if len(live) == c.max {
			break
		}
		name, err := c.publish(id)
		if errors.Is(err, httpapi.ErrVoiceNotFound) {
			continue // deleted by hand, or by another drama serve sharing the store
		}
		if err != nil {
			return fmt.Errorf("clone %s: %w", id, err)
		}
		live[id] = name
	}
	c.live = live
	return nil
}

// publish converts clone id to the catalog's format and writes it there
// under its content name. c.mu must be held.
func (c *catalogStore) publish(id string) (string, error) {
	name, err := c.catalogName(id)
	if err != nil {
		return "", err
	}
	p, _ := c.path(id)
	v, err := voices.ReadFile(p, nil)
	if err != nil {
		return "", err
	}
	conv, err := voices.Convert(v, voices.FormatMetal, voices.ConvertOptions{ID: name, Origin: "cloned voice " + id})
	if err != nil {
		return "", err
	}
	data, err := voices.Marshal(conv.Voice, nil)
	if err != nil {
		return "", err
	}
	return name, native.PublishVoice(c.dir, name, data)
}
