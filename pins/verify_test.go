package pins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// makeTree writes files of the given sizes with pseudo-random content under
// dir and returns complete pins for them.
func makeTree(t *testing.T, dir string, sizes map[string]int) *Pins {
	t.Helper()
	p := &Pins{Format: Format, Variant: "full", Revision: rev}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, size := range sizes {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		p.Files = append(p.Files, File{Path: name, Size: int64(size), SHA256: hex.EncodeToString(sum[:])})
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func result(t *testing.T, r *Report, path string) Result {
	t.Helper()
	for _, f := range r.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("no result for %s", path)
	return Result{}
}

func TestVerifyDetectsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	p := makeTree(t, dir, map[string]int{"big.safetensors": 8 << 20, "trunc.bin": 1000, "gone.json": 10, "sub/ok.txt": 5, "empty": 0})
	// one flipped byte in the middle of the large file
	flipByte(t, filepath.Join(dir, "big.safetensors"), 4<<20)
	if err := os.Truncate(filepath.Join(dir, "trunc.bin"), 999); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "gone.json"))
	os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, LockFileName), []byte("{}"), 0o644)

	rep, err := Verify(context.Background(), dir, p, VerifyOptions{Level: LevelSHA256, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{"big.safetensors": StatusSHA256Mismatch, "trunc.bin": StatusSizeMismatch, "gone.json": StatusMissing, "sub/ok.txt": StatusOK, "empty": StatusOK}
	for path, st := range want {
		if got := result(t, rep, path); got.Status != st {
			t.Errorf("%s: want %s, got %s (%+v)", path, st, got.Status, got)
		}
	}
	big := result(t, rep, "big.safetensors")
	if big.GotSHA256 == "" || big.GotSHA256 == big.WantSHA256 {
		t.Errorf("mismatch must carry want and got: %+v", big)
	}
	if tr := result(t, rep, "trunc.bin"); tr.WantSize != 1000 || tr.GotSize != 999 {
		t.Errorf("truncated: %+v", tr)
	}
	if len(rep.Extra) != 1 || rep.Extra[0] != "stray.txt" {
		t.Errorf("extra = %v, want [stray.txt]", rep.Extra)
	}
	if !rep.Mismatched() || rep.OK() {
		t.Error("report must be a mismatch")
	}
}

func flipByte(t *testing.T, name string, off int64) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestVerifiedStateRecord(t *testing.T) {
	dir := t.TempDir()
	p := makeTree(t, dir, map[string]int{"a.bin": 4096, "b.bin": 100})
	ctx := context.Background()
	rep, err := Verify(ctx, dir, p, VerifyOptions{Level: LevelSize})
	if err != nil || result(t, rep, "a.bin").Verified != LevelSize {
		t.Fatalf("before any full check the size level only vouches for size: %v %+v", err, rep)
	}
	if _, err := Verify(ctx, dir, p, VerifyOptions{Level: LevelSHA256}); err != nil {
		t.Fatal(err)
	}
	rep, _ = Verify(ctx, dir, p, VerifyOptions{Level: LevelSize})
	if r := result(t, rep, "a.bin"); r.Verified != LevelSHA256 || !r.FromRecord || rep.HashedBytes != 0 {
		t.Fatalf("unchanged file must stay sha256-verified without hashing: %+v hashed=%d", r, rep.HashedBytes)
	}

	// same size, new content, new mtime: the record no longer vouches
	name := filepath.Join(dir, "a.bin")
	flipByte(t, name, 10)
	future := time.Now().Add(time.Hour)
	os.Chtimes(name, future, future)
	rep, _ = Verify(ctx, dir, p, VerifyOptions{Level: LevelSize})
	if r := result(t, rep, "a.bin"); r.Verified != LevelSize || r.FromRecord {
		t.Fatalf("mtime change must invalidate the record: %+v", r)
	}

	// a replaced file (new inode, same size and mtime) is not vouched for either
	b := filepath.Join(dir, "b.bin")
	st, _ := os.Stat(b)
	data, _ := os.ReadFile(b)
	os.Rename(b, b+".old") // keep the old inode in use so the new file gets another
	os.WriteFile(b, data, 0o644)
	os.Chtimes(b, st.ModTime(), st.ModTime())
	rep, _ = Verify(ctx, dir, p, VerifyOptions{Level: LevelSize})
	if r := result(t, rep, "b.bin"); r.FromRecord {
		t.Fatalf("inode change must invalidate the record: %+v", r)
	}
}

func TestVerifyRefusals(t *testing.T) {
	ctx := context.Background()
	incomplete, _ := Builtin("full")
	// The errors say what is wrong; the commands add what to do.
	if _, err := Verify(ctx, t.TempDir(), incomplete, VerifyOptions{}); !errors.Is(err, ErrIncomplete) ||
		!strings.Contains(err.Error(), incomplete.Repo) || strings.Contains(err.Error(), "drama ") {
		t.Fatalf("incomplete: want ErrIncomplete naming the repository and no command, got %v", err)
	}
	p := validPins()
	if _, err := Verify(ctx, filepath.Join(t.TempDir(), "nope"), p, VerifyOptions{}); !errors.Is(err, ErrNoDir) || strings.Contains(err.Error(), "drama ") {
		t.Fatalf("missing dir: want ErrNoDir and no command, got %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	dir := t.TempDir()
	p = makeTree(t, dir, map[string]int{"a": 1 << 20})
	if _, err := Verify(cctx, dir, p, VerifyOptions{Level: LevelSHA256}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestMakeThenVerify(t *testing.T) {
	dir := t.TempDir()
	want := makeTree(t, dir, map[string]int{"x/y.bin": 3000, "z": 7})
	os.MkdirAll(filepath.Join(dir, StateDirName), 0o755)
	os.WriteFile(filepath.Join(dir, StateDirName, "junk"), []byte("j"), 0o644)
	got, err := Make(context.Background(), dir, Pins{Variant: "full", Revision: rev}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := want.Marshal()
	b, _ := got.Marshal()
	if string(a) != string(b) {
		t.Fatalf("make:\n%s\nwant:\n%s", b, a)
	}
}

// TestVerifyPermissionDenied runs Verify as an unprivileged user (when the
// test runs as root, by re-running this test binary as nobody) so that one
// file cannot be opened; the others are still checked.
func TestVerifyPermissionDenied(t *testing.T) {
	if os.Getenv("PINS_TEST_VERIFY_DIR") != "" {
		return // the child side runs in TestMain
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	p := makeTree(t, dir, map[string]int{"secret.bin": 100, "open.bin": 100})
	os.Chmod(filepath.Join(dir, "secret.bin"), 0o000)
	pinsFile := filepath.Join(dir, "..", "pins.json")
	if err := p.WriteFile(pinsFile); err != nil {
		t.Fatal(err)
	}
	os.Chmod(pinsFile, 0o644)
	var rep Report
	if os.Geteuid() == 0 {
		rep = verifyAsNobody(t, dir, pinsFile)
	} else {
		r, err := Verify(context.Background(), dir, p, VerifyOptions{Level: LevelSHA256, NoRecord: true})
		if err != nil {
			t.Fatal(err)
		}
		rep = *r
	}
	if r := result(t, &rep, "secret.bin"); r.Status != StatusUnreadable || !strings.Contains(r.Error, "permission denied") {
		t.Errorf("secret.bin: %+v", r)
	}
	if r := result(t, &rep, "open.bin"); r.Status != StatusOK || r.Verified != LevelSHA256 {
		t.Errorf("open.bin must still be checked: %+v", r)
	}
}

func verifyAsNobody(t *testing.T, dir, pinsFile string) Report {
	t.Helper()
	exe := filepath.Join(filepath.Dir(pinsFile), "pins.test")
	copyExecutable(t, exe)
	cmd := exec.Command(exe, "-test.run", "^$")
	cmd.Env = append(os.Environ(), "PINS_TEST_VERIFY_DIR="+dir, "PINS_TEST_VERIFY_PINS="+pinsFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	var rep Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	return rep
}

func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	out.Close()
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("PINS_TEST_VERIFY_DIR"); dir != "" {
		p, err := ReadFile(os.Getenv("PINS_TEST_VERIFY_PINS"))
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		rep, err := Verify(context.Background(), dir, p, VerifyOptions{Level: LevelSHA256, NoRecord: true})
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		json.NewEncoder(os.Stdout).Encode(rep)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestVerifyTrustRecord: with TrustRecord, a sha256 check hashes only what
// the record does not vouch for, and a file changed since its last full
// check is hashed and caught.
func TestVerifyTrustRecord(t *testing.T) {
	dir := t.TempDir()
	p := makeTree(t, dir, map[string]int{"a.bin": 4096, "b.bin": 100})
	ctx := context.Background()
	trust := VerifyOptions{Level: LevelSHA256, TrustRecord: true}
	rep, err := Verify(ctx, dir, p, trust)
	if err != nil || !rep.OK() || rep.HashedBytes != 4196 {
		t.Fatalf("without a record every file is hashed: %v %+v", err, rep)
	}
	rep, _ = Verify(ctx, dir, p, trust)
	if r := result(t, rep, "a.bin"); !rep.OK() || rep.HashedBytes != 0 || r.Verified != LevelSHA256 || !r.FromRecord {
		t.Fatalf("vouched files must not be hashed again: %+v hashed=%d", r, rep.HashedBytes)
	}
	name := filepath.Join(dir, "a.bin")
	flipByte(t, name, 10)
	future := time.Now().Add(time.Hour)
	os.Chtimes(name, future, future)
	rep, _ = Verify(ctx, dir, p, trust)
	if r := result(t, rep, "a.bin"); r.Status != StatusSHA256Mismatch || rep.HashedBytes != 4096 {
		t.Fatalf("a changed file must be hashed and caught: %+v hashed=%d", r, rep.HashedBytes)
	}
	rep, _ = Verify(ctx, dir, p, VerifyOptions{Level: LevelSHA256})
	if rep.HashedBytes != 4196 {
		t.Fatalf("without TrustRecord a sha256 check hashes every file: hashed=%d", rep.HashedBytes)
	}
}
