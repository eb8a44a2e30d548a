package pins

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/internal/safetext"
)

const rev = "e0a9218aa48888270f06ef1ed9ea67622c0e17d2"

func validPins() *Pins {
	return &Pins{Format: Format, Variant: "full", Repo: "org/name", RepoType: "model", Revision: rev,
		Files: []File{{Path: "b.bin", Size: 3, SHA256: strings.Repeat("a", 64)}, {Path: "a/x.json", Size: 1, SHA256: strings.Repeat("b", 64)}}}
}

func TestParseRoundTrip(t *testing.T) {
	p := validPins()
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(data, "x.json")
	if err != nil {
		t.Fatal(err)
	}
	if q.Files[0].Path != "a/x.json" || len(q.Files) != 2 || !q.Complete() {
		t.Fatalf("parsed %+v", q)
	}
	again, _ := q.Marshal()
	if string(again) != string(data) {
		t.Fatalf("marshal not stable:\n%s\n%s", data, again)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"syntax", `{"format": "drama-pins/1",, }`, "byte offset 26 (line 1, column 27)"},
		{"type", `{"format": "drama-pins/1", "files": [{"path": "a", "size": "big"}]}`, `field "files.size"`},
		{"unknown field", `{"format": "drama-pins/1", "bogus": 1}`, `unknown field "bogus"`},
		{"empty", ``, "empty file"},
		{"trailing", `{"format":"drama-pins/1","variant":"full","files":[]} {}`, "data after"},
		{"format", `{"format": "other/1", "variant": "full"}`, `want "drama-pins/1"`},
		{"branch revision", `{"format":"drama-pins/1","variant":"full","revision":"main"}`, "not a full 40-hex commit"},
		{"dup", `{"format":"drama-pins/1","variant":"full","files":[{"path":"a","size":1},{"path":"a","size":1}]}`, "listed twice"},
		{"escape", `{"format":"drama-pins/1","variant":"full","files":[{"path":"../a","size":1}]}`, "clean relative"},
		{"abs", `{"format":"drama-pins/1","variant":"full","files":[{"path":"/etc/passwd","size":1}]}`, "clean relative"},
		{"state dir", `{"format":"drama-pins/1","variant":"full","files":[{"path":".drama/x","size":1}]}`, "clean relative"},
		{"bad sha", `{"format":"drama-pins/1","variant":"full","files":[{"path":"a","size":1,"sha256":"XYZ"}]}`, "64 lower-case hex"},
		{"negative", `{"format":"drama-pins/1","variant":"full","files":[{"path":"a","size":-1}]}`, "negative"},
		// A name that would rewrite the terminal, or forge a line of
		// drama's output, when shown: refused, and named escaped.
		{"escape sequence", `{"format":"drama-pins/1","variant":"full","files":[{"path":"esc\u001b]0;PWNED\u0007\u001b[31mred.txt","size":1}]}`,
			`path "esc\x1b]0;PWNED\a\x1b[31mred.txt" holds the control character \x1b at byte 3`},
		{"newline", `{"format":"drama-pins/1","variant":"full","files":[{"path":"a\nINJECTED: drama verified OK.txt","size":1}]}`,
			`path "a\nINJECTED: drama verified OK.txt" holds the control character \n at byte 1`},
		{"tab", `{"format":"drama-pins/1","variant":"full","files":[{"path":"a\tb","size":1}]}`, `control character \t`},
		{"DEL", `{"format":"drama-pins/1","variant":"full","files":[{"path":"a\u007f","size":1}]}`, `control character \x7f`},
		{"C1", `{"format":"drama-pins/1","variant":"full","files":[{"path":"sub/\u009b31m","size":1}]}`, `"sub/\u009b31m" holds the control character \u009b at byte 4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), "p.json")
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "p.json") {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q and the file", err, tt.want)
			}
			if strings.ContainsFunc(err.Error(), safetext.Escapes) {
				t.Fatalf("err = %q holds a control character", err)
			}
		})
	}
}

func TestBuiltin(t *testing.T) {
	want := map[string]struct {
		repo, rev, engine string
		bytes             int64
		flags             string
	}{
		"full":  {"fishaudio/drama-3", rev, "cuda", 41474674072, ""},
		"nvfp4": {"plotarmordev/drama-3-NVFP4-Pruned", "494db08481db952f834b2241bce63fb3dfa72554", "cuda", 22294649076, "--cfg-gamma 1.5 --cfg-batched"},
		"macos": {"plotarmordev/drama-3-NVFP4-Pruned", "494db08481db952f834b2241bce63fb3dfa72554", "metal", 22294649076, ""},
	}
	for v, w := range want {
		p, err := Builtin(v)
		if err != nil {
			t.Fatal(err)
		}
		if p.Repo != w.repo || p.Revision != w.rev || p.Engine != w.engine || p.ExpectedBytes != w.bytes || strings.Join(p.ServeFlags, " ") != w.flags {
			t.Errorf("%s: got %+v", v, p)
		}
		if p.Complete() {
			t.Errorf("%s: built-in pins must not carry invented digests", v)
		}
	}
	if _, err := Builtin("huge"); err == nil {
		t.Fatal("unknown variant accepted")
	}
}

func TestCheckExpected(t *testing.T) {
	p := &Pins{Format: Format, Variant: "nvfp4", ExpectedFiles: 3, ExpectedBytes: 30, ExpectedBytesOf: []string{"*.safetensors", "codec.pth"},
		Files: []File{{Path: "a.safetensors", Size: 10}, {Path: "codec.pth", Size: 20}, {Path: "config.json", Size: 5}}}
	if err := p.CheckExpected(); err != nil {
		t.Fatal(err)
	}
	p.Files[0].Size = 11
	if err := p.CheckExpected(); err == nil || !strings.Contains(err.Error(), "want 30 bytes, got 31") {
		t.Fatalf("err = %v", err)
	}
	p.Files = p.Files[:2]
	if err := p.CheckExpected(); err == nil || !strings.Contains(err.Error(), "want 3 files, got 2") {
		t.Fatalf("err = %v", err)
	}
}

func TestWriteFileLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "p.json")
	p := validPins()
	if err := p.WriteFile(name); err != nil {
		t.Fatal(err)
	}
	q, err := ReadFile(name)
	if err != nil || len(q.Files) != 2 {
		t.Fatalf("%v %+v", err, q)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}

func TestDiff(t *testing.T) {
	a := &Pins{Files: []File{{Path: "codec.pth", Size: 5, SHA256: strings.Repeat("1", 64)}, {Path: "w.safetensors", Size: 9, SHA256: strings.Repeat("2", 64)}, {Path: "old", Size: 1}}}
	b := &Pins{Files: []File{{Path: "codec.pth", Size: 5, SHA256: strings.Repeat("1", 64)}, {Path: "w.safetensors", Size: 9, SHA256: strings.Repeat("3", 64)}, {Path: "new", Size: 1}}}
	got := Diff(a, b)
	want := map[string]string{"codec.pth": "same", "w.safetensors": "changed", "old": "removed", "new": "added"}
	if len(got) != 4 {
		t.Fatalf("got %d changes", len(got))
	}
	for _, c := range got {
		if want[c.Path] != c.Kind {
			t.Errorf("%s: want %s, got %s", c.Path, want[c.Path], c.Kind)
		}
	}
}

// TestCompletedBy: a lock of the same repository and revision completes
// pins that list no file (all of it) or some files without digests (those
// files, in the pins' order), and nothing else.
func TestCompletedBy(t *testing.T) {
	rev := strings.Repeat("a", 40)
	sha := func(c string) string { return strings.Repeat(c, 64) }
	lock := &Pins{Repo: "fishaudio/drama-3", Revision: rev, Files: []File{
		{Path: "codec.pth", Size: 10, SHA256: sha("1")},
		{Path: "config.json", Size: 2, SHA256: sha("2")},
		{Path: "model.safetensors", Size: 30, SHA256: sha("3"), LFS: true},
	}}
	pinsOf := func(files ...File) *Pins {
		return &Pins{Variant: "full", Repo: lock.Repo, Revision: rev, License: "L", Files: files}
	}
	if c, ok := pinsOf().CompletedBy(lock); !ok || c != lock {
		t.Fatalf("pins with no file: %v %+v, want the lock itself", ok, c)
	}
	c, ok := pinsOf(File{Path: "model.safetensors"}, File{Path: "codec.pth", Size: 10}).CompletedBy(lock)
	if !ok || !c.Complete() || len(c.Files) != 2 || c.Files[0] != lock.Files[2] || c.Files[1] != lock.Files[0] || c.License != "L" {
		t.Fatalf("pins naming two files: %v %+v", ok, c)
	}
	for name, p := range map[string]*Pins{
		"a file the lock lacks": pinsOf(File{Path: "tokenizer.json"}),
		"another size":          pinsOf(File{Path: "codec.pth", Size: 11}),
		"another sha256":        pinsOf(File{Path: "codec.pth", SHA256: sha("9")}),
		"another revision":      {Repo: lock.Repo, Revision: strings.Repeat("b", 40)},
		"another repository":    {Repo: "someone/else", Revision: rev},
		"no revision":           {Repo: lock.Repo},
	} {
		if c, ok := p.CompletedBy(lock); ok || c != nil {
			t.Errorf("%s: completed by the lock: %+v", name, c)
		}
	}
	incomplete := *lock
	incomplete.Files = []File{{Path: "codec.pth", Size: 10}}
	if _, ok := pinsOf(File{Path: "codec.pth"}).CompletedBy(&incomplete); ok {
		t.Error("completed by an incomplete lock")
	}
	if _, ok := pinsOf().CompletedBy(nil); ok {
		t.Error("completed by no lock")
	}
}
