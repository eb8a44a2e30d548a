package encodecmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/engine/host"
	"github.com/drama-tts/drama/internal/filehash"
)

// binDir holds the real CUDA plugin (drama-engine-cuda, with its checksum
// file) and the native engine stand-in, built once for the end-to-end tests.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "encodecmd-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	for out, pkg := range map[string]string{
		host.BinaryName("cuda"): "github.com/drama-tts/drama/plugins/cuda",
		"tensorfold-standin":    "github.com/drama-tts/drama/engine/native/standin/cmd/tensorfold-standin",
	} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, out), pkg)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", pkg, err)
			return 1
		}
	}
	plugin := filepath.Join(dir, host.BinaryName("cuda"))
	sum, _, err := filehash.SHA256(context.Background(), plugin, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	line := sum + "  " + filepath.Base(plugin) + "\n"
	if err := os.WriteFile(plugin+host.ChecksumSuffix, []byte(line), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	return m.Run()
}
