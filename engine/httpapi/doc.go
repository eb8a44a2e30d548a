// Package httpapi is drama serve's HTTP API: an OpenAI-compatible speech
// endpoint, Fish Audio's routes, the voices (the engines', the clones in the
// voice store, the built-in voice and the operator's aliases: Config), the
// clone upload, health, readiness and metrics, each request handed an
// engine by package pool. It owns the replies' framing (streamed or whole,
// a stream cut short never passing for complete), OpenAI-style errors on
// every route (what an engine said logged under the request id, never
// sent), the API keys' scopes (Config.Keys), the Host and origin guards and
// the access log.
//
// The routes, how a reply is framed, the errors, the queue and the keys:
// docs/serve.md (and docs/fish-api.md for Fish Audio's routes).
package httpapi
