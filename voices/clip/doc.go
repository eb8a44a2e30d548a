// Package clip prepares recordings of a voice to be encoded as references
// for a cloned voice: it reads the audio (WAV directly, anything else
// through ffmpeg), makes it mono at 44.1 kHz, finds the speech, trims,
// cuts and levels it, and measures the background, holding a bounded chunk
// of a clip at a time whatever its size. Refusals are *RefusalError values;
// warnings go into the manifest.
//
// The input accepted, each step's rule and threshold, the refusals and
// warnings: docs/cloning.md ("drama voice prepare").
package clip
