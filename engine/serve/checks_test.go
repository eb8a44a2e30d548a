package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckVoicesNamesTheSetting: each refusal is a *SettingError naming
// the setting and its value, a usage error when the value itself is wrong;
// a voices directory with the default voice's file, and a writable store,
// pass.
func TestCheckVoicesNamesTheSetting(t *testing.T) {
	voicesDir := t.TempDir()
	data, err := os.ReadFile("../../voices/testdata/cuda.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(voicesDir, "fixture.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(voicesDir, "fixture.json")
	ids := VoiceIDs(voicesDir)
	if len(ids) != 1 {
		t.Fatalf("voice ids %v, want the fixture's", ids)
	}
	if err := CheckVoices(voicesDir, ids[0], t.TempDir()); err != nil {
		t.Fatalf("a directory holding the default voice: %v", err)
	}
	for _, c := range []struct {
		voices, def, store string
		setting, value     string
		want               string
	}{
		{filepath.Join(voicesDir, "nope"), "", "", "VoicesDir", filepath.Join(voicesDir, "nope"), "no such directory"},
		{file, "", "", "VoicesDir", file, "not a directory"},
		{voicesDir, "ghost", "", "DefaultVoice", "ghost", "not among the voices in " + voicesDir + " (" + ids[0] + ")"},
		{"", "", filepath.Join(voicesDir, "unmounted"), "VoiceStore", filepath.Join(voicesDir, "unmounted"), "mount the file system the hosts share there"},
		{"", "", file, "VoiceStore", file, "not a directory"},
	} {
		err := CheckVoices(c.voices, c.def, c.store)
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != c.setting || se.Value != c.value || !se.Usage || !strings.Contains(se.Err.Error(), c.want) {
			t.Errorf("CheckVoices(%q, %q, %q) = %v; want a usage error of %s %s: %s", c.voices, c.def, c.store, err, c.setting, c.value, c.want)
		}
	}
}

// TestParseKeepAlive: durations, seconds, 0, and forever or any negative
// value (-1), written back as read.
func TestParseKeepAlive(t *testing.T) {
	for in, want := range map[string]string{"10m": "10m0s", "90": "1m30s", "0": "0s", "forever": KeepForever, " FOREVER ": KeepForever,
		"-5m": KeepForever, "-1": KeepForever, "250ms": "250ms"} {
		d, err := ParseKeepAlive(in)
		if err != nil || FormatKeepAlive(d) != want || (want == KeepForever && d != -1) {
			t.Errorf("ParseKeepAlive(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
	if _, err := ParseKeepAlive("soon"); err == nil || !strings.Contains(err.Error(), "want a duration") {
		t.Errorf("soon: %v", err)
	}
}

// TestParseGPUs: indexes once each, the engines per GPU a number from 1
// or auto.
func TestParseGPUs(t *testing.T) {
	if g, err := ParseGPUs(" 0, 2"); err != nil || len(g) != 2 || g[0] != 0 || g[1] != 2 {
		t.Fatalf("0, 2: %v %v", g, err)
	}
	for in, want := range map[string]string{"0,x": "want GPU indexes", "-1": "want GPU indexes", "1,1": "GPU 1 given twice"} {
		if _, err := ParseGPUs(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseGPUs(%q) = %v, want %q", in, err, want)
		}
	}
	if n, err := ParsePerGPU("auto"); err != nil || n != PerGPUAuto {
		t.Fatalf("auto: %d %v", n, err)
	}
	for _, in := range []string{"0", "x", ""} {
		if _, err := ParsePerGPU(in); err == nil {
			t.Errorf("ParsePerGPU(%q) taken", in)
		}
	}
}

// TestOnLoopback: loopback names and addresses, and nothing else.
func TestOnLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8793": true, "[::1]:1": true, "localhost:1": true, "127.0.0.2:1": true,
		"0.0.0.0:8793": false, ":8793": false, "10.0.0.1:1": false, "example.com:80": false, "nonsense": false} {
		if OnLoopback(addr) != want {
			t.Errorf("OnLoopback(%q) = %v", addr, !want)
		}
	}
}

// TestFilesErrorNamesTheFirstFew: a mismatch names three files and counts
// the rest; files that could not be read are each named.
func TestFilesErrorNamesTheFirstFew(t *testing.T) {
	bad := []string{"a: missing", "b: missing", "c: missing", "d: missing", "e: missing"}
	e := &FilesError{Variant: "full", Total: 9, Bad: bad, Mismatched: true}
	if got := e.Error(); got != "5 of 9 files of full do not match the pins (a: missing; b: missing; c: missing; 2 more)" {
		t.Errorf("mismatch: %s", got)
	}
	e.Mismatched = false
	if got := e.Error(); !strings.Contains(got, "5 of 9 files of full could not be read (") || !strings.Contains(got, "e: missing") {
		t.Errorf("unreadable: %s", got)
	}
}
