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

printf '\ndemo: done. Built with Fish Audio.\n'
