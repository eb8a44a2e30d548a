package cmdutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEngineBinaryAndRecord(t *testing.T) {
	ios, _, _, _ := testStreams()
	root := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	f := testFactory(ios)
	if p, err := EngineBinary(f, "", "cuda", root); p != "" || err != nil {
		t.Fatalf("nothing installed: %q %v", p, err)
	}
	os.MkdirAll(filepath.Join(root, "engine"), 0o755)
	bin := filepath.Join(root, "engine", "tensorfold-native")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	if p, _ := EngineBinary(f, "", "cuda", root); p != bin {
		t.Fatalf("root engine: %q", p)
	}
	if p, _ := EngineBinary(testFactory(ios, "DRAMA_ENGINE_BIN", "/opt/x"), "", "cuda", root); p != "/opt/x" {
		t.Fatalf("environment: %q", p)
	}
	if p, _ := EngineBinary(f, "/flag/bin", "cuda", root); p != "/flag/bin" {
		t.Fatalf("flag: %q", p)
	}
	if sum, err := EngineRecord(root); err != nil || sum != "" {
		t.Fatalf("no record: %q %v", sum, err)
	}
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte("nonsense\n"), 0o644)
	if _, err := EngineRecord(root); ExitCode(err) != ExitMismatch {
		t.Fatalf("malformed record: %v", err)
	}
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte(strings.Repeat("zz", 32)+"  tensorfold-native\n"), 0o644)
	if _, err := EngineRecord(root); ExitCode(err) != ExitMismatch || !strings.Contains(err.Error(), "sha256sum") {
		t.Fatalf("64 characters that are not hex: %v", err)
	}
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte(strings.Repeat("ab", 32)+"  tensorfold-native\x1b[2J\n"), 0o644)
	if _, err := EngineRecord(root); ExitCode(err) != ExitMismatch || !strings.Contains(err.Error(), "line 1: ") || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("a terminal escape in the name: %v", err)
	}
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte(strings.Repeat("AB", 32)+"  tensorfold-native\n"), 0o644)
	if sum, _ := EngineRecord(root); sum != strings.Repeat("ab", 32) {
		t.Fatalf("record: %q", sum)
	}
}

func TestEngineBinaryAndRecordOfAnInstalledVariant(t *testing.T) {
	ios, _, _, _ := testStreams()
	root := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	f := testFactory(ios)
	f.Global.Variant = "nvfp4"
	os.MkdirAll(filepath.Join(root, "engine", "nvfp4"), 0o755)
	os.WriteFile(filepath.Join(root, "engine", "tensorfold-native"), []byte("#!/bin/sh\n"), 0o755)
	bin := filepath.Join(root, "engine", "nvfp4", "tensorfold-native")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	if p, _ := EngineBinary(f, "", "cuda", root); p != bin {
		t.Fatalf("variant's engine: got %q, want %q", p, bin)
	}
	// Installed but not recorded: refused, not unchecked.
	if _, err := EngineRecordFor(root, bin); ExitCode(err) != ExitMismatch || !strings.Contains(err.Error(), "drama engine install --variant nvfp4") {
		t.Fatalf("no record beside the binary: %v", err)
	}
	os.WriteFile(filepath.Join(root, "engine", "nvfp4", "engine.sha256"), []byte(strings.Repeat("cd", 32)+"  drama3-voice\n"), 0o644)
	if _, err := EngineRecordFor(root, bin); ExitCode(err) != ExitMismatch || !strings.Contains(err.Error(), "no sha256 for tensorfold-native") {
		t.Fatalf("record without the binary: %v", err)
	}
	os.WriteFile(filepath.Join(root, "engine", "nvfp4", "engine.sha256"),
		[]byte(strings.Repeat("cd", 32)+"  drama3-voice\n"+strings.Repeat("ab", 32)+"  tensorfold-native\n"), 0o644)
	if sum, err := EngineRecordFor(root, bin); err != nil || sum != strings.Repeat("ab", 32) {
		t.Fatalf("record beside the binary: %q %v", sum, err)
	}
	// A record that names the binary twice holds it to neither digest.
	os.WriteFile(filepath.Join(root, "engine", "nvfp4", "engine.sha256"),
		[]byte(strings.Repeat("ab", 32)+"  tensorfold-native\n"+strings.Repeat("cd", 32)+"  tensorfold-native\n"), 0o644)
	if _, err := EngineRecordFor(root, bin); ExitCode(err) != ExitMismatch || !strings.Contains(err.Error(), "line 2: ") ||
		!strings.Contains(err.Error(), "drama engine install --variant nvfp4") {
		t.Fatalf("record naming the binary twice: %v", err)
	}
	// A binary elsewhere keeps the root's record.
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte(strings.Repeat("ef", 32)+"  tensorfold-native\n"), 0o644)
	if sum, err := EngineRecordFor(root, "/opt/engine/tensorfold-native"); err != nil || sum != strings.Repeat("ef", 32) {
		t.Fatalf("binary elsewhere: %q %v", sum, err)
	}
}
