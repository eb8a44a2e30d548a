package fetchcmd

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/pins/hub"
)

// A verified fetch records its endpoint, for verify's advice to repair from
// the same place.
func TestFetchRecordsItsEndpoint(t *testing.T) {
	e := newTestEnv(t, false)
	ios, _, _, errOut := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if got := hub.Source(filepath.Join(e.root, "full")); got != e.url {
		t.Fatalf("recorded endpoint %q, want %q", got, e.url)
	}
}
