// Package mirror serves local files with the routes and headers of the
// Hugging Face Hub that drama and huggingface_hub use, so that one host can
// fetch a checkpoint once and serve it to others, an air-gapped site can
// mirror the Hub, and every download test runs on loopback.
//
// # Sources
//
// A DirSource serves DIR/<owner>/<name>/<commit>/<path>; branch names are
// read from DIR/<owner>/<name>/refs/<branch> (a 40-hex commit). A
// CacheSource serves a Hugging Face cache (models--<owner>--<name>/
// snapshots/<commit>/<path>, refs/<branch>).
//
// Both open every file, folder and ref through an os.Root on their Dir: a
// symbolic link is followed when it is relative and stays inside Dir (the
// cache's snapshot links into blobs/), and one that leads out, or is
// absolute, is neither listed nor served; a request for it gets 404
// EntryNotFound saying so (ErrOutside).
//
// Guard wraps the handler of each listener with the Host check drama
// serve makes (internal/hostcheck): any other Host gets 421.
//
// # Routes
//
//	HEAD|GET /{owner}/{name}/resolve/{rev}/{path...}
//	HEAD|GET /{owner}/{name}/raw/{rev}/{path...}
//	GET      /api/models/{owner}/{name}
//	GET      /api/models/{owner}/{name}/revision/{rev}[?blobs=true]
//	GET      /api/models/{owner}/{name}/tree/{rev}[/{path...}]?recursive=true&expand=true&cursor=N
//	POST     /api/models/{owner}/{name}/paths-info/{rev}   (form or JSON: paths, expand)
//	GET      /api/models/{owner}/{name}/refs
//	GET      /api/models/{owner}/{name}/commits/{rev}
//	HEAD|GET /cdn/{owner}/{name}/{commit}/{path...}?exp=...&sig=...
//
// A missing revision, or HEAD, is the default branch (DefaultBranch, else
// the only branch). A resolve of an LFS file answers 302 with
// X-Repo-Commit, X-Linked-Etag (the sha256), X-Linked-Size and a Location
// on the /cdn route signed with an HMAC and an expiry (Server.URLTTL). The
// /cdn route lives on Server.CDNURL when set (a second listener serving
// Server.CDN(), another origin, as the Hub's CDN is), else on the request's
// host. It needs no token and ignores one (Stats.CDNAuthorized counts
// them), and answers with X-Repo-Commit and the sha256 as ETag, for
// clients that read a file's identity after following the redirect. A
// resolve of a small (non-LFS) file answers 200 with ETag set to the git
// blob sha1; /raw/ answers the git blob, an LFS file's pointer file. Data
// routes answer a single byte range (the unit in any case) with 206 and
// Content-Range, an unsatisfiable one with 416 and "Content-Range: bytes
// */size"; a request with several ranges gets the whole file (200).
// If-None-Match naming the ETag gets 304. Errors carry X-Error-Code and a
// JSON body {"error": "..."}, as the Hub's do.
//
// Files are LFS when their size is at least Server.LFSMinSize or their name
// ends in a weight extension (.safetensors, .pth, .bin, .pt, .gguf, .onnx,
// .msgpack, .h5).
// The tree listing gives each file's git oid (for an LFS file the sha1 of
// its pointer file) and, for LFS files, lfs.oid (sha256) and lfs.size; each
// directory's oid is its git tree sha1 (every file mode 100644).
// Digests are computed on first use and kept in memory.
//
// # Faults
//
// Server.SetFaults injects failures into data responses (GETs of file
// bytes), counted across all of them: a connection dropped mid-body, a body
// one byte short, a 200 that ignores the Range, a wrong Content-Range, 416,
// 429 with RateLimit headers, 503 bursts, a stalled socket, a crawling
// one, a flipped byte, and 403 for an expired signed URL. See ParseFault for the textual form used by drama mirror
// serve --fault.
package mirror
