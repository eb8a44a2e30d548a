package enginetest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/host"
	"github.com/drama-tts/drama/internal/filehash"
)

// ServeEnv names the variable that turns a re-executed test binary into a
// plugin: its value picks the engine from the map given to ServeChild.
const ServeEnv = "DRAMA_ENGINETEST_SERVE"

// ServeChild serves the engine named by $DRAMA_ENGINETEST_SERVE and exits,
// when that variable is set; otherwise it returns. Call it first in
// TestMain, so the test binary can run as its own plugin.
func ServeChild(engines map[string]func() engine.Engine) {
	name := os.Getenv(ServeEnv)
	if name == "" {
		return
	}
	mk, ok := engines[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "enginetest: %s=%q: no such engine\n", ServeEnv, name)
		os.Exit(2)
	}
	engine.Serve(mk())
	os.Exit(0)
}

// TestBinaryPlugin copies the running test binary into a temporary
// directory as drama-engine-<name>, writes its checksum file beside it, and
// returns its path. Run it with Open and env ServeEnv=<engine>.
func TestBinaryPlugin(t testing.TB, name string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), host.BinaryName(name))
	if err := copyExecutable(self, dst); err != nil {
		t.Fatal(err)
	}
	WriteChecksum(t, dst)
	return dst
}

// WriteChecksum writes path+".sha256" for the file at path, as sha256sum
// would.
func WriteChecksum(t testing.TB, path string) {
	t.Helper()
	sum, _, err := filehash.SHA256(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := sum + "  " + filepath.Base(path) + "\n"
	if err := os.WriteFile(path+host.ChecksumSuffix, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Subprocess starts the plugin binary at path as a real child process
// through host.Open, with env added to its environment, and returns it; the
// plugin is closed when the test ends.
func Subprocess(t testing.TB, path string, env ...string) *host.Plugin {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := host.Open(ctx, path, host.Options{Env: env})
	if err != nil {
		t.Fatalf("open plugin: %v", err)
	}
	t.Cleanup(func() { p.Close(context.Background(), 5*time.Second) })
	return p
}
