#!/bin/sh
# Clip preparation benchmarks: drama's 48 kHz -> 44.1 kHz resampler against
# sox's (rate, default high quality) on the same 60 s signal, then the whole
# preparation of a 60 s clip. One core each (sox runs single-threaded).
# Needs sox (apt-get install -y sox). Prints the figures docs/BENCHMARKS.md
# records.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the Go benchmark's signal: 60 s of 440 Hz + 3 kHz sines, 48 kHz mono float
sox -D -n -r 48000 -c 1 -b 32 -e floating-point "$tmp/in.wav" synth 60 sine 440 synth 60 sine mix 3000 vol 0.3

best() { # best wall time of 5 runs of "$@", in ms
	b=
	for _ in 1 2 3 4 5; do
		s=$(date +%s%N)
		"$@" >/dev/null 2>&1
		e=$(date +%s%N)
		t=$(((e - s) / 1000000))
		if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
	done
	echo "$b"
}
soxms=$(best sox "$tmp/in.wav" -b 32 -e floating-point "$tmp/out.wav" rate 44100)
soxdrop=$(best sox "$tmp/in.wav" -b 32 -e floating-point "$tmp/out.wav")

out=$(go test -run '^$' -bench 'Resample48kTo44k|Prepare60s' -benchmem -count 5 -cpu 1 ./voices/clip/)
echo "$out" | grep '^Benchmark'
gores=$(echo "$out" | awk '/^BenchmarkResample48kTo44k/ {ms=$3/1e6; if (b=="" || ms<b) b=ms} END {printf "%.0f", b}')
echo
echo "resample 60 s 48k->44.1k, best of 5: drama ${gores} ms, sox $((soxms - soxdrop)) ms (sox total ${soxms} ms less ${soxdrop} ms of plain file copy)"
awk -v g="$gores" -v s="$((soxms - soxdrop))" 'BEGIN {printf "drama / sox = %.2f\n", g / s}'
