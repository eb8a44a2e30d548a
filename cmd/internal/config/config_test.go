package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseShapes(t *testing.T) {
	for text, want := range map[string]string{
		"- a\n":                          ":1: want sections",
		"serve: 3\n":                     ":1: serve: want a section of keys",
		"serve:\n  addr: [1, 2]\n":       ":2: serve.addr: want a value, got a list",
		"serve:\n  voice_aliases: x\n":   ":2: serve.voice_aliases: want NAME: VOICE pairs",
		"serve:\n  addr: a\n  addr: b\n": ":3: serve.addr is set twice",
		"a: [":                           "yaml:",
	} {
		_, err := Parse("c.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", text, err, want)
		}
	}
	cf, err := Parse("c.yaml", []byte("serve:\n  voice_aliases:\n    alloy: narrator\n    echo: anna\n"))
	if err != nil || cf.Values["serve.voice_aliases"].String() != "alloy=narrator,echo=anna" || cf.Values["serve.voice_aliases"].Line != 2 {
		t.Fatalf("%+v %v", cf, err)
	}
}

func TestConfigPath(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	if p, explicit := Path(env(EnvConfig, "/etc/d.yaml", "XDG_CONFIG_HOME", "/x")); p != "/etc/d.yaml" || !explicit {
		t.Errorf("DRAMA_CONFIG: %s", p)
	}
	if p, _ := Path(env("XDG_CONFIG_HOME", "/x", "HOME", "/h")); p != "/x/drama/config.yaml" {
		t.Errorf("XDG: %s", p)
	}
	if p, _ := Path(env("HOME", "/h")); p != "/h/.config/drama/config.yaml" {
		t.Errorf("HOME: %s", p)
	}
	if _, err := Load(env(EnvConfig, filepath.Join(t.TempDir(), "none.yaml"))); err == nil {
		t.Error("a missing file named by DRAMA_CONFIG is no error")
	}
	if cf, err := Load(env("HOME", t.TempDir())); err != nil || len(cf.Values) != 0 {
		t.Errorf("no file at the default place: %v %v", cf, err)
	}
}
