#!/bin/sh
# Clip preparation benchmarks: drama's 48 kHz -> 44.1 kHz resampler against
# sox's (rate, default high quality) on the same 60 s signal, then the whole
# preparation of a 60 s clip. One core each (sox runs single-threaded).
# Times are CPU time (user + system), which a shared machine disturbs less
# than wall time; the Go benchmarks report it as cpu-ms/op.
# Needs sox and GNU time (apt-get install -y sox time). Prints the figures docs/BENCHMARKS.md
# records.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the Go benchmark's signal: 60 s of 440 Hz + 3 kHz sines, 48 kHz mono float
sox -D -n -r 48000 -c 1 -b 32 -e floating-point "$tmp/in.wav" synth 60 sine 440 synth 60 sine mix 3000 vol 0.3

best() { # least CPU time (user + system) of 5 runs of 10 times "$@", in ms per run
	b=
	for _ in 1 2 3 4 5; do
		/usr/bin/time -o "$tmp/time" -f '%U %S' sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do "$@"; done' sh "$@" >/dev/null 2>&1
		t=$(awk '{printf "%d", ($1 + $2) * 100}' "$tmp/time")
		if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
	done
	echo "$b"
}
soxms=$(best sox "$tmp/in.wav" -b 32 -e floating-point "$tmp/out.wav" rate 44100)
soxcopy=$(best sox "$tmp/in.wav" -b 32 -e floating-point "$tmp/out.wav")

out=$(go test -run '^$' -bench 'Resample48kTo44k|Prepare60s' -benchmem -count 5 -cpu 1 ./voices/clip/)
echo "$out" | grep '^Benchmark'
# the least CPU time per operation (cpu-ms/op) of the 5 runs
gores=$(echo "$out" | awk '/^BenchmarkResample48kTo44k/ {for (i = 1; i < NF; i++) if ($(i+1) == "cpu-ms/op") v = $i; if (b == "" || v < b) b = v} END {printf "%.0f", b}')
echo
echo "resample 60 s 48k->44.1k, least CPU time of 5: drama ${gores} ms, sox $((soxms - soxcopy)) ms (sox ${soxms} ms less ${soxcopy} ms for the same copy without rate)"
awk -v g="$gores" -v s="$((soxms - soxcopy))" 'BEGIN {printf "drama / sox = %.2f\n", g / s}'
