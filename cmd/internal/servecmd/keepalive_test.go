package servecmd

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
)

func TestKeepAliveFlag(t *testing.T) {
	var cases []cmdtest.FlagCase[Options]
	for args, want := range map[string]time.Duration{
		"":                              -1,
		"--keep-alive 10m":              10 * time.Minute,
		"--keep-alive 90":               90 * time.Second,
		"--keep-alive 0":                0,
		"--keep-alive forever":          -1,
		"--keep-alive=-1":               -1,
		"--keep-alive=-5m":              -1,
		"--keep-alive 1h30m":            90 * time.Minute,
		"--keep-alive 250ms":            250 * time.Millisecond,
		"--keep-alive FOREVER":          -1,
		"--keep-alive 0s":               0,
		"--keep-alive 2s --max-queue 1": 2 * time.Second,
	} {
		cases = append(cases, cmdtest.FlagCase[Options]{Args: strings.Fields(args), Check: func(got *Options) bool { return got.KeepAlive == want }})
	}
	cases = append(cases, cmdtest.FlagCase[Options]{Args: []string{"--keep-alive", "soon"}, WantErr: "--keep-alive"},
		cmdtest.FlagCase[Options]{Args: []string{"--keep-alive", "soon"}, WantErr: "want a duration"})
	cmdtest.CheckFlags(t, NewCmd, cases)
	ios, _, _, _ := cmdtest.IOStreams()
	if help := NewCmd(cmdtest.Factory(ios), nil).Flags().Lookup("keep-alive"); help.DefValue != "forever" {
		t.Fatalf("--keep-alive default shown as %q", help.DefValue)
	}
}

// TestServeWithKeepAlive: drama serve's HTTP server over a supervisor with
// --keep-alive: once the engine is unloaded GET /ready is 200 and lists
// the engine, by its name, as unloaded; a speech request loads it and is
// served.
func TestServeWithKeepAlive(t *testing.T) {
	opts := serveOptions(t, "", "--engine cuda --keep-alive 20ms")
	fake, sup := supervisedFake(0)
	_, api, addr := serveOver(t, opts, sup, t.TempDir(), engine.Install{})
	api.SetCapabilities(fake.Desc.Capabilities)
	url := "http://" + addr

	enginetest.WaitFor(t, func() bool { return sup.Status().Phase == "unloaded" })
	code, body := get(t, url+"/ready")
	var ready httpapi.Readiness
	if err := json.Unmarshal([]byte(body), &ready); err != nil || code != http.StatusOK || ready.Phase != "unloaded" || ready.Loaded {
		t.Fatalf("GET /ready while unloaded: %d %s", code, body)
	}
	if len(ready.PerEngine) != 1 || ready.PerEngine[0].Name != "engine-0" || ready.PerEngine[0].Loaded {
		t.Fatalf("engines: %s", body)
	}
	if code, body := speech(t, url, `{"input":"back again","stream":false}`); code != http.StatusOK {
		t.Fatalf("speech while unloaded: %d %s", code, body)
	}
	enginetest.WaitFor(t, func() bool { return sup.Status().Phase == "unloaded" })
}
