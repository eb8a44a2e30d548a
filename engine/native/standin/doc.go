// Package standin is a stand-in of the native Drama 3 engine: a server that
// speaks the native HTTP contract exactly (see package native) and a voice
// encoder with the native command lines, producing deterministic audio and
// codes without a GPU or model weights. It exists for tests and for trying
// drama on any machine; its audio is a tone, not speech, that carries its
// text (SpokenText). It owns the audio, the markers and faults tests steer
// it with, its prefix cache and pacing, and both flavors' command lines.
//
// What it answers, its markers, faults, environment and flags:
// docs/native.md ("tensorfold-standin").
package standin
