package engine

import (
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	tl := NewTail(8)
	tl.Write([]byte("hello "))
	tl.Write([]byte("world"))
	if got := tl.String(); got != "lo world" {
		t.Fatalf("tail = %q", got)
	}
	tl.Write([]byte("0123456789"))
	if got := tl.String(); got != "23456789" {
		t.Fatalf("tail = %q", got)
	}
}

func TestTailWholeLines(t *testing.T) {
	tl := NewTail(16)
	tl.Write([]byte("line one\nline two\n"))
	tl.Write([]byte("three\n"))
	if s := tl.String(); s != "three\n" && !strings.HasSuffix(s, "three\n") {
		t.Errorf("tail %q", s)
	}
	if s := tl.String(); len(s) > 16 {
		t.Errorf("tail of %d bytes, want at most 16", len(s))
	}
	big := NewTail(0)
	big.Write([]byte(strings.Repeat("x", TailSize+10)))
	if len(big.String()) != TailSize {
		t.Errorf("tail of %d bytes, want %d", len(big.String()), TailSize)
	}
	l := NewTail(0)
	l.Write([]byte("a\nb\nc\n"))
	if got := l.Lines(2); got != "b\nc\n" {
		t.Errorf("Lines(2) = %q", got)
	}
}
