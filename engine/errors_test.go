package engine

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
)

func TestErrorKinds(t *testing.T) {
	cause := io.ErrUnexpectedEOF
	tests := []struct {
		name   string
		err    error
		kind   Kind
		is     error
		status int
		text   string
	}{
		{"invalid", Invalidf("input: want 1..4096 characters, got %d", 5000), KindInvalid, ErrInvalid, http.StatusBadRequest, "engine: input: want 1..4096 characters, got 5000"},
		{"busy", Errorf(KindBusy, "still busy after %s", "10s"), KindBusy, ErrBusy, http.StatusServiceUnavailable, "engine: still busy after 10s"},
		{"not ready", NotReadyf("loading"), KindNotReady, ErrNotReady, http.StatusServiceUnavailable, "engine: loading"},
		{"failed", &Error{Kind: KindFailed, LogTail: "tail", Err: cause}, KindFailed, ErrFailed, http.StatusInternalServerError, "engine: unexpected EOF"},
		{"wrapped", fmt.Errorf("serve: %w", Errorf(KindInvalid, "voice %q: %w", "x", cause)), KindInvalid, ErrInvalid, http.StatusBadRequest, `serve: engine: voice "x": unexpected EOF`},
		{"plain", cause, KindFailed, nil, http.StatusInternalServerError, "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := KindOf(tt.err)
			if !ok || k != tt.kind {
				t.Fatalf("KindOf = %v, %v; want %v, true", k, ok, tt.kind)
			}
			if k.HTTPStatus() != tt.status {
				t.Errorf("HTTPStatus = %d, want %d", k.HTTPStatus(), tt.status)
			}
			if tt.is != nil && !errors.Is(tt.err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, tt.is)
			}
			for _, s := range []error{ErrInvalid, ErrBusy, ErrNotReady, ErrFailed} {
				if s != tt.is && errors.Is(tt.err, s) {
					t.Errorf("errors.Is(%v, %v) = true", tt.err, s)
				}
			}
			if got := tt.err.Error(); got != tt.text {
				t.Errorf("Error() = %q, want %q", got, tt.text)
			}
		})
	}
	if _, ok := KindOf(nil); ok {
		t.Error("KindOf(nil) ok = true")
	}
	if !errors.Is(Errorf(KindFailed, "x: %w", cause), cause) {
		t.Error("cause lost")
	}
}

func TestNames(t *testing.T) {
	for _, s := range []string{"stop", "length", "silence"} {
		r, err := ParseFinishReason(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseFinishReason(%q) = %v, %v", s, r, err)
		}
	}
	if _, err := ParseFinishReason("done"); !errors.Is(err, ErrFailed) {
		t.Errorf("ParseFinishReason(done) err = %v, want ErrFailed", err)
	}
	if PhaseReady.String() != "ready" || Phase(99).String() != "unknown" {
		t.Error("Phase.String")
	}
	c := Capabilities{Stream: true, Encode: true, MaxFrames: 8190}
	if got := fmt.Sprint(c.List()); got != "[stream encode]" {
		t.Errorf("List = %s", got)
	}
	if Kind(42).String() != "engine failed" {
		t.Error("Kind.String out of range")
	}
	if (Reference{}).Frames() != 0 || (Reference{Codes: [][]int{{1, 2, 3}}}).Frames() != 3 {
		t.Error("Reference.Frames")
	}
}
