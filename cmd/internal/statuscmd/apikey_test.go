package statuscmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/serverec"
)

// A drama serve with API keys answers GET /ready to anyone and GET
// /metrics only with "Authorization: Bearer KEY".
func TestStatusSendsAPIKey(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, `{"phase":"ready","ready":true}`)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer dk-admin" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintln(w, `{"error":{"message":"a valid API key is required"}}`)
			return
		}
		fmt.Fprintln(w, "drama_queue_depth 5")
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	root := t.TempDir()
	if _, err := serverec.Write(root, serverec.Record{PID: os.Getpid(), Addr: ts.Listener.Addr().String(), Variant: "full", Root: root, Started: now}); err != nil {
		t.Fatal(err)
	}
	status := func(env ...string) (Report, string) {
		ios, _, out, errOut := cmdtest.IOStreams()
		f := cmdtest.Factory(ios, env...)
		f.Global.Root, f.Global.JSON = root, true
		if err := run(context.Background(), opts(f)); err != nil {
			t.Fatal(err)
		}
		var rep Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return rep, errOut.String()
	}
	rep, warn := status(cmdutil.APIKeyEnv, "dk-admin")
	if len(rep.Servers) != 1 || rep.Servers[0].QueueDepth == nil || *rep.Servers[0].QueueDepth != 5 || warn != "" {
		t.Fatalf("with the key: %+v, stderr %q", rep.Servers, warn)
	}
	rep, warn = status()
	if !rep.Servers[0].Ready || rep.Servers[0].QueueDepth != nil {
		t.Errorf("without the key: want ready and no queue depth, got %+v", rep.Servers[0])
	}
	if !strings.Contains(warn, "answered 401 to GET /metrics") || !strings.Contains(warn, "requires an API key: set DRAMA_API_KEY to one of its keys with scope admin") {
		t.Errorf("without the key: want a warning with advice, got %q", warn)
	}
}
