package mirrorcmd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

func TestServeFlags(t *testing.T) {
	cmdtest.CheckFlags(t, NewCmdServe, []cmdtest.FlagCase[ServeOptions]{
		{Args: []string{"dir"}, Check: func(o *ServeOptions) bool { return o.Dir == "dir" && o.Addr == "127.0.0.1:8080" && !o.Cache }},
		{Args: []string{"--cache", "--addr", ":9000", "--fault", "drop@2x3", "--fault", "503", "--rate", "1000", "--url-ttl", "1s"},
			Check: func(o *ServeOptions) bool {
				return o.Cache && o.Addr == ":9000" && len(o.Faults) == 2 && o.Faults[0] == mirror.Fault{Kind: mirror.FaultDrop, After: 2, Times: 3} && o.BytesPerSec == 1000 && o.URLTTL == time.Second
			}},
		{Code: cmdutil.ExitUsage},
		{Args: []string{"dir", "--cache"}, Code: cmdutil.ExitUsage},
		{Args: []string{"dir", "--fault", "boom"}, Code: cmdutil.ExitUsage},
		{Args: []string{"dir", "--allow-host", "mirror.lan", "--allow-host", "10.0.0.5", "--max-conns", "16"},
			Check: func(o *ServeOptions) bool {
				return len(o.AllowHosts) == 2 && o.AllowHosts[0] == "mirror.lan" && o.AllowHosts[1] == "10.0.0.5" && o.MaxConns == 16
			}},
		{Args: []string{"dir"}, Check: func(o *ServeOptions) bool { return o.MaxConns == DefaultMaxConns && len(o.AllowHosts) == 0 }},
		{Args: []string{"dir", "--max-conns", "0"}, Code: cmdutil.ExitUsage},
	})
}

func TestRunServe(t *testing.T) {
	dir := t.TempDir()
	commit := strings.Repeat("a", 40)
	fp := filepath.Join(dir, "org", "m", commit, "config.json")
	os.MkdirAll(filepath.Dir(fp), 0o755)
	os.WriteFile(fp, []byte(`{"x":1}`), 0o644)
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Quiet = true
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, &ServeOptions{F: f, Dir: dir, Addr: "127.0.0.1:0", PageSize: 10, LFSMinSize: 1 << 20,
			Ready: func(a string) { addrc <- a }})
	}()
	addr := <-addrc
	resp, err := http.Get("http://" + addr + "/org/m/resolve/" + commit + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, []byte(`{"x":1}`)) || resp.Header.Get("X-Repo-Commit") != commit {
		t.Errorf("got %d %q %v", resp.StatusCode, body, resp.Header)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("want a clean stop after the signal, got %v", err)
	}
	if !strings.Contains(out.String(), "http://"+addr) {
		t.Errorf("stdout should name the endpoint: %q", out)
	}
}

func TestRunServeBadDir(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	err := runServe(context.Background(), &ServeOptions{F: cmdtest.Factory(ios), Dir: filepath.Join(t.TempDir(), "nope"), Addr: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("want a clear error, got %v", err)
	}
}
