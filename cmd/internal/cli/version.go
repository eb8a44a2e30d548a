package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// commit is set at build time with -ldflags "-X ...cli.commit=..." (make
// build does); else it comes from the VCS stamp go build records.
var commit = ""

// VersionInfo is what drama version prints.
type VersionInfo struct {
	// Version is git describe --tags of the checkout built: v0.N.M at a
	// tag, v0.N.M-K-gSHA K commits after it (make build sets it), else the
	// module's version as go install records it, else "dev".
	Version string `json:"version"`
	// Commit is the commit built, with " (modified)" when the tree held
	// changes not committed; "unknown" when the build recorded none.
	Commit   string `json:"commit"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildVersion returns the version drama was built as: set, when make
// build set it, else the main module's version that go install records.
func buildVersion(set string) string {
	if set != "" && set != "dev" {
		return set
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// versionInfo returns what drama version prints, for the version v.
func versionInfo(v string) VersionInfo {
	out := VersionInfo{Version: v, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	modified := false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if out.Commit == "" {
					out.Commit = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	switch {
	case out.Commit == "":
		out.Commit = "unknown"
	case modified:
		out.Commit += " (modified)"
	}
	return out
}

func newVersionCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the drama version, its commit, Go and the platform",
		Long: `Print the drama version (git describe --tags of the checkout it was built
from: v0.N.M at a tag, v0.N.M-K-gSHA K commits after it), the commit, the
Go version it was built with, and the platform.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionInfo(f.Version)
			if f.Global.JSON {
				return cmdutil.WriteJSON(f.IO.Out, v)
			}
			_, err := fmt.Fprintf(f.IO.Out, "drama %s\ncommit:   %s\ngo:       %s\nplatform: %s\n", v.Version, v.Commit, v.Go, v.Platform)
			return err
		},
	}
}
