// Package bench measures a running drama serve: how soon the first audio
// of a streamed reply arrives, how long whole and streamed replies take
// against the audio they carry (the real-time factor), and how much memory
// the engine holds meanwhile.
//
// # Schedule
//
// A run speaks a corpus (Corpus; the built-in one is DefaultCorpus) in each
// voice asked for. The first request after the engine is ready is the cold
// request. Then, for whole replies (WAV) and afterwards for streamed ones
// (raw PCM in HTTP chunks), on the same server process: Warmup passes over
// the whole corpus that are recorded but not summarised, then Passes warm
// passes that are. Percentiles (p50, p95, p99) are taken over the warm
// requests, by mode, by voice and by text length (short, medium, long).
//
// # Percentiles
//
// A percentile is the linear interpolation between the closest ranks
// (Hyndman and Fan's type 7, what numpy and most spreadsheets use).
//
// # Memory
//
// A Sampler reads, every half second, the host's MemAvailable, the memory
// peak of the server's cgroup (cgroup v2, where it has one), the used
// memory nvidia-smi reports (where it exists) and the resident memory of
// the server's process tree. The drop in MemAvailable is taken from a
// baseline read before the engine was loaded when the run started the
// server itself, else from the start of the run.
//
// # Comparing runs
//
// Compare sets two reports side by side. A figure counts as changed when
// the ranges of its per-pass medians over the warm passes, each widened by
// NoiseFloor of its own value (at least NoiseFloorSeconds for times) to
// allow for timer resolution, do not overlap: the difference is then
// larger than the spread between passes of the same run.
package bench
