#!/usr/bin/env bash
# How sha256 scales with cores on this host, with no file in the way: the
# ceiling that `scripts/bench-verify.sh` divides by (cores x the one-file
# rate) assumes N cores hash N times as fast as one. This measures that
# assumption directly, in memory, for both implementations verify is
# compared with:
#   - OpenSSL (what coreutils' sha256sum links on Debian 13 / Ubuntu 24.04):
#     `openssl speed -evp sha256 -bytes 1048576` with -multi 1 and -multi N
#   - Go's crypto/sha256 (what drama uses): BenchmarkSHA256Memory in pins
#     with -cpu 1,N
# and prints the CPU topology (threads per core: two hardware threads of
# one core share its SHA unit).
#
#   scripts/bench-sha-cores.sh                   # needs Go, or:
#   PINS_TEST=bin/pins.test scripts/bench-sha-cores.sh
#       (go test -c -o bin/pins.test ./pins, for a host without Go)
#   REPEAT=3 OUT=/tmp/results scripts/bench-sha-cores.sh
set -euo pipefail
BENCH_ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$BENCH_ROOT/scripts/bench-common.sh"
cores=$(nproc)
REPEAT=${REPEAT:-3}
bench_results bench-sha-cores
lscpu | grep -E '^(Model name|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|CPU\(s\)|CPU max MHz|Hypervisor vendor):' | sed 's/  */ /g; s/^/# /'

pins_test=${PINS_TEST:-}
if [ -z "$pins_test" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/bench-sha.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  (cd "$BENCH_ROOT" && "$(bench_go)" test -c -o "$work/pins.test" ./pins)
  pins_test=$work/pins.test
fi

# openssl speed prints "sha256 ... <rate>k" for the 1 MiB block; k = 1000 bytes
ossl() {
  openssl speed -seconds 2 -multi "$1" -evp sha256 -bytes 1048576 2>/dev/null |
    awk '/^sha256/ { r = $NF; sub(/k$/, "", r); printf "%.0f", r * 1000 / 1e6 }'
}
gosha() { # MB/s of BenchmarkSHA256Memory at -cpu $1
  "$pins_test" -test.run '^$' -test.bench '^BenchmarkSHA256Memory$' -test.benchtime 2s -test.cpu "$1" |
    awk '/^BenchmarkSHA256Memory/ { for (i = 1; i <= NF; i++) if ($(i+1) == "MB/s") printf "%.0f", $i }'
}
ratio() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.3f", a / (b * n) }'; }

printf 'run\tload\topenssl_1_MBps\topenssl_%d_MBps\topenssl_scaling\tgo_1_MBps\tgo_%d_MBps\tgo_scaling\n' "$cores" "$cores"
declare -a o1 oN g1 gN so sg
for i in $(seq 1 "$REPEAT"); do
  load=$(bench_load)
  a=$(ossl 1); b=$(ossl "$cores"); c=$(gosha 1); d=$(gosha "$cores")
  o1+=("$a"); oN+=("$b"); g1+=("$c"); gN+=("$d")
  so+=("$(ratio "$b" "$a" "$cores")"); sg+=("$(ratio "$d" "$c" "$cores")")
  printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$load" "$a" "$b" "${so[-1]}" "$c" "$d" "${sg[-1]}"
done
printf 'median\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(bench_load)" \
  "$(bench_median "${o1[@]}")" "$(bench_median "${oN[@]}")" "$(bench_median "${so[@]}")" \
  "$(bench_median "${g1[@]}")" "$(bench_median "${gN[@]}")" "$(bench_median "${sg[@]}")"
echo "scaling = rate with $cores at once / ($cores x the rate of one): 1.000 means cores x the one-core rate is reachable"
