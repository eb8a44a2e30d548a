// Package bench measures a running drama serve: how soon the first audio
// of a streamed reply arrives, how long whole and streamed replies take
// against the audio they carry (the real-time factor), how much memory the
// engine holds meanwhile, and with a transcriber the word error rate of
// the warm whole replies. It owns the corpus, the schedule (a cold
// request, warm-up passes, warm passes), the percentiles, the memory
// sampler, the report and the comparison of two reports.
//
// The schedule, what is measured and how two runs are compared:
// docs/bench.md.
package bench
