# Sourced by scripts/bench-verify.sh, bench-quantize.sh and bench-pth.sh:
# finding Go, building drama, timing, medians and the results file.
#
#   DRAMA=/path/to/drama   use this binary instead of building one
#   OUT=/some/dir          also write the results to $OUT/<bench>-<host>-<time>.txt

# bench_go prints the go command: on PATH, else /usr/local/go/bin/go.
bench_go() {
  if command -v go >/dev/null 2>&1; then
    command -v go
  elif [ -x /usr/local/go/bin/go ]; then
    echo /usr/local/go/bin/go
  else
    echo "no Go toolchain on PATH or in /usr/local/go/bin: install Go, or build drama elsewhere and pass DRAMA=/path/to/drama" >&2
    return 1
  fi
}

# bench_build DIR: builds drama into DIR/drama (or copies $DRAMA there).
bench_build() {
  if [ -n "${DRAMA:-}" ]; then
    cp "$DRAMA" "$1/drama"
  else
    (cd "$BENCH_ROOT" && "$(bench_go)" build -trimpath -o "$1/drama" ./cmd/drama)
  fi
}

# bench_results NAME: from here on, stdout also goes to $OUT/NAME-....txt.
bench_results() {
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    BENCH_FILE="$OUT/$1-$(hostname -s 2>/dev/null || echo host)-$(date -u +%Y%m%dT%H%M%SZ).txt"
    exec > >(tee "$BENCH_FILE")
  fi
  echo "# $1 on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(date -u '+%Y-%m-%d %H:%M UTC')," \
    "commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
}

bench_now() { date +%s.%N; }
bench_load() { cut -d' ' -f1 /proc/loadavg; }

# bench_median V1 V2 ...: the median (the lower middle for an even count).
bench_median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

[ -x /usr/bin/time ] || { echo "the benchmarks need GNU time at /usr/bin/time (Debian/Ubuntu: apt-get install time)" >&2; exit 1; }
