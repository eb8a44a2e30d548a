//go:build unix

package atomicfile

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestFreeBytesAndSpaceError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "made")
	free, err := FreeBytes(dir)
	if err != nil || free <= 0 {
		t.Fatalf("FreeBytes of a folder not made yet: %d, %v; want its parent's", free, err)
	}
	err = error(&SpaceError{Dir: dir, Need: 1 << 62, Free: free})
	var se *SpaceError
	if !errors.As(err, &se) || !errors.Is(err, ErrNoSpace) {
		t.Fatalf("want a *SpaceError matching ErrNoSpace, got %v", err)
	}
	if se.Dir != dir || se.Need != 1<<62 || se.Free <= 0 {
		t.Errorf("got %+v", se)
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, strconv.FormatInt(1<<62, 10)) {
		t.Errorf("message %q does not name the folder and the bytes wanted", msg)
	}
}
