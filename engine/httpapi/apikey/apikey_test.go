package apikey

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	keyOps   = "ops-0123456789abcdef0123"
	keySpeak = "spk-0123456789abcdef0123"
	keyVoice = "vox-0123456789abcdef0123"
)

func TestParseKeyFile(t *testing.T) {
	text := "# drama serve's keys\n\n" +
		keyOps + " ops admin   # the operators\n" +
		"\t" + keySpeak + "\tapp\n" +
		keyVoice + " studio voices\n" +
		"nameless-0123456789abcdef\n"
	s, err := Parse("keys.txt", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, name string
		scope     Scope
	}{{keyOps, "ops", Admin}, {keySpeak, "app", Speak}, {keyVoice, "studio", Voices}, {"nameless-0123456789abcdef", "line-6", Speak}} {
		k, ok := s.Lookup(c.key)
		if !ok || k.Name != c.name || k.Scope != c.scope {
			t.Errorf("%s: %+v %v, want %s %s", c.name, k, ok, c.name, c.scope)
		}
	}
	for _, wrong := range []string{"", "ops", keyOps + "x", keyOps[:len(keyOps)-1], strings.ToUpper(keyOps)} {
		if k, ok := s.Lookup(wrong); ok {
			t.Errorf("Lookup(%q) found %s", wrong, k.Name)
		}
	}
	if got := strings.Join(s.Names(), ","); got != "ops,app,studio,line-6" {
		t.Errorf("names %s", got)
	}
}

// TestParseRefusesBadLines: each refusal names the file and line and says
// what to do, and never quotes the key.
func TestParseRefusesBadLines(t *testing.T) {
	for text, want := range map[string]string{
		"short-key ops admin\n":                                   "keys.txt:1: the key is 9 characters; a key needs at least 16",
		"# c\n" + keyOps + " ops admin extra\n":                   "keys.txt:2: 4 fields: want KEY [NAME] [SCOPE]",
		keyOps + " ops root\n":                                    `keys.txt:1: unknown scope "root": want speak, voices or admin`,
		keyOps + " admin\n":                                       `keys.txt:1: "admin" stands where the name goes: write KEY NAME admin`,
		keyOps + " o/ps\n":                                        `keys.txt:1: the name "o/ps"`,
		keyOps + " ops\n" + keyOps + " again\n":                   "keys.txt:2: the same key as keys.txt:1: give each key once",
		keyOps + " ops\n" + keySpeak + " ops\n":                   `keys.txt:2: the name "ops" is also the name of the key of keys.txt:1`,
		"ops-0123456789abcdef\x7f0123 ops\n":                      "keys.txt:1: character 21 of the key is not printable ASCII",
		strings.Repeat("k", MaxLength+1) + " long\n":              "keys.txt:1: the key is 257 characters",
		"# only a comment\n\n":                                    "keys.txt: no keys: write one key a line, KEY NAME SCOPE",
		"ops-0123456789abcdéf0123 ops\n":                          "keys.txt:1: character 19 of the key is not printable ASCII",
		keyOps + " ops admin\n" + keySpeak + " app speak # x y\n": "",
	} {
		_, err := Parse("keys.txt", strings.NewReader(text))
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", text, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant %s...", text, err, want)
			continue
		}
		if fields := strings.Fields(text); len(fields[0]) >= 10 && strings.Contains(err.Error(), fields[0]) {
			t.Errorf("the message quotes the key: %v", err)
		}
	}
}

func writeFile(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// TestReadFileRefusesAFileEveryoneReads: a key file other users may read
// or write is refused, with the chmod that fixes it.
func TestReadFileRefusesAFileEveryoneReads(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o602, 0o666} {
		p := writeFile(t, keyOps+" ops admin\n", mode)
		_, err := ReadFile(p)
		if err == nil || !strings.Contains(err.Error(), "every user") || !strings.Contains(err.Error(), "chmod 600 "+p) {
			t.Errorf("mode %o: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o640, 0o400} {
		p := writeFile(t, keyOps+" ops admin\n", mode)
		if s, err := ReadFile(p); err != nil || s.Len() != 1 {
			t.Errorf("mode %o: %v", mode, err)
		}
	}
	if _, err := ReadFile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not a file") {
		t.Errorf("a directory: %v", err)
	}
}

func TestLoadEnvAndFile(t *testing.T) {
	if s, err := Load("", ""); s != nil || err != nil {
		t.Fatalf("no keys: %v %v", s, err)
	}
	s, err := Load(keyOps, "")
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := s.Lookup(keyOps); !ok || k.Name != "env" || k.Scope != Admin {
		t.Fatalf("the environment's key: %+v %v", k, ok)
	}
	if _, err := Load("short", ""); err == nil || !strings.HasPrefix(err.Error(), "DRAMA_API_KEY: the key is 5 characters") || strings.Contains(err.Error(), "short") {
		t.Fatalf("a short key in the environment: %v", err)
	}
	p := writeFile(t, keySpeak+" app\n", 0o600)
	s, err = Load(keyOps, p)
	if err != nil || s.Len() != 2 {
		t.Fatalf("%v %d", err, s.Len())
	}
	p = writeFile(t, keySpeak+" app\n"+keyOps+" ops\n", 0o600)
	if _, err := Load(keyOps, p); err == nil || err.Error() != p+":2: the same key as DRAMA_API_KEY: give each key once" {
		t.Fatalf("the file repeats the environment's key: %v", err)
	}
	p = writeFile(t, "\n", 0o600)
	if _, err := Load(keyOps, p); !errors.Is(err, ErrNoKeys) {
		t.Fatalf("an empty file beside the environment's key: %v", err)
	}
	if _, err := Load("", filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("a missing file is no error")
	}
}

// TestLookupComparesEveryKeyInConstantTime: the presented key is hashed and
// its digest compared with every key's through the constant-time compare,
// whichever key matches and however long the presented text is, so that
// timing tells neither which key came close nor a key's length.
func TestLookupComparesEveryKeyInConstantTime(t *testing.T) {
	s, err := Parse("keys.txt", strings.NewReader(keyOps+" ops admin\n"+keySpeak+" app\n"+keyVoice+" studio voices\n"))
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	var lens []int
	equal = func(a, b []byte) int {
		calls++
		lens = append(lens, len(a), len(b))
		if len(a) != len(b) {
			t.Errorf("compared %d bytes with %d", len(a), len(b))
		}
		return subtleEqual(a, b)
	}
	defer func() { equal = subtleEqual }()
	for _, presented := range []string{keyOps, keyVoice, "x", strings.Repeat("y", 200)} {
		calls, lens = 0, nil
		s.Lookup(presented)
		if calls != 3 {
			t.Errorf("%d chars: %d compares, want one per key (3)", len(presented), calls)
		}
		for _, n := range lens {
			if n != sha256.Size {
				t.Errorf("%d chars: compared %d bytes, want the %d of a digest", len(presented), n, sha256.Size)
			}
		}
	}
}

var subtleEqual = equal

func TestScopes(t *testing.T) {
	if !Admin.Allows(Voices) || !Voices.Allows(Speak) || Speak.Allows(Voices) || Voices.Allows(Admin) || !Speak.Allows(Speak) {
		t.Fatal("scopes are not ordered speak < voices < admin")
	}
	for _, sc := range Scopes {
		if got, err := ParseScope(sc.String()); err != nil || got != sc {
			t.Errorf("%s: %v %v", sc, got, err)
		}
	}
}

// TestDocsExampleParses holds the key file shown in docs/serve.md to the
// parser: three keys, their names and scopes as the text says.
func TestDocsExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## API keys\n")
	if !ok {
		t.Fatal("docs/serve.md has no section ## API keys")
	}
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "```")
	s, err := Parse("serve.md", strings.NewReader(block))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Scope{"ops": Admin, "studio": Voices, "app": Speak}
	for _, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if k, ok := s.Lookup(f[0]); !ok || want[k.Name] != k.Scope {
			t.Errorf("%s: %+v %v", f[1], k, ok)
		}
		delete(want, f[1])
	}
	if len(want) != 0 {
		t.Errorf("keys not in the example: %v", want)
	}
}
