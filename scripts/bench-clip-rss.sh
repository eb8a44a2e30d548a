#!/bin/sh
# Peak resident memory of `drama voice prepare` on a 1000 MiB WAV (under the
# 1 GiB limit of a WAV's data): 44.1 kHz 16-bit mono, 3 h 18 min of silence
# with 12 s of a 440 Hz tone from 60 s, written as a sparse file (it takes
# no disk). Prints GNU time's maximum resident set size and the times.
#
#   scripts/bench-clip-rss.sh          # this tree's drama
#   scripts/bench-clip-rss.sh REV      # and drama built at REV, for a before/after
#
# Needs GNU time (apt-get install -y time) and python3. docs/BENCHMARKS.md
# records the figures.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/drama" ./cmd/drama
bins=drama
if [ -n "${1:-}" ]; then
	mkdir "$tmp/src"
	git archive "$1" | tar -x -C "$tmp/src"
	(cd "$tmp/src" && go build -o "$tmp/drama-before" ./cmd/drama)
	bins="drama-before drama"
fi

python3 - "$tmp/big.wav" <<'PY'
import math, struct, sys
rate, data = 44100, 1000 << 20
with open(sys.argv[1], "wb") as f:
    f.write(b"RIFF" + struct.pack("<I", 36 + data) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16))
    f.write(b"data" + struct.pack("<I", data))
    f.seek(44 + 2 * 60 * rate)
    f.write(b"".join(struct.pack("<h", round(3277 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(12 * rate)))
    f.truncate(44 + data)
PY
echo "clip: $(du -k "$tmp/big.wav" | cut -f1) KiB on disk, $(stat -c %s "$tmp/big.wav") bytes"

for b in $bins; do
	/usr/bin/time -o "$tmp/time" -f '%M %e %U %S' "$tmp/$b" voice prepare "$tmp/big.wav" -o "$tmp/prep-$b" -q >/dev/null
	awk -v b="$b" '{printf "%-13s max RSS %.0f MiB, wall %.1f s, CPU %.1f s\n", b, $1 / 1024, $2, $3 + $4}' "$tmp/time"
done
if [ -d "$tmp/prep-drama-before" ]; then
	if diff -r "$tmp/prep-drama-before" "$tmp/prep-drama" >/dev/null; then
		echo "references and manifest: the same bytes before and after"
	else
		echo "references and manifest differ before and after" >&2
		exit 1
	fi
fi
