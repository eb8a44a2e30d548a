// Package build builds the native engine from its pinned sources and keeps
// the record that drama serve checks the engine binary against. Install
// takes a variant's engine sources pins (pins.Sources): it checks the
// toolchain, fetches and checks the recipe and engine repositories at
// their pinned commits (from their URLs or a mirror), applies and checks
// the patches, builds into a fresh directory and installs the binaries
// with their record (engine.json and engine.sha256, read by ReadRecord).
// git is the system's git, run as a subprocess; every step can be
// interrupted and the next run resumes at the first step not done.
//
// Each step, interruption, mirrors, the layout and the sources pins:
// docs/engine-build.md.
package build
