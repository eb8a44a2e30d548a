// Package httpapi is drama serve's HTTP API: an OpenAI-compatible speech
// endpoint in front of one engine, with a first-in first-out queue in front
// of the engine's single synthesis slot.
//
// Routes:
//
//	POST   /v1/audio/speech   OpenAI fields plus the native extras stream, references, max_frames
//	GET    /v1/models         the served model
//	GET    /v1/models/{id}    the served model, or a 404
//	GET    /v1/voices         the engine's voices and the cloned voices in the root
//	POST   /v1/voices         clone a voice from clips (multipart), with consent
//	DELETE /v1/voices/{id}    delete a cloned voice
//	GET    /health            the process is up
//	GET    /ready             200 when the engine is ready, else 503 with phase and progress
//	GET    /metrics           Prometheus text format
//
// Audio is mono 16-bit PCM at 44,100 Hz (X-Sample-Rate says so on every
// reply). As OpenAI's API does, a request without a stream field is
// streamed (chunked) from the engine's first audio: a WAV header with
// 0xFFFFFFFF sizes (or raw PCM, or ffmpeg's packets), and X-Finish-Reason as
// a declared trailer. "stream": false, and every HTTP/1.0 request, gets one
// whole reply with exact sizes, Content-Length and X-Finish-Reason as a
// header, sent as the engine's audio arrives when the engine said its
// length and end before it (engine.AudioHeader.Sized) and the reply is its
// own WAV or PCM, else once the synthesis is done. A stream that fails
// after its first chunk ends without the terminating chunk, and a whole
// reply sent as the audio arrives ends short of its Content-Length, so no
// client can take either for complete audio; a whole reply sent at the end
// only goes out complete. SSE (stream_format: sse) sends
// speech.audio.delta events with base64 PCM and one speech.audio.done event
// with OpenAI's usage object and the finish reason (an error event if the
// synthesis fails).
//
// With API keys (Config.Keys, package apikey), every route but /health,
// /ready and the page's shell needs Authorization: Bearer KEY or
// X-Api-Key: KEY, each route a scope (speak, voices, admin): 401
// invalid_api_key without a key the server takes, 403 insufficient_scope
// naming the scope short of it. A speech request's own references need
// scope voices, or without keys Config.AllowInlineReferences.
//
// Voices are the engine's, the root's clones, the model's built-in voice
// under Config.BuiltinVoice, and the operator's aliases
// (Config.VoiceAliases).
//
// The engine takes one synthesis at a time. Requests wait in a bounded FIFO
// queue; past the bound they get 503 with Retry-After; a request whose client
// leaves is dropped from the queue or its synthesis cancelled; the engine's
// short busy window after a cancel is retried here and never reaches a
// client. Errors are OpenAI-style JSON on every route, unknown routes and
// methods included: {"error": {"message", "type", "param", "code"}}. What
// the engine said when it failed is logged under the request id and never
// sent; the message names the id.
package httpapi
