package enginetest

import (
	"errors"
	"io"
	"testing"

	"github.com/drama-tts/drama/engine"
)

// failed gives a KindFailed error with the log tail, nil for nil, and an
// *engine.Error as it was.
func TestFailedKeepsKindAndTail(t *testing.T) {
	err := failed(io.ErrUnexpectedEOF, "tail")
	var e *engine.Error
	if !errors.As(err, &e) || e.Kind != engine.KindFailed || e.LogTail != "tail" || !errors.Is(err, io.ErrUnexpectedEOF) || err.Error() != "engine: unexpected EOF" {
		t.Fatalf("failed(EOF, tail) = %#v (%v)", err, err)
	}
	if failed(nil, "") != nil {
		t.Error("failed(nil) != nil")
	}
	inv := engine.Invalidf("bad")
	if failed(inv, "t") != inv {
		t.Error("failed changed the kind of an *engine.Error")
	}
}
