#!/usr/bin/env bash
# Throughput, CPU and peak memory of drama fetch against curl, both pulling
# the same files from a drama mirror on loopback in the same run.
#
#   scripts/bench-fetch.sh            # 4 files x 256 MiB
#   FILES=8 SIZE_MIB=512 scripts/bench-fetch.sh
#
# Prints one TSV line per run: tool, workers, seconds, MB/s, CPU seconds per
# GB, peak RSS MiB. drama's figures include sha256 verification, fsync and
# the rename; curl's do not, so curl-parallel+sync (curl --parallel, then
# sync(1) of its files) is the peer with the same durability.
set -euo pipefail
FILES=${FILES:-4}
SIZE_MIB=${SIZE_MIB:-256}
PORT=${PORT:-18931}
REPEAT=${REPEAT:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/bench-fetch.XXXXXX)
trap 'kill $MIRROR_PID 2>/dev/null || true; rm -rf "$W"' EXIT
COMMIT=0123456789abcdef0123456789abcdef01234567
REPO=bench/model
go build -o "$W/drama" "$ROOT/cmd/drama"
mkdir -p "$W/mirror/$REPO/$COMMIT"
for i in $(seq 1 "$FILES"); do
  head -c $((SIZE_MIB << 20)) /dev/urandom > "$W/mirror/$REPO/$COMMIT/model-$i.safetensors"
done
TOTAL=$((FILES * SIZE_MIB << 20))
"$W/drama" -q mirror serve "$W/mirror" --addr 127.0.0.1:$PORT >/dev/null 2>"$W/mirror.log" &
MIRROR_PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/api/models/$REPO/refs" && break; sleep 0.1; done
cat > "$W/unlocked.json" <<JSON
{"format":"drama-pins/1","variant":"full","repo":"$REPO","repo_type":"model","revision":"$COMMIT",
 "license":"bench","engine":"cuda","serve_flags":[],"memory_gib":1,"files":[]}
JSON
"$W/drama" -q pins lock --pins "$W/unlocked.json" --endpoint "http://127.0.0.1:$PORT" -o "$W/pins.json" >/dev/null
# Warm the page cache so every tool reads the mirror's files from memory.
cat "$W/mirror/$REPO/$COMMIT"/* > /dev/null

measure() { # label workers command...
  local label=$1 workers=$2; shift 2
  /usr/bin/time -f '%e %U %S %M' -o "$W/time" "$@" >/dev/null 2>"$W/err" || { cat "$W/err"; exit 1; }
  read -r wall user sys rss < "$W/time"
  awk -v l="$label" -v w="$workers" -v t="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v b="$TOTAL" \
    'BEGIN { printf "%s\t%s\t%.2f\t%.0f\t%.2f\t%.0f\n", l, w, t, b/t/1e6, (u+s)/(b/1e9), r/1024 }'
}
urls=()
for i in $(seq 1 "$FILES"); do
  urls+=("http://127.0.0.1:$PORT/$REPO/resolve/$COMMIT/model-$i.safetensors")
done
curl_single() { for u in "${urls[@]}"; do curl -sfL -o "$W/curl/$(basename "$u")" "$u"; done; }
curl_parallel() {
  local args=()
  for u in "${urls[@]}"; do args+=(-o "$W/curl/$(basename "$u")" "$u"); done
  curl -sfL --parallel --parallel-max 8 "${args[@]}"
}
curl_parallel_sync() { curl_parallel && sync "$W"/curl/*; }
drama_fetch() { # workers
  rm -rf "$W/root" "$W/cache"
  HF_HUB_CACHE="$W/cache" "$W/drama" fetch --json --pins "$W/pins.json" --root "$W/root" \
    --endpoint "http://127.0.0.1:$PORT" --accept-license --workers "$1" > "$W/events.ndjson"
}
export W PORT # the functions are passed to bash -c with declare -f; they read $W and $PORT
printf 'tool\tworkers\tseconds\tMB/s\tcpu_s_per_GB\tpeak_rss_MiB\n'
for r in $(seq 1 "$REPEAT"); do
  rm -rf "$W/curl"; mkdir -p "$W/curl"
  measure curl-single 1 bash -c "$(declare -p urls); $(declare -f curl_single); curl_single"
  rm -rf "$W/curl"; mkdir -p "$W/curl"
  measure curl-parallel "$FILES" bash -c "$(declare -p urls); $(declare -f curl_parallel); curl_parallel"
  sync; rm -rf "$W/curl"; mkdir -p "$W/curl"
  measure curl-parallel+sync "$FILES" bash -c "$(declare -p urls); $(declare -f curl_parallel curl_parallel_sync); curl_parallel_sync"
  rm -rf "$W/curl"; sync
  for w in 1 8 32; do
    measure drama "$w" bash -c "$(declare -f drama_fetch); drama_fetch $w"
    rm -rf "$W/root" "$W/cache"; sync
    lag=$(grep '"verified"' "$W/events.ndjson" | sed -n 's/.*"verify_lag_ms":\([0-9.]*\).*/\1/p' | sort -g | tail -1)
    printf '# drama workers=%s: max last-byte-to-verified %s ms\n' "$w" "${lag:-0}"
  done
done
