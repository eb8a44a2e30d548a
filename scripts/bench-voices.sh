#!/usr/bin/env bash
# Benchmarks of `drama voice` against jq on the same files, in one run.
#
#   scripts/bench-voices.sh [RUNS]
#
# Makes a 256 KiB drama3-voice/1 file (eight references, 1292 frames, the
# 60 s limit; pretty-printed one code a line, padded) and 1,000 canonical
# 60 s voice files, then times, per run:
#   convert: drama voice convert (checks, codes_sha256, packing 8 -> 4,
#            transposition, canonical output) against jq transposing the
#            same file with no checks and no packing;
#   check:   drama voice check of the 1,000 files against jq parsing them.
# Wall times include process start. Also runs the Go benchmarks. Set DRAMA
# to use a drama binary already built.
set -euo pipefail
runs=${1:-20}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${DRAMA:-}" ]; then cp "$DRAMA" "$work/drama"; else go build -o "$work/drama" ./cmd/drama; fi
command -v jq >/dev/null || { echo "jq is needed as the peer" >&2; exit 1; }

python3 - "$work" <<'PY'
import hashlib, json, struct, sys
work = sys.argv[1]
def codes(frames, seed):
    return [[(seed * 7919 + cb * 104729 + t * 31) % (4096 if cb == 0 else 1024) for t in range(frames)] for cb in range(10)]
def sha(c):
    return hashlib.sha256(b"".join(struct.pack("<%dH" % len(r), *r) for r in c)).hexdigest()
refs = []
for i, f in enumerate([161, 161, 162, 162, 161, 161, 162, 162]):
    c = codes(f, i)
    refs.append({"text": "\u8a9e" * 990, "frames": f, "codes_sha256": sha(c), "vq_codes": c})
doc = json.dumps({"format": "drama3-voice/1", "id": "bench", "name": "Bench", "references": refs}, indent=2, ensure_ascii=False)
data = doc.encode()
assert len(data) < 262144, len(data)
data = data[:-1] + b" " * (262144 - len(data)) + b"}"
open(work + "/big.json", "wb").write(data)
refs = [dict(r, text="Reference passage %d, spoken plainly." % i) for i, r in enumerate(refs)]
open(work + "/one.json", "w").write(json.dumps({"format": "drama3-voice/1", "id": "one", "name": "One", "references": refs}))
PY
"$work/drama" voice convert "$work/one.json" --to cuda --id voice -o "$work/canon.json" >/dev/null
mkdir "$work/dir"
python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
canon = open(work + "/canon.json").read()
for i in range(1000):
    open("%s/dir/voice-%04d.json" % (work, i), "w").write(canon.replace('"id": "voice"', '"id": "voice-%04d"' % i, 1))
PY

ms() { # ms RUNS CMD...: mean wall milliseconds of CMD over RUNS runs
    local n=$1; shift
    local start end
    start=$(date +%s%N)
    for ((i = 0; i < n; i++)); do "$@" >/dev/null; done
    end=$(date +%s%N)
    echo $(( (end - start) / n / 1000000 ))
}
# Both write to standard output redirected to a file: -o FILE would add
# drama's fsync of the file and its directory, which jq does not do.
conv() { "$work/drama" -q voice convert "$work/big.json" --to metal --source synthetic -o - >"$work/out.json"; }
jqconv() { jq -c '{format: "drama3-http-voice/1", id, name, source: {kind: "synthetic"}, note: "",
    references: [.references[] | {text, frames, codes: (.vq_codes | transpose)}]}' "$work/big.json" >"$work/jq.json"; }
check() { "$work/drama" voice check "$work"/dir/*.json; }
jqcheck() { jq -e .format "$work"/dir/*.json; }

echo "big.json: $(wc -c <"$work/big.json") bytes; 1,000 files: $(du -sb "$work/dir" | cut -f1) bytes"
echo "process start (drama version): $(ms "$runs" "$work/drama" version) ms"
a=$(ms "$runs" conv); b=$(ms "$runs" jqconv)
echo "convert 256 KiB: drama ${a} ms, jq ${b} ms (drama/jq $(awk "BEGIN{printf \"%.2f\", $a/$b}"))"
c=$(ms 3 check); d=$(ms 3 jqcheck)
echo "check 1,000 files: drama ${c} ms, jq ${d} ms (drama/jq $(awk "BEGIN{printf \"%.2f\", $c/$d}"))"
go test -run '^$' -bench 'Convert256KiB|Parse256KiB|StdlibUnmarshal256KiB' -benchmem -count 1 ./voices | grep '^Benchmark'
go test -run '^$' -bench 'Check1000' -benchmem -count 1 -benchtime 3x ./cmd/internal/voicecmd | grep '^Benchmark'
