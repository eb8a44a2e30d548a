// Package hub fetches pinned files from the Hugging Face Hub (or any
// server speaking its protocol, such as package mirror) into the Hugging
// Face cache layout: fast, resumable and verified. It owns the Hub
// protocol client, Install (drama fetch's whole operation on a root), the
// parallel ranged resumable download hashed as it arrives, the cache
// layout, Flock, and disk use and removal planning.
//
// How a fetch works on the wire and on disk (the protocol, the download,
// resume, the cache, and where each step lives in this package):
// docs/fetch.md.
package hub
