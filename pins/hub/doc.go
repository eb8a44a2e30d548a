// Package hub fetches pinned files from the Hugging Face Hub (or any
// server speaking its protocol, such as package mirror) into the Hugging
// Face cache layout: fast, resumable and verified.
//
// # Protocol
//
// A Client lists a commit's files with the tree API
// (/api/models/{repo}/tree/{commit}?recursive=true, following Link
// pagination) and sends one HEAD per missing file to its resolve URL
// ({endpoint}/{repo}/resolve/{commit}/{path}), reading X-Repo-Commit,
// X-Linked-Etag or ETag, X-Linked-Size and Location. Only relative
// redirects are followed. Bytes are fetched with ranged GETs from the
// Location; a 206 is used when its Content-Range holds the first byte
// asked for (read from there; the rest of a shorter answer is asked for at
// once), and a 200 (the whole file, from a server that ignores Range) is
// read from byte 0, skipping to the range and taking the file's queued
// chunks on the way. The token (HF_TOKEN, else the token
// file) goes only to resolve and API URLs of the endpoint, never to a
// redirect target. 408, 429 and 5xx are retried with backoff that honours
// RateLimit (t=) and Retry-After; a 403 from a data URL (expired signature)
// or a 416 triggers a fresh HEAD; 401, 403 (gated) and 404 are reported
// with what to do. A request that gets no HTTP answer at all after its
// retries is a *NetError (ErrUnreachable) naming the server, the reason
// and the time spent; the commit's listing is a fetch's first request, so
// such a server stops it before any file is planned.
//
// # Download
//
// A fetch splits missing files into chunks (DefaultChunkSize) queued in file
// order and fetched by Workers streams over HTTP/1.1 connections (HTTP/2
// would put every stream on one TCP connection). Each chunk is written in
// place (pwrite) into a preallocated blobs/<etag>.drama.incomplete. The
// contiguous finished prefix is hashed as it grows (sha256, plus the git
// blob sha1 for small files), so the digest is ready soon after the last
// byte. A sidecar, <partial>.state (JSON: chunk size, a bitmap of finished
// chunks, the hashed offset and the marshalled hash states), is written
// before the data's space is preallocated and then rewritten in place
// after every chunk (so a full disk cannot stop it), so a process killed with SIGKILL loses at most the
// chunks in flight, and a resumed file is neither fetched nor re-read
// again. A stream idle for IdleTimeout is cut and its range re-issued from
// the last byte written; three failures in a row halve the number of
// active streams, eight successes raise it by one. Workers past
// DefaultWorkers are not all started at once: the fetch begins with
// DefaultWorkers streams and doubles them, up to Workers, only while a
// doubling raises the measured rate by 10 % (on loopback 32 streams moved
// less than 8; against a CDN that paces each connection they pay). An idle worker takes
// the upper half of the remaining range of a straggler, a stream that has
// run twice as long as its size predicts from the pace of the others
// (between 0.1 s and SplitAfter), so one slow connection does not hold a file's
// hash, and so its verification, back.
//
// Verified before visible: a file is renamed to blobs/<etag> only after
// its size and digest match the pin; a mismatch discards it and downloads
// it once more, a second mismatch is an error. ENOSPC is fatal, never
// retried, and leaves the partial files for resume. When a fetch fails, a
// partial file with no finished chunk (say, one whose pin its HEAD
// refused) is removed rather than left preallocated.
//
// # Cache
//
// Cache follows huggingface_hub's layout: models--{owner}--{name}/blobs/
// <sha256 for LFS files, git blob sha1 for others>, snapshots/<commit>/
// <path> as relative symlinks (right for nested paths), refs/<name>
// holding a commit without a trailing newline. Fetch writes refs/
// drama-pinned, plus refs/<branch> for every branch whose head is the
// pinned commit. A blob with the same name and size in another repository
// of the cache is hard-linked (else copied) instead of downloaded. One
// fetch per repository folder at a time: a flock on
// .locks/<repo folder>/drama-fetch.lock with a bounded wait; while a blob
// downloads, huggingface_hub's own flock .locks/<repo folder>/<etag>.lock is
// held too, so Python and drama never write the same blob at once.
//
// A blob already in the cache is trusted by size only when drama's record
// (RecordName in the repository folder) says drama verified it and its
// size, modification time and inode are unchanged; any other blob is
// hashed first and downloaded again on a mismatch. Pinned paths with the
// same content share one download. The commit's listing is cached as
// trees/<commit>.json in huggingface_hub's format, which its offline
// snapshot_download needs.
//
// Limits: Xet's native protocol is not used: the Hub's bridge answers
// plain ranged GETs for Xet-backed files.
package hub
