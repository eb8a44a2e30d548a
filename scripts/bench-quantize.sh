#!/usr/bin/env bash
# Reproduces the end-to-end quantize figures in docs/BENCHMARKS.md:
# a synthetic block-FP8 checkpoint (default 10 layers x 128 experts of
# 512x2048, about 4.1 GB) converted to NVFP4, against the I/O floor measured
# in the same run: cp of the same checkpoint followed by sync (cp reads the
# same bytes and writes more than quantize does).
#
#   scripts/bench-quantize.sh            # LAYERS=10 EXPERTS=128 WORKERS=0
#   BENCH_DIR=/big/disk LAYERS=20 scripts/bench-quantize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
W=${BENCH_DIR:-$(mktemp -d /tmp/bench-quantize.XXXXXX)}
LAYERS=${LAYERS:-10}
EXPERTS=${EXPERTS:-128}
WORKERS=${WORKERS:-0}
trap 'rm -rf "$W/in" "$W/cp" "$W/out" "$W/out-prune"' EXIT

go build -o "$W/drama" ./cmd/drama
go run ./scripts/quant-synth -o "$W/in" -layers "$LAYERS" -experts "$EXPERTS"
in_bytes=$(du -sb "$W/in" | cut -f1)
sync

t() { /usr/bin/time -f '%e %M %U %S' -o "$W/time" "$@" >/dev/null; cat "$W/time"; }

read -r cp_s cp_kb cp_u cp_y < <(t sh -c "cp -r '$W/in' '$W/cp' && sync")
rm -rf "$W/cp"
read -r q_s q_kb q_u q_y < <(t "$W/drama" quantize "$W/in" -o "$W/out" --to nvfp4 --workers "$WORKERS" --quiet)
out_bytes=$(du -sb "$W/out" | cut -f1)

# Pruning to half the experts: pruned experts are never read.
python3 - "$LAYERS" "$EXPERTS" > "$W/keep.json" <<'PY'
import json, sys
layers, experts = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({str(l): list(range(0, experts, 2)) for l in range(layers)}))
PY
read -r p_s p_kb p_u p_y < <(t "$W/drama" quantize "$W/in" -o "$W/out-prune" --to nvfp4 --experts "$W/keep.json" --workers "$WORKERS" --quiet)

load=$(cut -d' ' -f1 /proc/loadavg)
awk -v load="$load" -v cpu="$(nproc)" -v qc="$(echo "$q_u + $q_y" | bc)" -v cc="$(echo "$cp_u + $cp_y" | bc)" -v pc="$(echo "$p_u + $p_y" | bc)" -v ib="$in_bytes" -v ob="$out_bytes" -v cs="$cp_s" -v ck="$cp_kb" -v qs="$q_s" -v qk="$q_kb" -v ps="$p_s" -v pk="$p_kb" 'BEGIN {
  printf "machine         %d CPUs, load average %s at the end\n", cpu, load
  printf "input           %.2f GB\n", ib/1e9
  printf "output          %.2f GB\n", ob/1e9
  printf "cp -r + sync    %6.1f s  %7.1f MB/s  peak RSS %5.0f MiB  CPU %5.1f s\n", cs, ib/cs/1e6, ck/1024, cc
  printf "quantize nvfp4  %6.1f s  %7.1f MB/s  peak RSS %5.0f MiB  CPU %5.1f s  ratio to cp %.2f\n", qs, ib/qs/1e6, qk/1024, qc, qs/cs
  printf "  + prune half  %6.1f s                  peak RSS %5.0f MiB  CPU %5.1f s\n", ps, pk/1024, pc
  printf "projection, full model (32 GB read for 7,369 kept experts + pass-through): %.0f s\n", qs*32e9/ib
}'
