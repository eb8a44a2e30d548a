// Package standin is a stand-in of the native Drama 3 engine: a server that
// speaks the native HTTP contract exactly (see package native) and a voice
// encoder with the native command lines, producing deterministic audio and
// codes without a GPU or model weights. It exists for tests and for trying
// drama on any machine; its audio is a tone, not speech.
//
// # Audio
//
// Mono 16-bit PCM at 44.1 kHz, 2048 samples a frame. A request gets 6 + 1.5
// frames per character of input; the tone's pitch and loudness follow a
// sha256 of the text, the voice file, the references and the instructions,
// so the same request always gives the same bytes, and a stream the same
// bytes as a whole reply. Finish reasons: max_frames (or the server's
// --max-frames) clips the audio with "length"; MarkerSilence in the text
// ends the speech in 10 s of near silence with "silence"; otherwise "stop".
// With --long-form, input over 500 characters is split at sentence ends into
// segments, reported in X-Long-Form-Segments as "N;S2,S3,..." (the first
// sample of each later segment).
//
// # Faults
//
// One synthesis runs at a time; another request gets 503 busy, and so does
// any request for 200 ms after a client cancelled (closed its connection).
// MarkerFail in the text fails the synthesis after its first chunk (the
// connection closes without the terminating chunk); MarkerCrash makes the
// server process exit with code 70 at that point. The binary's
// TENSORFOLD_STANDIN_FAULT selects crash-on-start (exit 70 while loading),
// hang-on-start (never ready, no output), ignore-sigterm, noise (a broken
// engine: valid, deterministic audio that is noise and carries no text), or encode-fail
// (TENSORFOLD_STANDIN_FAULT_FILE names a file, read at each start, whose
// content selects it instead, so the restarts of a running engine can fail);
// TENSORFOLD_STANDIN_LOAD_TIME sets the simulated load (progress lines
// "loading model: N%"), TENSORFOLD_STANDIN_RTF paces the output, and
// TENSORFOLD_STANDIN_HOLD_MIB makes the loaded server hold that much
// memory, allocated and touched, as an engine holds its weights.
//
// # Prefix cache and device
//
// As the engine keeps the prefixes of the last voices it spoke, the
// stand-in keeps a prefix cache of DRAMA_PREFIX_CACHE voices (default 2,
// least recently used out first; 0 keeps none): a voice (its name and the
// request's references) not in it waits TENSORFOLD_STANDIN_PREFILL (a Go
// duration, default none) before its first audio, and the log says so. The
// log's "device:" line names the GPUs it was started with
// (CUDA_VISIBLE_DEVICES).
//
// # Command lines
//
// The binary (cmd/tensorfold-standin) takes the CUDA shapes "serve FLAGS"
// and "voice encode --codec C --audio CLIP --out OUT", and the Metal shapes
// "--serve FLAGS" and "--codec C --ref-audio CLIP --encode OUT". The encoder
// reads a canonical WAV of 1 sample to 30 s and writes a codes file whose
// codes are hashes of each frame's samples. Voices come from --voices: on
// CUDA drama3-voice/1 files, on Metal (--serve) the drama3-http-voice/1
// catalog, where references in a request and long form are refused and
// max_frames goes up to 8190.
package standin
