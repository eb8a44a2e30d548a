package realclient

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A skip for a missing client appends its line to $DRAMA_SKIP_LOG: the
// package, the test, the client, why and the fix.
func TestSkipIsLogged(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skips")
	t.Setenv(SkipLogEnv, log)
	t.Setenv(RequireEnv, "")
	t.Run("suite", func(t *testing.T) {
		Node(t, "no-such-client-of-drama")
		t.Error("a missing client did not skip")
	})
	b, err := os.ReadFile(log)
	want := "./cmd/internal/realclient\tTestSkipIsLogged/suite\tno-such-client-of-drama\tnot installed in scripts/node_modules\trun (cd scripts && npm ci)\n"
	if _, lerr := exec.LookPath("node"); lerr != nil {
		want = "./cmd/internal/realclient\tTestSkipIsLogged/suite\tno-such-client-of-drama\tnode is not on PATH\tinstall Node.js 20 or later\n"
	}
	if err != nil || string(b) != want {
		t.Fatalf("log %q %v, want %q", b, err, want)
	}
}

// make test ends with the suites skipped, each with why and the command
// that brings its client, and fails when a test fails: here a go that
// logs one skip and fails.
func TestMakeTestEndsWithTheSkips(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root := ModuleRoot(t)
	fake := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\n" +
		"case \"$1\" in vet|build|run) exit 0;; esac\n" + // the vet, cross-build, staticcheck and deadcode lines pass (deadcode printing nothing)
		"printf './engine/httpapi\\tTestOpenAISDK\\topenai\\tnot installed in scripts/node_modules\\trun (cd scripts && npm ci)\\n' >> \"$DRAMA_SKIP_LOG\"\n" +
		"echo FAIL; exit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "--no-print-directory", "test", "GO="+fake)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), SkipLogEnv+"=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make test passed with a failing test:\n%s", out)
	}
	// What make itself adds after the recipe ends does not count.
	o := string(out)
	// (make: *** at the top, make[1]: *** under an outer make such as CI's)
	if loc := regexp.MustCompile(`make(\[[0-9]+\])?: \*\*\* `).FindStringIndex(o); loc != nil {
		o = o[:loc[0]]
	}
	want := "make test: 1 suite skipped: a real client is missing (DRAMA_REAL_CLIENTS=require makes each a failure):\n" +
		"  ./engine/httpapi TestOpenAISDK: openai not available (not installed in scripts/node_modules): run (cd scripts && npm ci)\n"
	if !strings.HasSuffix(o, want) || !strings.Contains(o, "FAIL\n") {
		t.Fatalf("make test output:\n%s\nwant it to end with:\n%s", o, want)
	}
}
