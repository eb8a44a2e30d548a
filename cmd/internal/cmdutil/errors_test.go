package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("boom"), ExitFailure},
		{FlagErrorf("bad flag"), ExitUsage},
		{MismatchError(errors.New("sha256 differs")), ExitMismatch},
		{EngineError(errors.New("engine exited")), ExitEngine},
		{fmt.Errorf("wrapped: %w", context.Canceled), ExitInterrupted},
		{fmt.Errorf("wrapped: %w", EngineError(errors.New("x"))), ExitEngine},
		{SilentError(ExitMismatch), ExitMismatch},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if !IsSilent(SilentError(3)) || IsSilent(MismatchError(errors.New("x"))) {
		t.Error("IsSilent")
	}
}
