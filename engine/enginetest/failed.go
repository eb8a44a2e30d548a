package enginetest

import (
	"errors"

	"github.com/drama-tts/drama/engine"
)

// failed wraps err as a KindFailed error carrying the engine's log tail, as
// the native engine reports a failure. A nil err gives nil; an err that
// already is an *engine.Error keeps its kind.
func failed(err error, logTail string) error {
	if err == nil {
		return nil
	}
	var e *engine.Error
	if errors.As(err, &e) {
		return err
	}
	return &engine.Error{Kind: engine.KindFailed, LogTail: logTail, Err: err}
}
