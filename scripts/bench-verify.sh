#!/usr/bin/env bash
# Measures drama's sha256 throughput against coreutils sha256sum on the same
# file in the same run, full verification of several files against the
# machine's limits, and a size-level verify of a 17-file root.
#
# usage: scripts/bench-verify.sh [FILE_MIB] [NFILES]
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-1024}
nfiles=${2:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/drama" ./cmd/drama

now() { date +%s.%N; }
rate() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / s / 1048576 }'; }

mkdir -p "$work/root/full"
for i in $(seq 1 "$nfiles"); do
  head -c $((mib << 20)) /dev/urandom > "$work/root/full/shard-$i.safetensors"
done
one="$work/root/full/shard-1.safetensors"
bytes=$((mib << 20))
cat "$work"/root/full/* > /dev/null   # warm the page cache: every tool reads from memory

# the read rate: every file read once, as many readers at a time as cores,
# best of three
read_rate=0
for _ in 1 2 3; do
  t0=$(now); ls "$work"/root/full/* | xargs -P "$(nproc)" -n 1 cat > /dev/null; t1=$(now)
  r=$(rate $((bytes * nfiles)) "$(echo "$t1 - $t0" | bc)"); [ "$r" -gt "$read_rate" ] && read_rate=$r
done

coreutils=0
for _ in 1 2 3; do
  t0=$(now); sha256sum "$one" > /dev/null; t1=$(now)
  r=$(rate "$bytes" "$(echo "$t1 - $t0" | bc)"); [ "$r" -gt "$coreutils" ] && coreutils=$r
done

"$work/drama" pins make "$work/root/full" -o "$work/pins.json" --local -q
cp "$work/pins.json" "$work/one.json"
python3 - "$work/one.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["files"] = p["files"][:1]; json.dump(p, open(sys.argv[1], "w"))
PY
drama_one=0 drama_all=0
for _ in 1 2 3; do   # best of three each
  t0=$(now); "$work/drama" verify -q --root "$work/root" --pins "$work/one.json" --level sha256 --no-record > /dev/null 2>&1 || true; t1=$(now)
  r=$(rate "$bytes" "$(echo "$t1 - $t0" | bc)"); [ "$r" -gt "$drama_one" ] && drama_one=$r
  t0=$(now); "$work/drama" verify -q --root "$work/root" --pins "$work/pins.json" --level sha256 --no-record > /dev/null; t1=$(now)
  r=$(rate $((bytes * nfiles)) "$(echo "$t1 - $t0" | bc)"); [ "$r" -gt "$drama_all" ] && drama_all=$r
done

cores=$(nproc)
ceiling=$(( drama_one * cores < read_rate ? drama_one * cores : read_rate ))

# a 17-file root (the nvfp4 variant's file count) at --level size
mkdir -p "$work/small/full"
for i in $(seq 1 17); do head -c 4096 /dev/urandom > "$work/small/full/f$i"; done
"$work/drama" pins make "$work/small/full" -o "$work/small.json" --local -q
"$work/drama" verify -q --root "$work/small" --pins "$work/small.json" --level sha256 > /dev/null
best=999
for _ in 1 2 3 4 5 6 7 8 9 10; do
  t0=$(now); "$work/drama" verify -q --root "$work/small" --pins "$work/small.json" > /dev/null; t1=$(now)
  ms=$(echo "($t1 - $t0) * 1000" | bc | cut -d. -f1); [ "$ms" -lt "$best" ] && best=$ms
done

echo "file size:                 $mib MiB x $nfiles files, page cache warm, $cores cores"
echo "read rate (cat, $(nproc) at a time): $read_rate MiB/s"
echo "sha256sum, one file:       $coreutils MiB/s"
echo "drama, one file:           $drama_one MiB/s  (ratio to sha256sum: $(awk -v a="$drama_one" -v b="$coreutils" 'BEGIN{printf "%.2f", a/b}'))"
echo "drama, $nfiles files:           $drama_all MiB/s  ($(awk -v a="$drama_all" -v b="$ceiling" 'BEGIN{printf "%.0f", 100*a/b}') % of min(cores x one-file rate, read rate) = $ceiling MiB/s)"
echo "verify --level size, 17 files: best of 10 = ${best} ms (process start included)"
