// Package host finds engine plugins and starts them: discovery of
// drama-engine-<name> over the search directories (Discover, Find), the
// sha256sum-format checksum file beside each plugin (Verify: a plugin
// whose checksum is missing, malformed or different is refused before it
// runs), and the start through hashicorp/go-plugin (Open), with a plugin
// killed outright taking no orphan with it.
//
// Where plugins are looked for, the checksum rules and how a plugin is
// started: docs/engine.md.
package host
