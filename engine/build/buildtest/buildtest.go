// Package buildtest makes fixture upstreams for tests of the engine build:
// a recipe repository shaped like drama-tensorfold (a build script that
// applies a patch series listed in SHA256SUMS and builds a small
// executable, the pinned files) and an engine repository shaped like
// TensorFold, in a directory of clones that serves as a --source mirror,
// with fake zig and nvcc that print their versions.
package buildtest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/pins"
)

// PauseEnv names a file the fixture build creates, holding its process id,
// when it has written half of its binary; it then waits until it is killed
// (at most 60 s).
const PauseEnv = "BUILDTEST_PAUSE"

// EngineEnv names an executable the fixture build installs as its binary
// in place of the small script it makes otherwise (the stand-in native
// server, for tests that serve through the built engine).
const EngineEnv = "BUILDTEST_ENGINE"

// Fixture is a pair of fixture repositories and what pins them.
type Fixture struct {
	Mirror   string // directory of clones: <Mirror>/drama-tensorfold, <Mirror>/TensorFold
	Recipe   string // the recipe repository
	Upstream string // the engine repository
	// Commits of the recipe: Good builds; Broken's build fails;
	// Tampered changes a patch without changing SHA256SUMS.
	Good, Broken, Tampered string
	// Dirty's build changes a tracked file of the engine checkout.
	Dirty             string
	Base, PatchedHead string // the engine repository before and after the series
	// OperatorPatch is a patch on top of the series, its sha256, and the
	// HEAD it gives when applied with drama's fixed committer.
	OperatorPatch, OperatorSHA256, OperatorHead string
	Zig, NVCC                                   string // fake compilers with the right versions
	Bin                                         string // directory of the fake compilers
}

const buildScript = `#!/bin/sh
# Builds the fixture engine: --patch-only applies the series, --no-patch builds.
set -eu
tf= out= mode=all
while [ $# -gt 0 ]; do
  case "$1" in
  --tensorfold) tf=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  --weights) shift 2 ;;
  --patch-only) mode=patch; shift ;;
  --no-patch) mode=build; shift ;;
  *) echo "build-engine.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "$mode" != build ]; then
  cd "$here/engine/patches"
  sha256sum -c --quiet SHA256SUMS
  for p in $(awk '{print $2}' SHA256SUMS); do
    echo "applying $p"
    GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@example.invalid \
      git -C "$tf" -c core.hooksPath=/dev/null am -q --committer-date-is-author-date "$here/engine/patches/$p"
  done
fi
if [ "$mode" != patch ]; then
  echo "compiling with zig $("$ZIG" version)"
  "$NVCC" --version | tail -n 1
  head=$(git -C "$tf" rev-parse HEAD)
  bin="$out/tensorfold-native"
  if [ -n "${BUILDTEST_ENGINE:-}" ]; then
    cp "$BUILDTEST_ENGINE" "$bin"
    echo "built $bin from $BUILDTEST_ENGINE"
    exit 0
  fi
  printf '#!/bin/sh\necho "tensorfold-native %s"\n' "$head" > "$bin"
  chmod +x "$bin"
  if [ -n "${BUILDTEST_PAUSE:-}" ]; then
    echo $$ > "$BUILDTEST_PAUSE.tmp" && mv "$BUILDTEST_PAUSE.tmp" "$BUILDTEST_PAUSE"
    i=0
    while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
  fi
  sed 's/^/# /' "$tf"/src/*.txt >> "$bin"
  echo "built $bin"
fi
`

// brokenScript applies the series like buildScript, then fails to compile.
var brokenScript = strings.Replace(buildScript, `  echo "compiling with zig $("$ZIG" version)"`,
	`  echo "compiling kernels"
  echo "src/attention.cu(12): error: identifier \"__fused_mma\" is undefined" >&2
  echo "1 error detected" >&2
  exit 1`, 1)

// New makes the fixture under a temporary directory.
func New(t testing.TB) *Fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum")
	}
	dir := t.TempDir()
	fx := &Fixture{Mirror: filepath.Join(dir, "mirror"), Bin: filepath.Join(dir, "bin")}
	fx.Recipe = filepath.Join(fx.Mirror, "drama-tensorfold")
	fx.Upstream = filepath.Join(fx.Mirror, "TensorFold")
	fx.Zig = FakeZig(t, fx.Bin, "0.17.0")
	fx.NVCC = FakeNVCC(t, fx.Bin, "13.0")

	// The engine repository, its series on a branch, and an operator patch.
	up := fx.Upstream
	git(t, "", "fixture", "init", "-q", "-b", "main", up)
	write(t, up, "src/engine.txt", "tensorfold engine\n")
	fx.Base = commit(t, up, "fixture", "engine: first version", "2024-01-01T00:00:00Z")
	git(t, up, "fixture", "checkout", "-q", "-b", "series")
	write(t, up, "src/engine.txt", "tensorfold engine\nfused kernels\n")
	commit(t, up, "fixture", "engine: fuse the kernels", "2024-01-02T00:00:00Z")
	write(t, up, "src/voice.txt", "voice references\n")
	fx.PatchedHead = commit(t, up, "fixture", "engine: voice references", "2024-01-03T00:00:00Z")
	write(t, up, "src/voice.txt", "voice references\nprefix cache\n")
	fx.OperatorHead = commit(t, up, "drama", "engine: cache voice prefixes", "2024-01-04T00:00:00Z")
	patchDir := filepath.Join(dir, "series")
	git(t, up, "fixture", "format-patch", "-q", "-o", patchDir, fx.Base+".."+fx.PatchedHead)
	git(t, up, "fixture", "format-patch", "-q", "-o", filepath.Join(dir, "operator"), fx.PatchedHead+".."+fx.OperatorHead)
	ops, _ := filepath.Glob(filepath.Join(dir, "operator", "*.patch"))
	fx.OperatorPatch = ops[0]
	fx.OperatorSHA256 = SHA256(t, fx.OperatorPatch)
	git(t, up, "fixture", "checkout", "-q", "main")
	git(t, up, "fixture", "branch", "-q", "-D", "series")

	// The recipe repository.
	rc := fx.Recipe
	git(t, "", "fixture", "init", "-q", "-b", "main", rc)
	write(t, rc, "LICENSE", "fixture licence\n")
	write(t, rc, "NOTICE", "Built with Fish Audio\n")
	write(t, rc, "engine/UPSTREAM", fx.Base+"\n")
	write(t, rc, "recipe/pilot.py", "print('pilot')\n")
	write(t, rc, "recipe/sources.json", "{}\n")
	write(t, rc, "recipe/checksums/checkpoint.sha256", "")
	write(t, rc, "scripts/build-engine.sh", buildScript)
	if err := os.Chmod(filepath.Join(rc, "scripts/build-engine.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	patches, _ := filepath.Glob(filepath.Join(patchDir, "*.patch"))
	var sums strings.Builder
	for _, p := range patches {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		write(t, rc, "engine/patches/"+filepath.Base(p), string(data))
		sums.WriteString(SHA256(t, p) + "  " + filepath.Base(p) + "\n")
	}
	write(t, rc, "engine/patches/SHA256SUMS", sums.String())
	fx.Good = commit(t, rc, "fixture", "recipe: build the engine", "2024-02-01T00:00:00Z")
	git(t, rc, "fixture", "checkout", "-q", "-b", "broken")
	write(t, rc, "scripts/build-engine.sh", brokenScript)
	fx.Broken = commit(t, rc, "fixture", "recipe: a build that fails", "2024-02-02T00:00:00Z")
	git(t, rc, "fixture", "checkout", "-q", "-b", "tampered", fx.Good)
	first := "engine/patches/" + filepath.Base(patches[0])
	data, _ := os.ReadFile(filepath.Join(rc, first))
	write(t, rc, first, strings.Replace(string(data), "fused kernels", "fused kernelz", 1))
	fx.Tampered = commit(t, rc, "fixture", "recipe: a patch changed behind its sum", "2024-02-03T00:00:00Z")
	git(t, rc, "fixture", "checkout", "-q", "-b", "dirty", fx.Good)
	write(t, rc, "scripts/build-engine.sh", strings.Replace(buildScript, `  head=$(git -C "$tf" rev-parse HEAD)`,
		`  head=$(git -C "$tf" rev-parse HEAD)
  echo "generated" >> "$tf/src/engine.txt"`, 1))
	fx.Dirty = commit(t, rc, "fixture", "recipe: a build that writes into the engine's sources", "2024-02-04T00:00:00Z")
	git(t, rc, "fixture", "checkout", "-q", "main")
	return fx
}

// Sources returns pins for the fixture at recipe commit rc: every pinned
// file of the real pins, NOTICE and the build script with digests, the
// others left to be completed.
func (fx *Fixture) Sources(t testing.TB, rc string) *pins.Sources {
	t.Helper()
	s, err := pins.BuiltinSources("full")
	if err != nil {
		t.Fatal(err)
	}
	s.Recipe.URL = "https://github.invalid/plotarmordev/drama-tensorfold.git"
	s.Recipe.Commit = rc
	s.Upstream.URL = "https://github.invalid/plotarmordev/TensorFold.git"
	s.Upstream.Commit = fx.Base
	s.PatchedHead = fx.PatchedHead
	for i, f := range s.Recipe.Files {
		if f.Path == "NOTICE" {
			s.Recipe.Files[i].SHA256 = sha256hex("Built with Fish Audio\n")
		}
		if f.Path == "scripts/build-engine.sh" && rc == fx.Good {
			s.Recipe.Files[i].SHA256 = sha256hex(buildScript)
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// WriteSources writes s to a file and returns its path.
func WriteSources(t testing.TB, s *pins.Sources) string {
	t.Helper()
	data, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "sources.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// FakeZig writes a zig that prints version to `zig version`.
func FakeZig(t testing.TB, dir, version string) string {
	return script(t, dir, "zig-"+version, "#!/bin/sh\n[ \"$1\" = version ] && echo "+version+"\n")
}

// FakeNVCC writes an nvcc that reports CUDA version (e.g. "13.0").
func FakeNVCC(t testing.TB, dir, version string) string {
	return script(t, dir, "nvcc-"+version, "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\necho 'Cuda compilation tools, release "+
		version+", V"+version+".48'\n")
}

func script(t testing.TB, dir, name, body string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// SHA256 returns a file's sha256 in hex.
func SHA256(t testing.TB, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256hex(string(data))
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func write(t testing.TB, repo, name, content string) {
	t.Helper()
	p := filepath.Join(repo, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func commit(t testing.TB, repo, who, msg, date string) string {
	t.Helper()
	git(t, repo, who, "add", "-A")
	gitDate(t, repo, who, date, "commit", "-q", "-m", msg)
	return git(t, repo, who, "rev-parse", "HEAD")
}

func git(t testing.TB, dir, who string, args ...string) string {
	return gitDate(t, dir, who, "2024-01-01T00:00:00Z", args...)
}

func gitDate(t testing.TB, dir, who, date string, args ...string) string {
	t.Helper()
	email := who + "@example.invalid"
	if who == "drama" {
		email = "drama@localhost"
	}
	cmd := exec.Command("git", append([]string{"-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=author", "GIT_AUTHOR_EMAIL=author@example.invalid", "GIT_AUTHOR_DATE="+date,
		"GIT_COMMITTER_NAME="+who, "GIT_COMMITTER_EMAIL="+email, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
