#!/bin/sh
# Several engines behind one drama serve, on stand-in engines paced at
# TENSORFOLD_STANDIN_RTF=0.5 (an engine sleeps through most of its work, so
# a 2-core machine measures dispatch rather than the stand-in's CPU):
#   - throughput with 1, 2 and 4 engines (2 clients per engine), the median
#     of 3 runs each and its ratio to one engine;
#   - first audio p50 on 3 engines, 2 clients, 6 voices with a 0.7 s
#     prefill for a cold voice, voice affinity against round robin
#     (drama serve --dispatch round-robin), the median of 3 runs.
# Each prints the 1-minute load average at its start and end. About 95 s.
set -eu
cd "$(dirname "$0")/.."
go test ./cmd/drama/ -run '^$' -bench 'BenchmarkEngines(Throughput|Affinity)$' -benchtime 1x -count 1 -v 2>&1 |
	grep -E '^(Benchmark|    engines_bench_test)'
