#!/usr/bin/env bash
# sha256 verification: drama against coreutils sha256sum on the same files
# in the same run, one file and all files at once.
#
#   scripts/bench-verify.sh [FILE_MIB] [NFILES]     # default 1024 MiB x (2 x cores) files
#   REPEAT=5 OUT=/tmp/results scripts/bench-verify.sh 512 32
#   DRAMA=bin/drama scripts/bench-verify.sh          # a prebuilt binary; no Go needed
#   DRAMA_BASE=/tmp/old-drama scripts/bench-verify.sh # also time another build, same runs
#
# Every figure is the median of REPEAT (default 3) interleaved runs, each
# with the load average at its start; the page cache is warm (every tool
# reads from memory). The figures:
#   - one file: `sha256sum` and `drama verify --level sha256` (the one-file rate)
#   - all files: `xargs -P<cores> -n1 sha256sum` (the peer) and drama, which
#     hashes one file per core
#   - drama's all-file rate against the ceiling its one-file rate gives:
#     cores x the one-file rate when the files split evenly over the cores;
#     in general the one-file rate x total bytes / the bytes of the busiest
#     core when files go to cores largest first (a file is hashed by one core,
#     so 20 equal files on 16 cores take two files' time)
#   - CPU seconds (user + sys) per GB of the all-file runs, which a loaded
#     machine changes far less than the rates
#   - `drama verify` (size level) of a 17-file root, process start included
set -euo pipefail
BENCH_ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$BENCH_ROOT/scripts/bench-common.sh"
cores=$(nproc)
mib=${1:-1024}
nfiles=${2:-$((2 * cores))}
REPEAT=${REPEAT:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-verify.XXXXXX")
trap 'rm -rf "$work"' EXIT
bench_build "$work"
[ -n "${DRAMA_BASE:-}" ] && cp "$DRAMA_BASE" "$work/drama-base"
bench_results bench-verify

mkdir -p "$work/root/full" "$work/one/full"
seq 1 "$nfiles" | xargs -P "$cores" -I{} sh -c "head -c $((mib << 20)) /dev/urandom > '$work/root/full/shard-{}.safetensors'"
one="$work/root/full/shard-1.safetensors"
ln "$one" "$work/one/full/shard-1.safetensors"
bytes=$((mib << 20))
total=$((bytes * nfiles))
cat "$work"/root/full/* > /dev/null   # warm the page cache
"$work/drama" pins make "$work/root/full" -o "$work/all.json" --local -q
"$work/drama" pins make "$work/one/full" -o "$work/one.json" --local -q

# the busiest core's bytes when equal files go to cores largest first
busiest=$(( (nfiles + cores - 1) / cores * bytes ))

mibps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / s / 1048576 }'; }
timed() { # prints the seconds the command took; its CPU seconds (user + sys) go to $work/cpu
  local t0 t1
  t0=$(bench_now); /usr/bin/time -f '%U %S' -o "$work/time" "$@" > /dev/null; t1=$(bench_now)
  awk '{ printf "%.2f", $1 + $2 }' "$work/time" > "$work/cpu"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'
}
cpu_per_gb() { awk -v c="$(cat "$work/cpu")" -v b="$1" 'BEGIN { printf "%.3f", c / (b / 1e9) }'; }
# the timed commands, as scripts so that /usr/bin/time can run them
printf '#!/bin/sh\nexec "%s/${BIN:-drama}" verify -q --root "$1" --pins "$2" --level sha256 --no-record\n' "$work" > "$work/verify"
printf '#!/bin/sh\nls "%s"/root/full/* | xargs -P %d -n 1 sha256sum\n' "$work" "$cores" > "$work/peer_all"
chmod +x "$work/verify" "$work/peer_all"

echo "files: $nfiles x $mib MiB ($(awk -v b="$total" 'BEGIN{printf "%.2f", b/1e9}') GB), page cache warm, $cores cores, REPEAT=$REPEAT"
printf 'run\tload\tsha256sum_one_MiBps\tdrama_one_MiBps\txargs_P%d_MiBps\tdrama_all_MiBps\tdrama_all/xargs\tdrama_all/ceiling\txargs_cpu_s/GB\tdrama_all_cpu_s/GB' "$cores"
[ -n "${DRAMA_BASE:-}" ] && printf '\tbase_one_MiBps\tbase_all_MiBps\tbase_all/xargs\tbase_all/ceiling\tbase_all_cpu_s/GB'
echo
declare -a S1 D1 SA DA RP RC SC DC B1 BA BP BC BU
for r in $(seq 1 "$REPEAT"); do
  load=$(bench_load)
  s1=$(mibps "$bytes" "$(timed sha256sum "$one")")
  d1=$(mibps "$bytes" "$(timed "$work/verify" "$work/one" "$work/one.json")")
  sa=$(mibps "$total" "$(timed "$work/peer_all")")
  sc=$(cpu_per_gb "$total")
  da=$(mibps "$total" "$(timed "$work/verify" "$work/root" "$work/all.json")")
  dc=$(cpu_per_gb "$total")
  ceiling=$(awk -v d1="$d1" -v t="$total" -v b="$busiest" 'BEGIN { printf "%.0f", d1 * t / b }')
  rp=$(awk -v a="$da" -v b="$sa" 'BEGIN { printf "%.3f", a / b }')
  rc=$(awk -v a="$da" -v b="$ceiling" 'BEGIN { printf "%.3f", a / b }')
  S1+=("$s1") D1+=("$d1") SA+=("$sa") DA+=("$da") RP+=("$rp") RC+=("$rc") SC+=("$sc") DC+=("$dc")
  base=""
  if [ -n "${DRAMA_BASE:-}" ]; then
    b1=$(export BIN=drama-base; mibps "$bytes" "$(timed "$work/verify" "$work/one" "$work/one.json")")
    ba=$(export BIN=drama-base; mibps "$total" "$(timed "$work/verify" "$work/root" "$work/all.json")")
    bu=$(cpu_per_gb "$total")
    bp=$(awk -v a="$ba" -v b="$sa" 'BEGIN { printf "%.3f", a / b }')
    bc=$(awk -v a="$ba" -v d1="$b1" -v t="$total" -v b="$busiest" 'BEGIN { printf "%.3f", a / (d1 * t / b) }')
    B1+=("$b1") BA+=("$ba") BP+=("$bp") BC+=("$bc") BU+=("$bu")
    base=$(printf '\t%s\t%s\t%s\t%s\t%s' "$b1" "$ba" "$bp" "$bc" "$bu")
  fi
  printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n' "$r" "$load" "$s1" "$d1" "$sa" "$da" "$rp" "$rc" "$sc" "$dc" "$base"
done
base=""
[ -n "${DRAMA_BASE:-}" ] && base=$(printf '\t%s\t%s\t%s\t%s\t%s' "$(bench_median "${B1[@]}")" "$(bench_median "${BA[@]}")" "$(bench_median "${BP[@]}")" "$(bench_median "${BC[@]}")" "$(bench_median "${BU[@]}")")
printf 'median\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n' "$(bench_load)" "$(bench_median "${S1[@]}")" "$(bench_median "${D1[@]}")" \
  "$(bench_median "${SA[@]}")" "$(bench_median "${DA[@]}")" "$(bench_median "${RP[@]}")" "$(bench_median "${RC[@]}")" \
  "$(bench_median "${SC[@]}")" "$(bench_median "${DC[@]}")" "$base"
echo "ceiling = drama's one-file rate x $nfiles files / $(( (nfiles + cores - 1) / cores )) file(s) on the busiest core" \
  "($(awk -v n="$nfiles" -v c="$cores" -v k=$(( (nfiles + cores - 1) / cores )) 'BEGIN{printf "%.0f", 100*n/(c*k)}') % of cores x the one-file rate)"

# a 17-file root (the nvfp4 variant's file count) at --level size
mkdir -p "$work/small/full"
for i in $(seq 1 17); do head -c 4096 /dev/urandom > "$work/small/full/f$i"; done
"$work/drama" pins make "$work/small/full" -o "$work/small.json" --local -q
"$work/drama" verify -q --root "$work/small" --pins "$work/small.json" --level sha256 > /dev/null
best=999999
for _ in $(seq 10); do
  ms=$(awk -v s="$(timed "$work/drama" verify -q --root "$work/small" --pins "$work/small.json")" 'BEGIN { printf "%d", s * 1000 }')
  [ "$ms" -lt "$best" ] && best=$ms
done
echo "verify --level size, 17 files: best of 10 = ${best} ms (process start included), load $(bench_load)"
