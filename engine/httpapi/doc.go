// Package httpapi is drama serve's HTTP API: an OpenAI-compatible speech
// endpoint in front of one engine, with a first-in first-out queue in front
// of the engine's single synthesis slot.
//
// Routes:
//
//	POST   /v1/audio/speech   OpenAI fields plus the native extras stream, references, max_frames
//	GET    /v1/models         the served model
//	GET    /v1/voices         the engine's voices and the cloned voices in the root
//	POST   /v1/voices         clone a voice from clips (multipart), with consent
//	DELETE /v1/voices/{id}    delete a cloned voice
//	GET    /health            the process is up
//	GET    /ready             200 when the engine is ready, else 503 with phase and progress
//	GET    /metrics           Prometheus text format
//
// Audio is mono 16-bit PCM at 44,100 Hz (X-Sample-Rate says so on every
// reply). A whole reply is a WAV with exact sizes and X-Finish-Reason as a
// header. A streamed reply (stream: true) is chunked: a WAV header with
// 0xFFFFFFFF sizes (or raw PCM), the PCM as the engine makes it, and
// X-Finish-Reason as a declared trailer. A stream that fails after its first
// chunk ends without the terminating chunk, so no client can take it for
// complete audio. SSE (stream_format: sse) sends speech.audio.delta events
// with base64 PCM and one speech.audio.done event with the finish reason.
//
// The engine takes one synthesis at a time. Requests wait in a bounded FIFO
// queue; past the bound they get 503 with Retry-After; a request whose client
// leaves is dropped from the queue or its synthesis cancelled; the engine's
// short busy window after a cancel is retried here and never reaches a
// client. Errors are OpenAI-style JSON: {"error": {"message", "type",
// "param", "code"}}.
package httpapi
