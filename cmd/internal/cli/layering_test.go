package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDomainPackagesStayOutOfTheCLI holds design.md's import rule: domain
// packages never depend on cobra, pb or the command packages.
func TestDomainPackagesStayOutOfTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}",
		"github.com/drama-tts/drama/pins/...", "github.com/drama-tts/drama/pth/...",
		"github.com/drama-tts/drama/safetensors/...", "github.com/drama-tts/drama/voices/...",
		"github.com/drama-tts/drama/engine/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	banned := []string{"github.com/spf13/cobra", "github.com/cheggaaa/pb", "github.com/drama-tts/drama/cmd/"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		for _, dep := range strings.Fields(deps) {
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s depends on %s: domain packages must not import the CLI layer", pkg, dep)
				}
			}
		}
		if pkg == "github.com/drama-tts/drama/pins" {
			for _, dep := range strings.Fields(deps) {
				if strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") {
					t.Errorf("pins depends on %s: it uses the standard library only", dep)
				}
			}
		}
	}
}
