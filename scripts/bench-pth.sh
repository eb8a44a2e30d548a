#!/usr/bin/env bash
# Speed and peak memory of drama pth inspect and convert on a codec-shaped
# fp32 checkpoint (scripts/make-pth-bench.py, 1.57 GB), against cp of the same
# file followed by sync, in the same run.
#
#   scripts/bench-pth.sh                       # makes /tmp/pth-bench/codec.pth once
#   PTH_BENCH_FILE=x.pth REPEAT=5 OUT=/tmp/results scripts/bench-pth.sh
#   DRAMA=bin/drama scripts/bench-pth.sh       # a prebuilt binary; no Go needed
#   DRAMA_BEFORE=/tmp/drama-old scripts/bench-pth.sh   # also time keep, f16 and bf16 of another build
#
# make-pth-bench.py uses torch when python3 has it, else writes the same
# layout itself (random float32 values). Every convert syncs its output (it
# always does), so the peer is cp followed by sync of the copy. The source
# stays in the page cache (read first). Each case runs REPEAT times
# (default 3), interleaved with the others; each line gives the median wall
# time, the CPU (user + sys) and cores busy (CPU / wall) and the peak RSS of
# the median run, the load average at the start of the case's runs, and the
# seconds of every run. Outputs are removed before a
# run (not timed), except in the --force case, which converts over the
# output of the case before it, as a user replacing a file does.
set -euo pipefail
BENCH_ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$BENCH_ROOT/scripts/bench-common.sh"
REPEAT=${REPEAT:-3}
W=${W:-/tmp/pth-bench}
SRC=${PTH_BENCH_FILE:-$W/codec.pth}
PY=${PYTHON:-python3}
mkdir -p "$W"
if [ ! -f "$SRC" ]; then
  "$PY" "$BENCH_ROOT/scripts/make-pth-bench.py" "$BENCH_ROOT/pth/codec_keys.json" "$SRC"
fi
bench_build "$W"
bench_results bench-pth
SIZE=$(stat -c %s "$SRC")
cat "$SRC" > /dev/null
SUM=$(sha256sum "$SRC" | cut -d' ' -f1)
D="$W/drama"
O="$W/o.safetensors"

names=() outs=() cmds=() keep=()
case_() { # NAME OUTPUT KEEP_OLD CMD...: KEEP_OLD=1 leaves the previous output in place
  names+=("$1") outs+=("$2") keep+=("$3"); shift 3
  cmds+=("$(printf '%q ' "$@")")
}
case_ "inspect" /dev/null 1 "$D" pth inspect "$SRC"
case_ "cp+sync" "$W/cp.out" 0 sh -c "cp '$SRC' '$W/cp.out' && sync '$W/cp.out'"
case_ "convert keep" "$O" 0 "$D" -q pth convert "$SRC" -o "$O"
case_ "convert keep, --source-sha256" "$O" 0 "$D" -q pth convert "$SRC" -o "$O" --source-sha256 "$SUM"
case_ "convert f16" "$O" 0 "$D" -q pth convert "$SRC" -o "$O" --dtype f16
case_ "convert f16 --force over it" "$O" 1 "$D" -q pth convert "$SRC" -o "$O" --dtype f16 --force
case_ "convert bf16" "$O" 0 "$D" -q pth convert "$SRC" -o "$O" --dtype bf16
case_ "convert f16 --fold-weight-norm" "$O" 0 "$D" -q pth convert "$SRC" -o "$O" --dtype f16 --fold-weight-norm
case_ "convert f16, --source-sha256" "$O" 0 "$D" -q pth convert "$SRC" -o "$O" --dtype f16 --source-sha256 "$SUM"
if [ -n "${DRAMA_BEFORE:-}" ]; then
  cp "$DRAMA_BEFORE" "$W/drama-before"
  B="$W/drama-before"
  case_ "before: convert keep" "$O" 0 "$B" -q pth convert "$SRC" -o "$O"
  case_ "before: convert f16" "$O" 0 "$B" -q pth convert "$SRC" -o "$O" --dtype f16
  case_ "before: convert bf16" "$O" 0 "$B" -q pth convert "$SRC" -o "$O" --dtype bf16
fi

declare -A secs rss cpu load
for r in $(seq "$REPEAT"); do
  for i in "${!names[@]}"; do
    [ "${keep[$i]}" = 1 ] || rm -f "${outs[$i]}"
    [ "$r" = 1 ] && load[$i]=$(bench_load)
    eval "/usr/bin/time -f '%e %M %U %S' -o '$W/time' ${cmds[$i]}" > /dev/null 2>&1
    read -r s k u y < "$W/time"
    secs[$i]="${secs[$i]:-} $s" rss[$i]="${rss[$i]:-} $k" cpu[$i]="${cpu[$i]:-} $s:$(awk -v u="$u" -v y="$y" 'BEGIN { print u + y }')"
  done
done
rm -f "$O" "$W/cp.out"

cp_s=""
printf 'what\tmedian_s\tGB/s\tvs_cp+sync\tcpu_s\tcores\tpeak_rss_MiB\tload\truns_s\n'
for i in "${!names[@]}"; do
  # shellcheck disable=SC2086
  s=$(bench_median ${secs[$i]})
  # shellcheck disable=SC2086
  k=$(bench_median ${rss[$i]})
  # the CPU of the run whose wall time is the median
  # shellcheck disable=SC2086
  c=$(printf '%s\n' ${cpu[$i]} | awk -F: -v s="$s" '$1 == s { print $2; exit }')
  [ "${names[$i]}" = "cp+sync" ] && cp_s=$s
  awk -v n="${names[$i]}" -v s="$s" -v b="$SIZE" -v k="$k" -v c="$c" -v cp="$cp_s" -v l="${load[$i]}" -v runs="${secs[$i]}" 'BEGIN {
    printf "%s\t%.3f\t%.2f\t%s\t%.2f\t%.2f\t%.1f\t%s\t%s\n", n, s, b / s / 1e9, (cp == "" ? "" : sprintf("%.2f", cp / s)), c, (s > 0 ? c / s : 0), k / 1024, l, runs }'
done
