// Package host finds engine plugins and starts them.
//
// Discovery: a plugin is an executable file named drama-engine-<name>
// (drama-engine-<name>.exe on Windows) in one of the search directories, in
// this order: the --plugin-dir flag, each entry of $DRAMA_PLUGIN_DIR (a path
// list), the directory holding the drama binary, and <root>/plugins. The
// first directory holding a name wins; later ones are reported as shadowed.
//
// Checksums: beside each plugin lies <binary>.sha256 in sha256sum's format
// ("<64 hex digits>  <file name>", as `make build` writes it). A plugin whose
// checksum file is missing, malformed or does not match the binary is
// refused before it runs, with a message saying what to do.
//
// Starting: Open runs the binary directly (never through a shell) with
// hashicorp/go-plugin: gRPC only, the API version negotiated through
// VersionedPlugins, AutoMTLS, the handshake cookie, SecureConfig checking
// the same sha256 again, a 15 s handshake timeout (loading the model is
// Start's business, not the handshake's), raised message limits, the
// plugin's stderr into the logger and a 64 KiB tail. On Linux the plugin
// gets a parent-death signal from a thread that lives as long as the
// plugin, so a host killed outright takes its plugin with it; the plugin
// also watches its parent (see engine.Serve).
package host
