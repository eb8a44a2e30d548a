// Package engine is the contract between drama and its engine plugins: an
// engine is a plugin binary, drama-engine-<name>, that drama starts as a
// child process and talks to over gRPC through hashicorp/go-plugin; the
// plugin supervises a native text-to-speech server and relays its audio.
// It owns the Engine interface (its halves Lifecycle, held by a
// supervisor, and Speech, reached by a pool member and the API), its
// messages, the error kinds (ErrInvalid, ErrBusy, ErrNotReady, ErrFailed),
// and the go-plugin glue of both sides (Serve in a plugin).
//
// The contract (methods, audio, finish reasons, errors, wire form) and its
// limits: docs/engine.md.
package engine
