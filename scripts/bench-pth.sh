#!/usr/bin/env bash
# Speed and peak memory of drama pth inspect and convert on a codec-shaped
# fp32 checkpoint (scripts/make-pth-bench.py, 1.57 GB), against cp of the same
# file in the same run.
#
#   scripts/bench-pth.sh                       # makes /tmp/pth-bench/codec.pth once
#   PTH_BENCH_FILE=x.pth REPEAT=3 scripts/bench-pth.sh
#
# Needs python3 with torch (Debian's python3-torch works) to make the file.
# Prints one TSV line per measurement: what, best seconds of REPEAT runs,
# input GB/s, peak RSS MiB. Every convert syncs its output (it always does),
# so the peer is cp followed by sync of the copy. The file stays in the
# page cache between runs (warmed first).
set -euo pipefail
REPEAT=${REPEAT:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${W:-/tmp/pth-bench}
SRC=${PTH_BENCH_FILE:-$W/codec.pth}
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$W"
if [ ! -f "$SRC" ]; then
  "$PY" "$ROOT/scripts/make-pth-bench.py" "$ROOT/pth/codec_keys.json" "$SRC"
fi
go build -trimpath -o "$W/drama" "$ROOT/cmd/drama"
SIZE=$(stat -c %s "$SRC")
cat "$SRC" > /dev/null
SUM=$(sha256sum "$SRC" | cut -d' ' -f1)

# measure NAME OUTPUT CMD...: best wall time and the peak RSS of that run.
measure() {
  local name=$1 out=$2 best="" rss=""
  shift 2
  for _ in $(seq "$REPEAT"); do
    rm -f "$out"
    /usr/bin/time -f '%e %M' -o "$W/time" "$@" > /dev/null 2>&1
    read -r s k < "$W/time"
    if [ -z "$best" ] || awk "BEGIN{exit !($s < $best)}"; then best=$s rss=$k; fi
  done
  rm -f "$out"
  awk -v n="$name" -v s="$best" -v b="$SIZE" -v k="$rss" 'BEGIN{printf "%s\t%.3f\t%.2f\t%.1f\n", n, s, b/s/1e9, k/1024}'
}

printf 'what\tseconds\tGB/s\tpeak_rss_MiB\n'
measure "inspect" /dev/null "$W/drama" pth inspect "$SRC"
measure "cp+sync" "$W/cp.out" sh -c "cp '$SRC' '$W/cp.out' && sync '$W/cp.out'"
measure "convert keep" "$W/o.safetensors" "$W/drama" -q pth convert "$SRC" -o "$W/o.safetensors"
measure "convert keep, --source-sha256" "$W/o.safetensors" "$W/drama" -q pth convert "$SRC" -o "$W/o.safetensors" --source-sha256 "$SUM"
measure "convert f16" "$W/o.safetensors" "$W/drama" -q pth convert "$SRC" -o "$W/o.safetensors" --dtype f16
measure "convert bf16" "$W/o.safetensors" "$W/drama" -q pth convert "$SRC" -o "$W/o.safetensors" --dtype bf16
measure "convert f16 --fold-weight-norm" "$W/o.safetensors" "$W/drama" -q pth convert "$SRC" -o "$W/o.safetensors" --dtype f16 --fold-weight-norm
measure "convert f16, --source-sha256" "$W/o.safetensors" "$W/drama" -q pth convert "$SRC" -o "$W/o.safetensors" --dtype f16 --source-sha256 "$SUM"
