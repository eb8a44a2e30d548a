// Package build builds the native engine from its pinned sources and keeps
// the record that drama serve checks the engine binary against.
//
// Install takes a variant's engine sources pins (pins.Sources): it checks
// the toolchain first (an exact Zig, CUDA's nvcc major version, or Xcode's
// Metal compiler), fetches the recipe repository (drama-tensorfold) and the
// engine repository (TensorFold) at their pinned commits from their URLs or
// from a mirror (a directory of clones, a git bundle, or another base URL),
// checks each HEAD, checks the recipe's pinned files by sha256 (completing a
// digest the pins leave empty from the checkout at the pinned commit, never
// inventing one), checks upstream's patch series against its SHA256SUMS,
// runs the recipe's patch command and checks the patched HEAD, applies the
// operator's own patches (each named by sha256) with a fixed committer and
// checks that HEAD, runs the build command into a fresh output directory,
// and installs the binaries with their sha256 in a record beside them:
// engine.json (what was built, from what) and engine.sha256 (sha256sum's
// format, the server first), each written atomically.
//
// git is the system's git, run as a subprocess: the checkouts are plain git
// checkouts that the recipe's own scripts work in with git, mirrors and
// bundles are whatever git reads, and upstream's patch series applies with
// git am exactly as the recipe expects.
//
// Every step can be interrupted (a signal, kill -9, a failed build): a state
// file in the work directory records each finished step with a key of its
// inputs, and the next run skips a finished step whose result still holds
// and starts any other step again from its beginning. Binaries are built
// into a fresh directory and recorded only after the build exits
// successfully; a binary whose sha256 changed between the build and the
// install is refused.
//
// Layout under the root:
//
//	engine/<variant>/           installed binaries, engine.json, engine.sha256
//	engine/build/<variant>/     checkouts, output directory, state.json, build.log
package build
