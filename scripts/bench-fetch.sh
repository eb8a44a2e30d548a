#!/usr/bin/env bash
# Throughput, CPU and peak memory of drama fetch against its peers, all
# pulling the same files from one `drama mirror serve` on loopback (Hub
# routes, and LFS content through its CDN listener with signed redirects,
# as on the Hub), interleaved in each repeat:
#
#   curl-single          curl, one file after another
#   curl-parallel        curl --parallel --parallel-max 8
#   curl-parallel+sync   the same, then sync(1) of its files
#   hf                   huggingface_hub's snapshot_download, max_workers=8
#   hf-in-call           the hf run timed inside Python, without the interpreter's
#                        start and the import of huggingface_hub
#   hf+sync              the same as hf, then sync(1) of its blobs
#   drama                drama fetch --workers N for each N in WORKERS
#
# drama's time includes sha256 verification, an fsync of every file and the
# verified rename. curl and snapshot_download never fsync (huggingface_hub's
# file_download.py writes to a temporary file and renames it, unsynced), so
# the "+sync" runs are the peers at drama's durability.
#
#   scripts/bench-fetch.sh                                   # 4 x 256 MiB, 3 repeats
#   FILES=4 SIZE_MIB=1024 WORKERS="4 8 16 32" OUT=/tmp/res scripts/bench-fetch.sh
#
# Environment:
#   FILES, SIZE_MIB   the files the mirror serves (4 x 256 MiB)
#   REPEAT            interleaved repeats; the order rotates each time (3)
#   WORKERS           drama's --workers values ("1 4 8 16 32")
#   PEERS             which peers to run: "curl hf", "curl", "hf" or "" (curl hf)
#   DRAMA             a built drama binary (default: built here with go from
#                     PATH or /usr/local/go/bin)
#   DRAMA_BEFORE      another drama binary (say, a build of an earlier commit),
#                     run at the same WORKERS as "drama-before" rows
#   PYLIB             the directory holding huggingface_hub (../shared/pylib
#                     beside the checkout)
#   PORT              the mirror's port (18931)
#   MIRROR_FLAGS      more flags for drama mirror serve; "--rate 25000000"
#                     paces each data response, as a CDN that limits each
#                     connection does
#   OUT               when set, runs.tsv and summary.txt are written there too
#
# Prints one TSV line per run (repeat, tool, workers, seconds, MB/s, CPU
# seconds per GB, peak RSS MiB, 1-minute load average when it started), then
# the medians of each tool over the repeats and their ratios to the peers.
# Needs bash, python3, curl (for the curl peers) and sync; no network.
set -euo pipefail
FILES=${FILES:-4}
SIZE_MIB=${SIZE_MIB:-256}
PORT=${PORT:-18931}
REPEAT=${REPEAT:-3}
WORKERS=${WORKERS:-1 4 8 16 32}
PEERS=${PEERS-curl hf}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYLIB=${PYLIB:-$ROOT/../shared/pylib}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-fetch.XXXXXX")
MIRROR_PID=
trap '[ -n "$MIRROR_PID" ] && kill $MIRROR_PID 2>/dev/null; rm -rf "$W"' EXIT
COMMIT=0123456789abcdef0123456789abcdef01234567
REPO=bench/model
has() { case " $PEERS " in *" $1 "*) return 0 ;; esac; return 1; }

if [ -z "${DRAMA:-}" ]; then
  GO=$(command -v go || echo /usr/local/go/bin/go)
  "$GO" build -o "$W/drama" "$ROOT/cmd/drama"
  DRAMA=$W/drama
fi
if has hf && [ ! -d "$PYLIB/huggingface_hub" ]; then
  echo "bench-fetch: no huggingface_hub in $PYLIB: set PYLIB, or PEERS=curl" >&2
  exit 1
fi
mkdir -p "$W/mirror/$REPO/$COMMIT"
for i in $(seq 1 "$FILES"); do
  head -c $((SIZE_MIB << 20)) /dev/urandom > "$W/mirror/$REPO/$COMMIT/model-$i.safetensors"
done
TOTAL=$((FILES * SIZE_MIB << 20))
EP=http://127.0.0.1:$PORT
"$DRAMA" -q mirror serve "$W/mirror" --addr 127.0.0.1:$PORT ${MIRROR_FLAGS:-} >/dev/null 2>"$W/mirror.log" &
MIRROR_PID=$!
for _ in $(seq 100); do curl -s -o /dev/null "$EP/api/models/$REPO/refs" && break; sleep 0.1; done
cat > "$W/unlocked.json" <<JSON
{"format":"drama-pins/1","variant":"full","repo":"$REPO","repo_type":"model","revision":"$COMMIT",
 "license":"bench","engine":"cuda","serve_flags":[],"memory_gib":1,"files":[]}
JSON
"$DRAMA" -q pins lock --pins "$W/unlocked.json" --endpoint "$EP" -o "$W/pins.json" >/dev/null
# Warm the page cache so every tool reads the mirror's files from memory.
cat "$W/mirror/$REPO/$COMMIT"/* > /dev/null

# timer runs a command and writes "wall user sys maxrss_kib" of it and its
# children to $W/time.
TIMER='import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], "w"))
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %.3f %.3f %d" % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss))
sys.exit(rc)'
ROWS=$W/runs.tsv
measure() { # repeat label workers command...
  local rep=$1 label=$2 workers=$3 load; shift 3
  read -r load _ < /proc/loadavg
  python3 -c "$TIMER" "$W/err" "$@" > "$W/time" || { echo "bench-fetch: $label failed:" >&2; cat "$W/err" >&2; exit 1; }
  read -r wall user sys rss < "$W/time"
  awk -v r="$rep" -v l="$label" -v w="$workers" -v t="$wall" -v u="$user" -v s="$sys" -v m="$rss" -v b="$TOTAL" -v ld="$load" \
    'BEGIN { printf "%s\t%s\t%s\t%.2f\t%.0f\t%.2f\t%.0f\t%s\n", r, l, w, t, b/t/1e6, (u+s)/(b/1e9), m/1024, ld }' | tee -a "$ROWS"
}
clean() { rm -rf "$W/out" "$W/root" "$W/cache"; sync; mkdir -p "$W/out"; }

urls=()
for i in $(seq 1 "$FILES"); do urls+=("$EP/$REPO/resolve/$COMMIT/model-$i.safetensors"); done
cat > "$W/tools.sh" <<SH
W='$W'; EP='$EP'; REPO='$REPO'; COMMIT='$COMMIT'; DRAMA='$DRAMA'; PYLIB='$PYLIB'; ROOT='$ROOT'
DRAMA_BEFORE='${DRAMA_BEFORE:-}'
$(declare -p urls)
curl_single() { for u in "\${urls[@]}"; do curl -sfL -o "\$W/out/\${u##*/}" "\$u"; done; }
curl_parallel() {
  local args=()
  for u in "\${urls[@]}"; do args+=(-o "\$W/out/\${u##*/}" "\$u"); done
  curl -sfL --parallel --parallel-max 8 "\${args[@]}"
}
hf() {
  PYTHONPATH="\$PYLIB" HF_HUB_DISABLE_XET=1 HF_CALL_FILE="\$W/hf-call" \
    python3 "\$ROOT/scripts/bench-fetch-hf.py" "\$EP" "\$REPO" "\$COMMIT" "\$W/out/hf" 8
}
drama_fetch() { # workers [binary]
  HF_HUB_CACHE="\$W/cache" "\${2:-\$DRAMA}" fetch --json --pins "\$W/pins.json" --root "\$W/root" \\
    --endpoint "\$EP" --accept-license --workers "\$1" > "\$W/events.ndjson"
}
SH
run_tool() { # repeat tool
  local rep=$1 tool=$2; clean
  case $tool in
    curl-single) measure "$rep" curl-single 1 bash -c ". '$W/tools.sh'; curl_single" ;;
    curl-parallel) measure "$rep" curl-parallel "$FILES" bash -c ". '$W/tools.sh'; curl_parallel" ;;
    curl-parallel+sync) measure "$rep" curl-parallel+sync "$FILES" bash -c ". '$W/tools.sh'; curl_parallel && sync \"\$W\"/out/*" ;;
    hf) measure "$rep" hf 8 bash -c ". '$W/tools.sh'; hf"
      # The same run timed inside Python, the interpreter's start and the
      # import of huggingface_hub left out (no CPU or memory figures).
      read -r load _ < /proc/loadavg
      awk -v r="$rep" -v t="$(cat "$W/hf-call")" -v b="$TOTAL" -v ld="$load" \
        'BEGIN { printf "%s\thf-in-call\t8\t%.2f\t%.0f\t0\t0\t%s\n", r, t, b/t/1e6, ld }' | tee -a "$ROWS" ;;
    hf+sync) measure "$rep" hf+sync 8 bash -c ". '$W/tools.sh'; hf && sync \"\$W\"/out/hf/models--*/blobs/*" ;;
    drama-*) local n=${tool##*-} label=drama bin=
      case $tool in drama-before-*) label=drama-before bin=\$DRAMA_BEFORE ;; esac
      measure "$rep" "$label" "$n" bash -c ". '$W/tools.sh'; drama_fetch $n $bin"
      local lag streams
      lag=$(grep '"verified"' "$W/events.ndjson" | sed -n 's/.*"verify_lag_ns":\([0-9]*\).*/\1/p' | sort -g | tail -1 || true)
      streams=$(grep '"workers"' "$W/events.ndjson" | sed -n 's/.*"workers":\([0-9]*\).*/\1/p' | tr '\n' ' ' || true)
      printf '# repeat %s: %s workers=%s: max last-byte-to-verified %s ms; stream changes: %s\n' \
        "$rep" "$label" "$n" "$(( ${lag:-0} / 1000000 ))" "${streams:-none}" ;;
  esac
}

tools=()
has curl && tools+=(curl-single curl-parallel curl-parallel+sync)
has hf && tools+=(hf hf+sync)
for n in $WORKERS; do
  tools+=("drama-$n")
  if [ -n "${DRAMA_BEFORE:-}" ]; then tools+=("drama-before-$n"); fi
done
printf '# %s; %s x %s MiB; mirror flags: %s; %s cores; uptime:%s\n' "$(date -u +%FT%TZ)" "$FILES" "$SIZE_MIB" "${MIRROR_FLAGS:-none}" "$(nproc)" "$(uptime | sed 's/.*load/ load/')"
printf 'repeat\ttool\tworkers\tseconds\tMB/s\tcpu_s_per_GB\tpeak_rss_MiB\tload1\n'
for r in $(seq 1 "$REPEAT"); do
  k=$(( (r - 1) % ${#tools[@]} )) # rotate the order each repeat
  for t in "${tools[@]:k}" "${tools[@]:0:k}"; do run_tool "$r" "$t"; done
done

# Medians over the repeats, and each drama row against the peers.
summary() {
  awk -F'\t' '
    { key = $2 "\t" $3; if (!(key in n)) order[++k] = key
      n[key]++; mbs[key, n[key]] = $5; cpu[key, n[key]] = $6; rss[key, n[key]] = $7; ld[key] = ld[key] (ld[key] == "" ? "" : ",") $8 }
    function med(a, key, c,   i, j, v, t) {
      for (i = 1; i <= c; i++) v[i] = a[key, i]
      for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
    }
    END {
      printf "tool\tworkers\tMB/s median\t[runs]\tcpu_s_per_GB median\tpeak_rss_MiB median\tloads\n"
      for (i = 1; i <= k; i++) {
        key = order[i]; runs = ""
        for (j = 1; j <= n[key]; j++) runs = runs (j > 1 ? ", " : "") mbs[key, j]
        m[key] = med(mbs, key, n[key])
        printf "%s\t%.0f\t[%s]\t%.2f\t%.0f\t%s\n", key, m[key], runs, med(cpu, key, n[key]), med(rss, key, n[key]), ld[key]
      }
      for (i = 1; i <= k; i++) {
        key = order[i]; split(key, f, "\t"); if (f[1] != "drama" && f[1] != "drama-before") continue
        line = ""
        for (j = 1; j <= k; j++) { p = order[j]; split(p, g, "\t"); if (g[1] != "drama" && g[1] != "drama-before" && m[p] > 0) line = line sprintf(" %s %.2fx;", g[1], m[key] / m[p]) }
        if (line != "") printf "# %s --workers %s against (ratio of medians):%s\n", f[1], f[2], line
      }
    }' "$ROWS"
}
echo
summary | tee "$W/summary.txt"
printf '# end %s; uptime:%s\n' "$(date -u +%FT%TZ)" "$(uptime | sed 's/.*load/ load/')" | tee -a "$W/summary.txt"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" && cp "$ROWS" "$OUT/runs.tsv" && cp "$W/summary.txt" "$OUT/summary.txt"
fi
