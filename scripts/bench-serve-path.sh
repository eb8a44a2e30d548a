#!/usr/bin/env bash
# What drama serve and its engine plugin add to first audio and total time,
# measured by drama bench in one run against its peer: the stand-in native
# server spoken to directly (the same HTTP contract, no drama serve, no
# plugin in between).
#
#   scripts/bench-serve-path.sh [RTF] [PASSES]
#
# RTF paces the stand-in (0: as fast as it can, so the figures are the
# path's own cost; default 0). Runs the built-in 24-text corpus, 2 warm-up
# and PASSES warm passes (default 3), first against the stand-in alone
# (A), then through drama serve started by drama bench --start (B), and
# prints drama bench compare A B. The reports go to $OUT (default
# bin/bench-serve-path/).
set -euo pipefail
rtf=${1:-0}
passes=${2:-3}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill "${standin:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/drama" ./cmd/drama
go build -o "$work/drama-engine-cuda" ./plugins/cuda
go build -o "$work/tensorfold-standin" ./engine/native/standin/cmd/tensorfold-standin
(cd "$work" && sha256sum drama-engine-cuda > drama-engine-cuda.sha256)
out=${OUT:-bin/bench-serve-path}
mkdir -p "$work/root/full" "$out"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TENSORFOLD_STANDIN_RTF=$rtf TENSORFOLD_STANDIN_LOAD_TIME=10ms "$work/tensorfold-standin" serve --port "$port" 2>/dev/null &
standin=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.05; done
"$work/drama" bench -q --root "$work/root" --server "http://127.0.0.1:$port" --passes "$passes" --out "$out/standin" >/dev/null
kill "$standin"; wait "$standin" 2>/dev/null || true
TENSORFOLD_STANDIN_RTF=$rtf TENSORFOLD_STANDIN_LOAD_TIME=10ms "$work/drama" bench -q --root "$work/root" --start --passes "$passes" \
	--out "$out/serve" -- --engine-bin "$work/tensorfold-standin" --admission off >/dev/null
"$work/drama" bench compare "$out/standin"/report.json "$out/serve"/report.json | awk -F'\t' '$2 == "all"' | column -t -s $'\t'
