#!/usr/bin/env bash
# make demo: the main path of drama on a small demo root made here, with no
# network and no GPU. Each step prints what it shows.
#
# The local Hub (drama mirror serve) and drama serve listen on free loopback
# ports the system picks; DEMO_HUB_PORT and DEMO_PORT choose fixed ones
# instead (a port already in use is an error at once). BIN (default bin) is
# where the binaries are, DEMO (default demo) the directory the demo makes.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
DEMO=${DEMO:-demo}
drama() { "$BIN/drama" "$@"; }
step() { printf '\n== %s\n' "$*"; }

case $DEMO in /*) ;; *) DEMO=$PWD/$DEMO ;; esac
rm -rf "$DEMO"
mkdir -p "$DEMO"
export HF_HUB_CACHE="$DEMO/hf-cache"   # keep the demo out of the real Hugging Face cache
cleanup() { for p in ${pids:-}; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
die() { echo "demo: $*" >&2; exit 1; }
# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# listen_addr VAR DEFAULT_NAME: 127.0.0.1:$VAR if set (and free), else port 0.
listen_addr() {
	local port=${!1:-}
	if [ -z "$port" ]; then echo 127.0.0.1:0; return; fi
	port_free "$port" || die "port $port ($1) is in use: stop what listens there, or pick another $1 (unset it for a free port)"
	echo "127.0.0.1:$port"
}
# wait_for PID WHAT CMD...: run CMD until it succeeds; fail at once if PID exits.
wait_for() {
	local pid=$1 what=$2; shift 2
	for _ in $(seq 1 600); do
		"$@" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; die "$what exited before it answered (see its message above)"; }
		sleep 0.05
	done
	die "$what did not answer within 30 s"
}
# json_field FILE KEY: the string value of KEY in a one-object JSON file.
json_field() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | head -n1 | sed 's/.*: *"\(.*\)"/\1/'; }

step "a small checkpoint-shaped repository, served by drama mirror serve as a local Hub"
rev=$(printf 'drama demo repository' | sha1sum | cut -c1-40)   # the demo repository's commit id
repo="$DEMO/mirror/demo/drama-demo/$rev"
mkdir -p "$repo"
head -c $((32 << 20)) /dev/urandom > "$repo/model-00001-of-00002.safetensors"
head -c $((16 << 20)) /dev/urandom > "$repo/model-00002-of-00002.safetensors"
printf '{"architectures": ["Drama3"], "max_seq_len": 40960}\n' > "$repo/config.json"
# A small byte-level BPE tokenizer laid out as Drama 3's (Qwen3's first 2000
# merges and the same added tokens; scripts/drama-tokenizer -small 2000 makes it).
cp scripts/drama-tokenizer/small-tokenizer.json "$repo/tokenizer.json"
hub_addr=$(listen_addr DEMO_HUB_PORT)
"$BIN/drama" mirror serve "$DEMO/mirror" --addr "$hub_addr" --json -q > "$DEMO/mirror.json" &
hub_pid=$!
pids="$hub_pid"
wait_for "$hub_pid" "drama mirror serve" grep -q endpoint "$DEMO/mirror.json"
endpoint=$(json_field "$DEMO/mirror.json" endpoint)
hub=${endpoint#http://}
wait_for "$hub_pid" "drama mirror serve" curl -sf "http://$hub/api/models/demo/drama-demo/tree/$rev"
echo "local Hub at $endpoint"
cat > "$DEMO/demo.pins.json" <<JSON
{"format": "drama-pins/1", "variant": "full", "repo": "demo/drama-demo", "repo_type": "model",
 "revision": "$rev", "license": "demo licence (the real variants: Fish Audio Community License v1.0)",
 "engine": "cuda", "serve_flags": [], "memory_gib": 0, "files": []}
JSON

step "drama pins lock: sizes and sha256 from the Hub's listing of the pinned commit"
drama pins lock --pins "$DEMO/demo.pins.json" --endpoint "http://$hub" -o "$DEMO/demo.lock.json"

step "drama fetch: parallel ranged chunks, hashed as they arrive, verified before they get their names"
drama fetch --root "$DEMO/root" --pins "$DEMO/demo.lock.json" --endpoint "http://$hub" --accept-license
ls -l "$DEMO/root/full"

step "drama verify --level sha256: read and hash every byte"
drama verify --root "$DEMO/root" --level sha256

step "drama verify (size level): unchanged files stay sha256-verified from the record"
drama verify --root "$DEMO/root"

step "drama tokenize: token ids from the root's tokenizer.json, and a whole prompt's length against the model's limit"
drama tokenize --root "$DEMO/root" "Hello from drama. [laughs]"
drama tokenize --root "$DEMO/root" --prompt --count "Hello from drama. [laughs] It works."

step "one flipped byte in a copy of the install is caught (exit 3)"
mkdir -p "$DEMO/copy"
cp -rL "$DEMO/root/full" "$DEMO/copy/full"
shard="$DEMO/copy/full/model-00002-of-00002.safetensors"
byte=$(dd if="$shard" bs=1 skip=$((8 << 20)) count=1 status=none | od -An -tu1 | tr -d ' ')
if [ "$byte" = 0 ]; then new='\001'; else new='\000'; fi
printf "$new" | dd of="$shard" bs=1 seek=$((8 << 20)) conv=notrunc status=none
set +e
drama verify --root "$DEMO/copy" --level sha256
code=$?
set -e
echo "exit status: $code"
[ "$code" = 3 ] || { echo "demo: expected exit status 3" >&2; exit 1; }

step "drama pth: read a torch.save archive on a pickle VM that runs nothing, fold weight norm, write safetensors"
drama pth inspect pth/testdata/wn.pth
drama pth convert pth/testdata/wn.pth --fold-weight-norm --dtype f16 -o "$DEMO/wn.safetensors"
drama st inspect "$DEMO/wn.safetensors"

step "drama voice: the CUDA voice to the Metal catalog and back, byte for byte"
drama voice show voices/testdata/cuda.json
drama voice convert voices/testdata/cuda.json --to metal --source synthetic -o "$DEMO/voice-metal.json"
drama voice convert "$DEMO/voice-metal.json" --to cuda -o "$DEMO/voice-cuda.json"
cmp voices/testdata/cuda.json "$DEMO/voice-cuda.json" && echo "round trip: identical bytes"

step "drama plugins: the engine plugins beside drama, checked by sha256"
drama plugins

step "drama serve: the speech API through the CUDA plugin, on the stand-in native engine (no GPU here)"
serve_addr=$(listen_addr DEMO_PORT)
"$BIN/drama" serve --root "$DEMO/root" --engine-bin "$BIN/tensorfold-standin" --addr "$serve_addr" -q &
serve_pid=$!
pids="$pids $serve_pid"
record="$DEMO/root/run/serve-$serve_pid.json"
wait_for "$serve_pid" "drama serve" test -s "$record"
addr=$(json_field "$record" addr)
wait_for "$serve_pid" "drama serve" curl -sf "http://$addr/ready"
curl -s "http://$addr/ready"; echo

step "drama say: speech streamed into a WAV file"
drama say "Hello from drama. [laughs] It works." --server "http://$addr" -o "$DEMO/hello.wav"
ls -l "$DEMO/hello.wav"

cleanup
pids=""

step "drama qualify: the stand-in recorded as the root's engine, then assets, end-to-end checks and a gated bench; the marker"
mkdir -p "$DEMO/root/engine"
(cd "$BIN" && sha256sum tensorfold-standin) > "$DEMO/root/engine/engine.sha256"
drama qualify --root "$DEMO/root" --engine-bin "$BIN/tensorfold-standin" --accept-native-numerics --passes 1 --warmup 1 -q
drama qualify --root "$DEMO/root" --check
drama list --root "$DEMO/root"

cleanup
trap - EXIT

cat <<EOF

demo: done. Built with Fish Audio.

next: serve the demo root yourself and speak through it:
  $BIN/drama serve --root $DEMO/root --engine-bin $BIN/tensorfold-standin &
  $BIN/drama say "Hello there." -o hello.wav
then fetch a real variant (22.3 GB) with: $BIN/drama fetch --variant nvfp4 --accept-license
EOF
