#!/usr/bin/env bash
# End-to-end drama quantize --to nvfp4 on a synthetic block-FP8 checkpoint
# (default 10 layers x 128 experts of 512x2048, about 4.1 GB in 4 shards)
# against the I/O floor measured in the same run, at several --workers.
#
#   scripts/bench-quantize.sh                        # LAYERS=10 EXPERTS=128
#   WORKERS_LIST="1 8 16 32" REPEAT=3 OUT=/tmp/results scripts/bench-quantize.sh
#   DRAMA=bin/drama QUANT_SYNTH=bin/quant-synth scripts/bench-quantize.sh   # no Go needed
#   BENCH_DIR=/big/disk LAYERS=20 scripts/bench-quantize.sh
#   DRAMA_BEFORE=/tmp/drama-old scripts/bench-quantize.sh   # also time another build (default --workers)
#
# Floors, same run: `cat` of the input's shards, as many at once as cores
# (the read floor), and `cp -r` of the checkpoint followed by sync (reads
# the same bytes and writes more than quantize does), and the write floor:
# `cp -r` of a finished quantize output (made once before the timed runs)
# followed by sync, which writes the bytes quantize writes. The CPU floor
# is quantize's CPU seconds (user + sys, at the default --workers) spread
# over every core; the summary gives quantize's wall time over the larger
# of the two floors. With COLD=1 (as
# root, on a machine of your own: it empties the whole page cache) every
# timed command starts with a cold page cache; otherwise the input is in
# the page cache.
# Every output is fsynced. Each --workers value and each floor is timed
# REPEAT times (default 3), interleaved; the table gives medians of wall
# time, CPU (user + sys), cores used (CPU / wall) and peak RSS, and each
# line the load average at its start.
set -euo pipefail
BENCH_ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$BENCH_ROOT/scripts/bench-common.sh"
W=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/bench-quantize.XXXXXX")}
LAYERS=${LAYERS:-10}
EXPERTS=${EXPERTS:-128}
REPEAT=${REPEAT:-3}
WORKERS_LIST=${WORKERS_LIST:-"1 2 4 8 16 32 64 0"}
if [ -n "${BENCH_DIR:-}" ]; then
  trap 'rm -rf "$W/in" "$W/cp" "$W/out" "$W/out-prune" "$W/ref" "$W/wf"' EXIT
else
  trap 'rm -rf "$W"' EXIT
fi
mkdir -p "$W"
bench_build "$W"
if [ -n "${QUANT_SYNTH:-}" ]; then
  "$QUANT_SYNTH" -o "$W/in" -layers "$LAYERS" -experts "$EXPERTS" > /dev/null
else
  (cd "$BENCH_ROOT" && "$(bench_go)" run ./scripts/quant-synth -o "$W/in" -layers "$LAYERS" -experts "$EXPERTS" > /dev/null)
fi
bench_results bench-quantize
in_bytes=$(du -sb "$W/in" | cut -f1)
sync
cold=0
if [ "${COLD:-0}" = 1 ]; then
  [ -w /proc/sys/vm/drop_caches ] || { echo "COLD=1 needs a writable /proc/sys/vm/drop_caches (root)" >&2; exit 1; }
  cold=1
fi
prepare() { # before each timed command
  rm -rf "$W/cp" "$W/out" "$W/out-prune" "$W/wf"
  sync
  if [ "$cold" = 1 ]; then echo 3 > /proc/sys/vm/drop_caches; else cat "$W"/in/* "$W"/ref/* > /dev/null; fi
}
# t NAME CMD...: one timed run; appends "NAME wall rss_kib cpu" to $W/runs
t() {
  local name=$1 load; shift
  prepare
  load=$(bench_load)
  /usr/bin/time -f '%e %M %U %S' -o "$W/time" "$@" > /dev/null
  read -r s k u y < "$W/time"
  echo "$name $s $k $(awk -v u="$u" -v y="$y" 'BEGIN { print u + y }') $load" >> "$W/runs"
  printf '  %-22s %7.2f s  %6.0f MiB  CPU %6.1f s  load %s\n' "$name" "$s" "$((k / 1024))" "$(awk -v u="$u" -v y="$y" 'BEGIN { print u + y }')" "$load"
}
read_floor() { ls "$W"/in/*.safetensors | xargs -P "$(nproc)" -n 1 cat > /dev/null; }
python3 - "$LAYERS" "$EXPERTS" > "$W/keep.json" <<'PY'
import json, sys
layers, experts = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({str(l): list(range(0, experts, 2)) for l in range(layers)}))
PY

rm -rf "$W/ref"
"$W/drama" quantize "$W/in" -o "$W/ref" --to nvfp4 --quiet > /dev/null
if [ -n "${DRAMA_BEFORE:-}" ]; then cp "$DRAMA_BEFORE" "$W/drama-before"; fi
echo "input $(awk -v b="$in_bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }'), page cache $([ "$cold" = 1 ] && echo "cold (dropped before every run)" || echo "warm"), REPEAT=$REPEAT, --workers: $WORKERS_LIST"
: > "$W/runs"
for r in $(seq 1 "$REPEAT"); do
  echo "repeat $r"
  t "read-floor" sh -c "$(declare -f read_floor); W='$W'; read_floor"
  t "cp-r+sync" sh -c "cp -r '$W/in' '$W/cp' && sync"
  t "write-floor" sh -c "cp -r '$W/ref' '$W/wf' && sync"
  for w in $WORKERS_LIST; do
    t "quantize-w$w" "$W/drama" quantize "$W/in" -o "$W/out" --to nvfp4 --workers "$w" --quiet
  done
  t "prune-half-w0" "$W/drama" quantize "$W/in" -o "$W/out-prune" --to nvfp4 --experts "$W/keep.json" --quiet
  if [ -n "${DRAMA_BEFORE:-}" ]; then
    t "before-w0" "$W/drama-before" quantize "$W/in" -o "$W/out" --to nvfp4 --workers 0 --quiet
  fi
done

floor=$(bench_median $(awk '$1 == "read-floor" { print $2 }' "$W/runs"))
cp_s=$(bench_median $(awk '$1 == "cp-r+sync" { print $2 }' "$W/runs"))
echo
echo "medians of $REPEAT runs ($(nproc) cores, load average now $(bench_load)):"
printf '%-16s %8s %9s %8s %7s %9s %10s %8s\n' what wall_s MB/s cpu_s cores rss_MiB /read-floor /cp+sync
before=""
[ -n "${DRAMA_BEFORE:-}" ] && before=before-w0
for name in read-floor cp-r+sync write-floor $(for w in $WORKERS_LIST; do echo "quantize-w$w"; done) prune-half-w0 $before; do
  s=$(bench_median $(awk -v n="$name" '$1 == n { print $2 }' "$W/runs"))
  k=$(bench_median $(awk -v n="$name" '$1 == n { print $3 }' "$W/runs"))
  c=$(bench_median $(awk -v n="$name" '$1 == n { print $4 }' "$W/runs"))
  awk -v n="$name" -v s="$s" -v k="$k" -v c="$c" -v b="$in_bytes" -v f="$floor" -v cp="$cp_s" 'BEGIN {
    printf "%-16s %8.2f %9.0f %8.1f %7.2f %9.0f %10.2f %8.2f\n", n, s, b / s / 1e6, c, c / s, k / 1024, s / f, s / cp }'
done

# The default --workers against max(CPU floor, write floor), and the build
# before when given.
wf=$(bench_median $(awk '$1 == "write-floor" { print $2 }' "$W/runs"))
for name in quantize-w0 $before; do
  grep -q "^$name " "$W/runs" || continue
  s=$(bench_median $(awk -v n="$name" '$1 == n { print $2 }' "$W/runs"))
  c=$(bench_median $(awk -v n="$name" '$1 == n { print $4 }' "$W/runs"))
  awk -v n="$name" -v s="$s" -v c="$c" -v p="$(nproc)" -v wf="$wf" 'BEGIN {
    cf = c / p; fl = (cf > wf ? cf : wf)
    printf "%s: wall %.2f s; CPU floor %.2f s (%.1f CPU s / %d cores), write floor %.2f s; wall / max(floors) = %.2f\n", n, s, cf, c, p, wf, s / fl }'
done
