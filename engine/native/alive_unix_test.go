//go:build unix

package native_test

import "github.com/drama-tts/drama/engine/enginetest"

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool { return enginetest.Alive(pid) }
