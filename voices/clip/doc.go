// Package clip prepares recordings of a voice to be encoded as references
// for a cloned voice: it reads the audio, makes it mono at 44.1 kHz, finds
// the speech, trims, cuts and levels it, and measures the background.
//
// # Input
//
// WAV files are read directly (ReadWAV, and Decode for a file): RIFF/WAVE
// with PCM 16, 24 or 32-bit integer or 32-bit IEEE float samples, plain or
// WAVE_FORMAT_EXTENSIBLE, any rate from 1 kHz to 768 kHz, any number of
// channels, at most MaxDataBytes of audio. Other codings (8-bit, A-law,
// mu-law, ADPCM, 64-bit float, RF64) are refused with ErrUnsupported.
// Decode reads any other file through ffmpeg when it is on PATH (run
// directly, never through a shell). Decoder.Open reads the same files in
// passes instead (a File, at most MaxFileDuration long): Prepare then
// holds a bounded chunk of a clip at a time, whatever its size. Channels are mixed by their mean;
// Resample converts to 44.1 kHz with a Kaiser-windowed sinc filter whose
// stop band begins at the lower Nyquist frequency (about 90 dB down), so
// nothing folds back, and whose pass band is flat to well under 0.1 dB up
// to 90 % of it.
//
// # Analysis
//
// Every 10 ms frame (441 samples) has a level L = 10*log10(mean(x^2)+1e-10)
// dBFS (a full-scale sine is -3 dBFS). Speech is detected on the levels
// with the thresholds of Detector (defaults: the 10th percentile F, the
// 95th percentile T, speech when L >= max(F+3, T-40, -60); runs under 3
// frames dropped, gaps under 10 frames filled). The speech level is the
// mean power of the speech regions (speech with gaps under 0.15 s filled)
// less the background power, so it does not rise with the noise.
//
// The background is the mean power of the frames at least 0.1 s from any
// speech; it is measured only with at least 0.3 s of such frames. Its
// spectral flatness (the geometric over the arithmetic mean of a
// Hann-windowed power spectrum, 2048-point half-overlapped segments over
// the background runs, or 512-point ones when no run is that long; from the
// first bin above DC to 90 % of the recording's own Nyquist frequency)
// under 0.06 names a tonal background: music or hum.
//
// # Preparation
//
// Prepare trims each clip to 0.25 s before the first and after the last
// speech frame, cuts it in the middle of pauses (0.15 s or more of
// non-speech) into references of at most 30 s (1,323,000 samples, 646
// codec frames), and scales each to -20 dBFS speech with its sample peak
// under -1 dBFS. A stretch of over 30 s without a pause is cut at its
// quietest frame, with a warning. All clips together must give at least
// 10 s; the first 8 references and 60 s are kept.
//
// Refusals (*RefusalError, wrapping ErrNoSpeech, ErrTooShort or
// ErrNoisyBackground): no speech in a clip, under 10 s in all, speech less
// than 5 dB over the background (unless Options.Force). Warnings: speech
// under 30 dB over the background, a tonal background, a background too
// short to measure, clipping (runs of 3 or more samples at full scale), a
// clip that starts or ends inside speech, 30 s without a pause, a level
// held down by the peak limit, references dropped past 8 or 60 s.
package clip
