// Package engine is the contract between drama and its engine plugins.
//
// An engine is a plugin binary, drama-engine-<name>, that drama starts as a
// child process and talks to over gRPC through hashicorp/go-plugin. The
// plugin in turn supervises a native text-to-speech server (for Drama 3,
// tensorfold-native on CUDA or the Metal build on macOS). Audio always flows
// through the plugin: the host never talks to the native server itself.
//
// The Engine interface is the contract in Go. Describe, Health, Stop and
// Voices are plain calls; Start reports lifecycle events (preflight,
// spawned, loading with progress, ready, exited) as it goes; Synthesize
// returns an AudioStream of one header, PCM chunks and a Final; Encode
// reports progress and returns codes. Every method takes a context, and
// cancelling it cancels the work in the engine.
//
// Audio is mono 16-bit little-endian PCM at 44,100 Hz. A chunk holds whole
// samples and at most MaxChunk bytes (32 KiB less the 8 that frame it on
// the wire). A synthesis ends with a
// finish reason: stop, length (clipped at the frame limit, audio kept) or
// silence. A stream that fails after its first chunk ends with an error, never
// with io.EOF, so incomplete audio cannot pass for whole.
//
// Errors are *Error values with a Kind: invalid input (HTTP 400), busy and
// not ready (503), engine failed (500). Test them with errors.Is against
// ErrInvalid, ErrBusy, ErrNotReady and ErrFailed. Across the gRPC boundary a
// kind travels as the status code (InvalidArgument, ResourceExhausted,
// Unavailable, Internal) with the message and log tail in a detail.
//
// Limits: one synthesis at a time per engine; gRPC messages up to 64 MiB in
// either direction (clips for Encode travel by path where they can).
package engine
