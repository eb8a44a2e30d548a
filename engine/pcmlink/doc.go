// Package pcmlink carries a synthesis's PCM from an engine plugin to its
// host over a socket pair the host makes when it starts the plugin and
// hands it down as an inherited file: a byte path beside the plugin's gRPC
// link, which frames, encrypts and copies every chunk several times on its
// way. Only the two processes hold it (no name on disk, close-on-exec at
// both ends). Each frame carries the id the host gave the synthesis; the
// host hands a frame to the reader waiting for its id and drops frames of
// ids nobody waits for. The plugin's end serves one synthesis at a time.
package pcmlink
