package build

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/drama-tts/drama/pins"
)

// Tools are the compilers found for a build, with the versions they report.
type Tools struct {
	Zig         string `json:"zig"`
	ZigVersion  string `json:"zig_version"`
	NVCC        string `json:"nvcc,omitempty"`
	CUDAVersion string `json:"cuda_version,omitempty"`
	Metal       string `json:"metal,omitempty"` // the Metal compiler's version line
}

// The compilers a ToolchainError names in its Tool.
const (
	ToolZig  = "zig"
	ToolNVCC = "nvcc"
)

// DefaultNVCC is where nvcc is looked for when neither the caller, $NVCC
// nor the PATH names one.
const DefaultNVCC = "/usr/local/cuda/bin/nvcc"

// DefaultZig is where Zig of the given version is looked for when neither the caller,
// $ZIG nor the PATH names one.
func DefaultZig(version string) string { return "/opt/zig-" + version + "/zig" }

// ToolchainError is a compiler that is missing or of the wrong version.
// Tool is ToolZig or ToolNVCC; Path is where it was looked for; Env is the
// environment variable that names it; Default is where it is looked for
// last, a usual place to install it; Got is empty when it was not found.
// Fix says what to install; naming its path is the caller's to advise.
type ToolchainError struct {
	Tool, Path, Want, Got, Fix string
	Env, Default               string
}

// Error implements error.
func (e *ToolchainError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("engine build: %s: not found at %s: %s", e.Tool, e.Path, e.Fix)
	}
	return fmt.Sprintf("engine build: %s at %s: want version %s, got %s: %s", e.Tool, e.Path, e.Want, e.Got, e.Fix)
}

// MetalError is a macOS host without a usable Metal compiler. Install
// returns it (wrapping ErrMismatch, exit 3) after everything else is in
// place, before the build.
type MetalError struct{ Detail string }

// Error implements error.
func (e *MetalError) Error() string {
	return "engine build: no usable Metal compiler (" + e.Detail + "): install Xcode and its Metal toolchain (xcodebuild -downloadComponent MetalToolchain); " +
		"when xcode-select names the Command Line Tools, set DEVELOPER_DIR=/Applications/Xcode.app/Contents/Developer; then run the install again"
}

// Unwrap returns ErrMismatch.
func (e *MetalError) Unwrap() error { return ErrMismatch }

var nvccRelease = regexp.MustCompile(`release (\d+)\.(\d+)`)

// resolve returns flag, else the first of names on the PATH, else fallback.
func resolve(flag string, names []string, fallback string) string {
	if flag != "" {
		return flag
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return fallback
}

// CheckToolchain finds and checks the compilers tc asks for. zig and nvcc
// are paths from the command line or ""; the environment and PATH decide
// otherwise. A missing or wrong compiler is an error; a missing Metal
// compiler is returned separately, as metal, so that the caller can put
// everything else in place first.
func CheckToolchain(ctx context.Context, tc pins.Toolchain, zig, nvcc string, env []string) (t Tools, metal error, err error) {
	getenv := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	zigErr := func(got string) *ToolchainError {
		return &ToolchainError{Tool: ToolZig, Path: t.Zig, Want: tc.Zig, Got: got, Env: "ZIG", Default: DefaultZig(tc.Zig),
			Fix: "install Zig " + tc.Zig}
	}
	t.Zig = resolve(cmp.Or(zig, getenv("ZIG")), []string{"zig"}, DefaultZig(tc.Zig))
	out, err := toolOutput(ctx, env, t.Zig, "version")
	if err != nil {
		return t, nil, zigErr("")
	}
	t.ZigVersion = strings.TrimSpace(out)
	if t.ZigVersion != tc.Zig {
		return t, nil, zigErr(firstLine(t.ZigVersion))
	}
	if tc.CUDA != "" {
		t.NVCC = resolve(cmp.Or(nvcc, getenv("NVCC")), []string{"nvcc"}, DefaultNVCC)
		nvccErr := func(want, got string) *ToolchainError {
			return &ToolchainError{Tool: ToolNVCC, Path: t.NVCC, Want: want, Got: got, Env: "NVCC", Default: DefaultNVCC,
				Fix: "install CUDA " + tc.CUDA}
		}
		out, err := toolOutput(ctx, env, t.NVCC, "--version")
		if err != nil {
			return t, nil, nvccErr(tc.CUDA, "")
		}
		m := nvccRelease.FindStringSubmatch(out)
		if m == nil {
			return t, nil, nvccErr(tc.CUDA+".x", "no \"release N.M\" in its --version: "+firstLine(out))
		}
		t.CUDAVersion = m[1] + "." + m[2]
		if m[1] != tc.CUDA {
			return t, nil, nvccErr(tc.CUDA+".x", t.CUDAVersion)
		}
	}
	if tc.Metal {
		xcrun := resolve("", []string{"xcrun"}, "/usr/bin/xcrun")
		out, err := toolOutput(ctx, env, xcrun, "-sdk", "macosx", "metal", "--version")
		if err != nil {
			detail := strings.TrimSpace(out)
			if detail == "" {
				detail = err.Error()
			}
			return t, &MetalError{Detail: xcrun + " -sdk macosx metal --version: " + firstLine(detail)}, nil
		}
		t.Metal = firstLine(strings.TrimSpace(out))
	}
	return t, nil, nil
}

// toolOutput runs a tool for its version with a deadline and returns its
// combined output.
func toolOutput(ctx context.Context, env []string, bin string, args ...string) (string, error) {
	if _, err := os.Stat(bin); err != nil {
		if _, lerr := exec.LookPath(bin); lerr != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if err != nil && b.Len() == 0 {
		return "", err
	}
	if err != nil {
		return b.String(), errors.New(strings.TrimSpace(b.String()))
	}
	return b.String(), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
