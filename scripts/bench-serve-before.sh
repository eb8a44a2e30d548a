#!/usr/bin/env bash
# drama serve's added time to the first audio byte (BenchmarkServeAddedFirstByte
# in cmd/drama), or another of cmd/drama's serve benchmarks, this checkout's
# binaries against those of another commit, alternating in one run: the
# before/after of a change to the serve path.
#
#   BEFORE=a79c501 scripts/bench-serve-before.sh
#   BEFORE=a79c501 ROUNDS=5 N=400 OUT=/tmp/res scripts/bench-serve-before.sh
#   BEFORE=7e14a8f BENCH=ServeAddedWhole scripts/bench-serve-before.sh
#   BEFORE=7e14a8f BENCH=ServeStalledClient BENCHTIME=3x scripts/bench-serve-before.sh
#
# Environment: BEFORE (a commit of this repository; required), ROUNDS (3),
# N (requests per round, 200), BENCH (the benchmark, ServeAddedFirstByte),
# BENCHTIME (its -test.benchtime, N times), OUT (when set, the results are
# copied there). The benchmarks are this checkout's, run on either set of
# binaries.
# Needs Go (on PATH or at /usr/local/go/bin) with the module cache; no network.
# On a host without Go, give the binaries built elsewhere: BEFORE_BIN and
# AFTER_BIN (folders holding drama, drama-engine-cuda and
# tensorfold-standin) and TEST_BIN (cmd/drama's test binary, go test -c);
# BEFORE then only names the commit in the results.
set -euo pipefail
BEFORE=${BEFORE:?set BEFORE to the commit to compare with}
ROUNDS=${ROUNDS:-3}
N=${N:-200}
BENCH=${BENCH:-ServeAddedFirstByte}
BENCHTIME=${BENCHTIME:-${N}x}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GO=$(command -v go || echo /usr/local/go/bin/go)
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-serve.XXXXXX")
trap 'rm -rf "$W"' EXIT
build() { # source dir, output dir
  (cd "$1" && "$GO" build -o "$2/drama" ./cmd/drama && "$GO" build -o "$2/drama-engine-cuda" ./plugins/cuda &&
    "$GO" build -o "$2/tensorfold-standin" ./engine/native/standin/cmd/tensorfold-standin)
}
if [ -n "${BEFORE_BIN:-}${AFTER_BIN:-}${TEST_BIN:-}" ]; then
  : "${BEFORE_BIN:?set BEFORE_BIN, AFTER_BIN and TEST_BIN together}" "${AFTER_BIN:?set AFTER_BIN too}" "${TEST_BIN:?set TEST_BIN too}"
  ln -s "$(cd "$BEFORE_BIN" && pwd)" "$W/before"
  ln -s "$(cd "$AFTER_BIN" && pwd)" "$W/after"
  cp "$TEST_BIN" "$W/drama.test"
  AFTER=${AFTER:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo given)}
else
  mkdir -p "$W/src"
  git -C "$ROOT" archive "$BEFORE" | tar -x -C "$W/src"
  build "$ROOT" "$W/after"
  build "$W/src" "$W/before"
  (cd "$ROOT/cmd/drama" && "$GO" test -c -o "$W/drama.test" .)
  AFTER=$(git -C "$ROOT" rev-parse --short HEAD)
fi
printf '# %s %s; before %s, after %s; %s cores\n' "$BENCH" "$(date -u +%FT%TZ)" "$BEFORE" "$AFTER" "$(nproc)" | tee "$W/serve.txt"
for r in $(seq 1 "$ROUNDS"); do
  for v in before after; do
    printf '# round %s %s %s load %s\n' "$r" "$v" "$(date -u +%T)" "$(cut -d' ' -f1-3 /proc/loadavg)"
    (cd "$ROOT/cmd/drama" && DRAMA_TEST_BIN="$W/$v" "$W/drama.test" -test.run '^$' \
      -test.bench "^Benchmark$BENCH\$" -test.benchtime "$BENCHTIME" | grep '^Benchmark')
  done
done | tee -a "$W/serve.txt"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$W/serve.txt" "$OUT/$BENCH-before-after.txt"; fi
