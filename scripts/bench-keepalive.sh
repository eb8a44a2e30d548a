#!/usr/bin/env bash
# The memory drama serve --keep-alive gives back. MemAvailable (from
# /proc/meminfo) is read before drama serve starts (idle), while its engine
# is loaded, and once the engine has been unloaded for idleness; the engine
# is the stand-in holding HOLD_MIB MiB, allocated and touched as an engine
# holds its weights (TENSORFOLD_STANDIN_HOLD_MIB). Each round after the
# first loads the engine again with a request (the figure is that request's
# time, load included) and waits for the unload.
#
#   scripts/bench-keepalive.sh [HOLD_MIB] [KEEP_ALIVE] [ROUNDS]
#   BIN=DIR scripts/bench-keepalive.sh ...   binaries built before (drama,
#                                            drama-engine-cuda, tensorfold-standin)
#
# Defaults: 2048 MiB, 2s, 3 rounds. All figures in MiB. engine_rss is the
# engine process's own resident memory while loaded, what an unload can give
# back; tree_rss is the resident memory of drama serve and every process
# below it (plugin, engine), loaded and unloaded. The peer, measured the
# same way in the same run, is a plain process holding the same memory
# (python3, every page written) that exits: its given_back is what the host
# shows for HOLD_MIB given back, with the same noise from the host's other
# processes, which move MemAvailable too.
set -euo pipefail
hold=${1:-2048}
back=()
keep=${2:-2s}
rounds=${3:-3}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill "${serve:-}" 2>/dev/null || true; wait "${serve:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
if [ -n "${BIN:-}" ]; then
	cp "$BIN/drama" "$BIN/drama-engine-cuda" "$BIN/tensorfold-standin" "$work/"
else
	go build -o "$work/drama" ./cmd/drama
	go build -o "$work/drama-engine-cuda" ./plugins/cuda
	go build -o "$work/tensorfold-standin" ./engine/native/standin/cmd/tensorfold-standin
fi
(cd "$work" && sha256sum drama-engine-cuda > drama-engine-cuda.sha256)
mkdir -p "$work/root/full"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"

avail() { awk '/^MemAvailable:/ {print int($2/1024)}' /proc/meminfo; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
ready() { curl -s "$url/ready" | field "$1"; }
engine_pid() { "$work/drama" status --root "$work/root" --json | field 'd["servers"][0]["engines"][0].get("pid", 0)'; }
rss() { awk '/^VmRSS:/ {print int($2/1024)}' "/proc/$1/status"; }
tree_rss() { # resident MiB of drama serve and every process below it
	ps -e -o pid=,ppid=,rss= | awk -v root="$serve" '{ p[$1] = $2; r[$1] = $3 }
		END { for (i in p) { j = i; while (j != "" && j != root && j != 0 && j != 1) j = p[j]; if (j == root) s += r[i] } print int(s / 1024) }'
}
wait_for() { # wait_for EXPR VALUE: until GET /ready's EXPR prints VALUE (60 s at most)
	for _ in $(seq 1200); do [ "$(ready "$1" 2>/dev/null)" = "$2" ] && return; sleep 0.05; done
	echo "GET /ready: $1 never became $2" >&2; cat "$work/serve.log" >&2; exit 1
}

# the peer: a plain process holding the memory, then exiting
peer=()
for _ in $(seq "$rounds"); do
	python3 -c 'import sys,time
b = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("held", flush=True); time.sleep(2.5)' "$hold" > "$work/peer.out" &
	p=$!
	until grep -q held "$work/peer.out" 2>/dev/null; do sleep 0.05; done
	l=$(avail)
	wait "$p"
	sleep 0.5
	peer+=($(($(avail) - l)))
done

sleep 1
idle=$(avail)
TENSORFOLD_STANDIN_HOLD_MIB=$hold TENSORFOLD_STANDIN_LOAD_TIME=10ms "$work/drama" serve --root "$work/root" \
	--plugin-dir "$work" --engine-bin "$work/tensorfold-standin" --admission off --addr "127.0.0.1:$port" \
	--keep-alive "$keep" 2>"$work/serve.log" &
serve=$!
wait_for 'd["loaded"]' True

echo "# bench-keepalive: stand-in holding $hold MiB, --keep-alive $keep, $(nproc) cores," \
	"$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(date -u '+%Y-%m-%d %H:%M UTC')," \
	"commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "MemAvailable before drama serve: $idle MiB"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' round request_s avail_loaded avail_unloaded given_back idle_minus_unloaded engine_rss tree_rss_loaded tree_rss_unloaded
for r in $(seq "$rounds"); do
	took=-
	if [ "$r" -gt 1 ]; then
		took=$(curl -s -o /dev/null -w '%{time_total}' "$url/v1/audio/speech" -H 'Content-Type: application/json' \
			-d '{"input":"Loaded again.","stream":false}')
	fi
	pid=$(engine_pid)
	loaded=$(avail)
	engine=$(rss "$pid")
	tree_loaded=$(tree_rss)
	wait_for 'd["phase"]' unloaded
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	sleep 0.5
	unloaded=$(avail)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$took" "$loaded" "$unloaded" $((unloaded - loaded)) $((idle - unloaded)) \
		"$engine" "$tree_loaded" "$(tree_rss)"
	back+=($((unloaded - loaded)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "peer (a plain process holding $hold MiB exits), given_back per round: ${peer[*]}"
d=$(median "${back[@]}")
q=$(median "${peer[@]}")
echo "median given_back: drama serve unload $d MiB, peer $q MiB, ratio $(awk -v a="$d" -v b="$q" 'BEGIN { printf "%.2f", a / b }')"
