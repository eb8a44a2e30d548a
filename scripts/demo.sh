#!/usr/bin/env bash
# make demo: the main path of drama on a small demo root made here, with no
# network and no GPU. Each step prints what it shows.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
DEMO=${DEMO:-demo}
drama() { "$BIN/drama" "$@"; }
step() { printf '\n== %s\n' "$*"; }

rm -rf "$DEMO"
mkdir -p "$DEMO/root/full"

step "a small checkpoint-shaped demo root in $DEMO/root/full"
head -c $((32 << 20)) /dev/urandom > "$DEMO/root/full/model-00001-of-00002.safetensors"
head -c $((16 << 20)) /dev/urandom > "$DEMO/root/full/model-00002-of-00002.safetensors"
printf '{"architectures": ["Drama3"]}\n' > "$DEMO/root/full/config.json"
ls -l "$DEMO/root/full"

step "drama pins make: lock every file by size and sha256"
drama pins make "$DEMO/root/full" --local -o "$DEMO/demo.pins.json"

step "drama verify --level sha256: read and hash every byte"
drama verify --root "$DEMO/root" --pins "$DEMO/demo.pins.json" --level sha256

step "drama verify (size level): unchanged files stay sha256-verified from the record"
drama verify --root "$DEMO/root" --pins "$DEMO/demo.pins.json"

step "one flipped byte is caught (exit 3)"
shard="$DEMO/root/full/model-00002-of-00002.safetensors"
byte=$(dd if="$shard" bs=1 skip=$((8 << 20)) count=1 status=none | od -An -tu1 | tr -d ' ')
if [ "$byte" = 0 ]; then new='\001'; else new='\000'; fi
printf "$new" | dd of="$shard" bs=1 seek=$((8 << 20)) conv=notrunc status=none
set +e
drama verify --root "$DEMO/root" --pins "$DEMO/demo.pins.json" --level sha256
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
addr=127.0.0.1:${DEMO_PORT:-18793}
"$BIN/drama" serve --root "$DEMO/root" --engine-bin "$BIN/tensorfold-standin" --addr "$addr" --admission off -q &
serve_pid=$!
trap 'kill -INT $serve_pid 2>/dev/null; wait $serve_pid 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://$addr/ready" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -s "http://$addr/ready"; echo

step "drama say: speech streamed into a WAV file"
drama say "Hello from drama. [laughs] It works." --server "http://$addr" -o "$DEMO/hello.wav"
ls -l "$DEMO/hello.wav"

kill -INT $serve_pid
wait $serve_pid
trap - EXIT

printf '\ndemo: done. Built with Fish Audio.\n'
