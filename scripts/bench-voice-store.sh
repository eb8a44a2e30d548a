#!/usr/bin/env bash
# How soon a clone made on one drama serve is spoken, and listed, by
# another sharing its --voice-store: two drama serve on the stand-in engine
# (bin/, from make build), each with its own root, one store. Each round
# clones a voice on host A and, from the moment of its 201, asks host B to
# speak it (once, at once: B looks a voice it does not know up in the store
# before refusing it), then deletes it on A and times B's first speech
# request for it (answered as an unknown voice); then clones another voice
# that nothing asks B for and polls B's GET /v1/voices every 10 ms until it
# lists it (what inotify or the rescan noticed), deletes it and polls until
# B's list lacks it. Twice: with inotify, and with rescans only
# (--voice-store-no-notify, --voice-store-rescan 2s, as on NFS).
#
#   make build && scripts/bench-voice-store.sh [ROUNDS]
#   BIN=DIR scripts/bench-voice-store.sh ...   binaries built before (drama,
#                                              drama-engine-cuda, tensorfold-standin)
#
# Default 10 rounds. Times in milliseconds: median and max over the rounds.
set -euo pipefail
rounds=${1:-10}
cd "$(dirname "$0")/.."
bin=${BIN:-bin}
for f in drama drama-engine-cuda tensorfold-standin; do
	[ -x "$bin/$f" ] || { echo "no $bin/$f: run make build (or give BIN=DIR)" >&2; exit 1; }
done
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import sys, wave
src = wave.open("voices/clip/testdata/speech.wav")
rate = src.getframerate()
for i, (a, b) in enumerate([(0.5, 5.85), (5.85, 10.45), (10.45, 15.33)]):
    src.setpos(int(a * rate))
    data = src.readframes(int((b - a) * rate))
    out = wave.open(f"{sys.argv[1]}/take{i + 1}.wav", "wb")
    out.setnchannels(src.getnchannels()); out.setsampwidth(src.getsampwidth()); out.setframerate(rate)
    out.writeframes(data)
PY
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME STORE FLAGS...: a drama serve on a fresh root, its URL in
# $url (not a command substitution: drama serve would hold its pipe open)
start() {
	local name=$1 store=$2 p
	shift 2
	p=$(port)
	mkdir -p "$work/$name/full"
	echo "stand-in codec" >"$work/$name/full/codec.pth"
	TENSORFOLD_STANDIN_LOAD_TIME=10ms "$bin/drama" serve --root "$work/$name" --plugin-dir "$bin" \
		--engine-bin "$bin/tensorfold-standin" --admission off --verify none --addr "127.0.0.1:$p" \
		--voice-store "$store" "$@" >"$work/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 600); do
		curl -sf "http://127.0.0.1:$p/ready" >/dev/null 2>&1 && { url="http://127.0.0.1:$p"; return; }
		sleep 0.05
	done
	echo "drama serve $name never became ready" >&2; cat "$work/$name.log" >&2; exit 1
}

echo "# bench-voice-store: $rounds rounds, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
printf '%-40s %9s %9s %9s %9s %9s %9s %9s %9s\n' mode speak_p50 speak_max list_p50 list_max \
	gone_p50 gone_max unlist_p50 unlist_max
for mode in inotify rescan; do
	store="$work/store-$mode"
	mkdir -m 700 "$store"
	flags=()
	label="inotify"
	if [ "$mode" = rescan ]; then
		flags=(--voice-store-no-notify --voice-store-rescan 2s)
		label="rescans only (--voice-store-rescan 2s)"
	fi
	start "a-$mode" "$store" "${flags[@]}"
	a=$url
	start "b-$mode" "$store" "${flags[@]}"
	b=$url
	python3 - "$a" "$b" "$rounds" "$work" "$label" <<'PY'
import json, sys, time, urllib.request, urllib.error
a, b, rounds, work, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
wavs = [open(f"{work}/take{i}.wav", "rb").read() for i in (1, 2, 3)]

def form(id):
    bound = "----drama-bench"
    parts = []
    for k, v in [("id", id), ("name", "Bench " + id), ("source", "synthetic")]:
        parts.append(f'--{bound}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    for i, wav in enumerate(wavs):
        parts.append(f'--{bound}\r\nContent-Disposition: form-data; name="clip"; filename="take{i + 1}.wav"\r\nContent-Type: audio/wav\r\n\r\n'.encode() + wav + b"\r\n")
        parts.append(f'--{bound}\r\nContent-Disposition: form-data; name="transcript"\r\n\r\nThe words of take {i + 1}.\r\n'.encode())
    parts.append(f"--{bound}--\r\n".encode())
    return b"".join(parts), "multipart/form-data; boundary=" + bound

def call(method, url, body=None, ctype=None):
    req = urllib.request.Request(url, data=body, method=method)
    if ctype:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()

def speak(url, id):
    body = json.dumps({"input": "Hello.", "voice": id, "response_format": "pcm", "stream": False}).encode()
    return call("POST", url + "/v1/audio/speech", body, "application/json")[0]

def listed(url, id):
    st, body = call("GET", url + "/v1/voices")
    return st == 200 and any(v["id"] == id for v in json.loads(body)["data"])

def until(cond, limit=30):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > limit:
            raise SystemExit("gave up after %d s" % limit)
        time.sleep(0.01)

def clone(id):
    body, ctype = form(id)
    st, msg = call("POST", a + "/v1/voices", body, ctype)
    if st != 201:
        raise SystemExit(f"clone on A: {st} {msg[:300]!r}")
    return time.monotonic()

def delete(id):
    st, _ = call("DELETE", a + "/v1/voices/" + id)
    if st != 200:
        raise SystemExit(f"delete on A: {st}")
    return time.monotonic()

speak_ms, list_ms, gone_ms, unlist_ms = [], [], [], []
for i in range(rounds):
    # speaking: B is asked at once; it looks up in the store what it lacks
    id = f"spoken{i}"
    listed(b, id)  # B's list is read (and kept a second) before the clone
    t0 = clone(id)
    st = speak(b, id)
    speak_ms.append((time.monotonic() - t0) * 1000)
    if st != 200:
        raise SystemExit(f"B speaking {id} right after its 201: {st}")
    speak(b, id)
    t0 = delete(id)
    st = speak(b, id)
    gone_ms.append((time.monotonic() - t0) * 1000)
    if st != 400:
        raise SystemExit(f"B speaking {id} right after its delete: {st}, want 400")
    # listing: nothing asks B for the voice; its list follows what
    # inotify or the rescan noticed
    id = f"listed{i}"
    t0 = clone(id)
    until(lambda: listed(b, id))
    list_ms.append((time.monotonic() - t0) * 1000)
    t0 = delete(id)
    until(lambda: not listed(b, id))
    unlist_ms.append((time.monotonic() - t0) * 1000)
    time.sleep(0.2)

def med(v):
    s = sorted(v)
    return s[(len(s) - 1) // 2]
row = [label]
for v in (speak_ms, list_ms, gone_ms, unlist_ms):
    row += ["%.0f" % med(v), "%.0f" % max(v)]
print("%-40s %9s %9s %9s %9s %9s %9s %9s %9s" % tuple(row))
PY
done
echo "# speak: the clone's 201 on A to B's 200 speaking it; gone: the delete's 200 on A to B's 400 (unknown voice) for it"
echo "# list: the 201 of a clone nothing asks B for to B's GET /v1/voices listing it; unlist: its delete's 200 to B's list without it"
