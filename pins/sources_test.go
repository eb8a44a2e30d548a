package pins

import (
	"errors"
	"strings"
	"testing"
)

func TestBuiltinSourcesParseAndCarryNoInventedDigest(t *testing.T) {
	for _, v := range Variants {
		s, err := BuiltinSources(v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if s.Variant != v || len(s.Build.Binaries) == 0 {
			t.Errorf("%s: %+v", v, s)
		}
		// The notes give no file digests: every one is left to be completed.
		for _, f := range s.Recipe.Files {
			if f.SHA256 != "" {
				t.Errorf("%s: %s carries a digest the notes do not give", v, f.Path)
			}
		}
		if s.Complete() {
			t.Errorf("%s: locked without digests", v)
		}
	}
	full, _ := BuiltinSources("full")
	if full.Recipe.Commit != "1a53b8aea738a99d3630f949b6b2a1f9389f0795" || full.Upstream.Commit != "c7137bb31a7dad924fb541a7068422127b9a94b2" ||
		full.PatchedHead != "459771e7531431490b80d7a8149c9160e03c01ce" || len(full.Recipe.Files) != 8 {
		t.Errorf("full: %+v", full)
	}
	if _, err := BuiltinSources("other"); err == nil {
		t.Error("unknown variant accepted")
	}
}

func TestParseSourcesRefusesBadFields(t *testing.T) {
	full, _ := BuiltinSources("full")
	good, _ := full.Marshal()
	if _, err := ParseSources(good, "good.json"); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ from, to, want string }{
		"branch":        {`"commit": "1a53b8aea738a99d3630f949b6b2a1f9389f0795"`, `"commit": "main"`, `recipe.commit: want a full 40-hex commit, got "main"`},
		"digest":        {`"path": "NOTICE"`, `"path": "NOTICE", "sha256": "ABC"`, `recipe.files[1].sha256: want 64 lower-case hex digits`},
		"path":          {`"path": "NOTICE"`, `"path": "../NOTICE"`, `recipe.files[1].path: "../NOTICE" is not a clean relative path`},
		"binary":        {`"tensorfold-native"`, `"bin/tensorfold-native"`, `build.binaries[0]: want a plain file name`},
		"unknown field": {`"engine": "cuda",`, `"engine": "cuda", "extra": 1,`, `unknown field "extra"`},
		"engine":        {`"engine": "cuda"`, `"engine": "rocm"`, `engine: want cuda or metal, got "rocm"`},
		"same names":    {`"name": "TensorFold"`, `"name": "drama-tensorfold"`, `both "drama-tensorfold"`},
	}
	for name, c := range cases {
		data := strings.Replace(string(good), c.from, c.to, 1)
		if data == string(good) {
			t.Fatalf("%s: edit did not apply", name)
		}
		_, err := ParseSources([]byte(data), "x.json")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.json") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
