// Package native starts and supervises a native Drama 3 engine process and
// speaks its HTTP contract.
//
// # The contract
//
// The native server (tensorfold-native serve on CUDA, the Metal build's
// server on macOS) listens on a loopback port. POST /v1/audio/speech takes a
// JSON SpeechRequest and answers with mono 16-bit PCM at 44.1 kHz: a whole
// RIFF WAV, or with "stream": true and "response_format": "pcm" raw PCM in
// HTTP/1.1 chunks. A whole reply carries X-Finish-Reason (stop, length or
// silence) as a header; a stream declares it as a trailer and sends it only
// when cut short, so a stream without it finished with stop. Long form adds
// X-Long-Form-Segments: "N;S2,S3,..." (N segments, then the sample offset
// at which each segment after the first begins). A stream that fails after its first chunk
// ends without the terminating chunk. 400 is a refused request in the
// server's words, 503 busy (one synthesis at a time, and for a moment after
// a cancelled one), 500 anything else. GET /health answers 200 once the model
// is loaded.
//
// Client parses the status line, header, chunked body and trailer itself
// from the raw connection, because many HTTP clients drop trailers and hide
// a missing terminating chunk. It retries 503 after 2 ms, then after pauses
// that double up to 10 ms, for up to 10 s, and
// closes the connection when its context is cancelled, which is how the
// server learns of the cancel.
//
// # Supervision
//
// Launch starts the engine binary directly (no shell) in its own process
// group, with a parent-death signal on Linux set from a goroutine locked to
// its OS thread, an explicit environment, and its own stdout and stderr
// pipes copied into a log file and a 64 KiB tail. A runtime file records the
// child's pid, start time and executable, so that a later start can stop a
// leftover child from a crashed run; a process whose identity does not match
// (a recycled pid) is never signalled. Readiness is the health route
// answering, polled every 100 ms under an overall deadline and a stall
// deadline that log output resets, while the child's exit is watched. Stop
// sends SIGTERM to the group, waits a grace period, then sends SIGKILL.
//
// Memory admission compares the variant's estimate plus a reserve with
// MemAvailable, lowered to the cgroup's limit where one is set; it can be
// the plugin's own check, left to an external scheduler, or off. The engine
// binary's sha256 is checked against the expected digest before it runs.
//
// # Limits
//
// Input is 1 to 4096 characters; a reference 1 to 646 frames of 10 codebooks.
// PCM reaches callers in whole samples of at most 32 KiB. Process groups,
// parent-death signals and identity checks are implemented for Linux and
// macOS (macOS has no parent-death signal; the plugin stops its child when
// it exits); elsewhere Launch refuses.
package native
