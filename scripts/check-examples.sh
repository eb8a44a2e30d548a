#!/usr/bin/env bash
# check-examples.sh: follow README.md from a fresh clone and run every example
# in it and in each command's --help, as written, in order, in a sandbox
# (its own HOME, drama root and Hugging Face cache). It ends with the list of
# examples that failed, and with those it did not find a way to run, and
# exits 1 if there are any.
#
#   scripts/check-examples.sh                 # clone, make build, run
#   CHECK_EXAMPLES_BIN=bin scripts/check-examples.sh   # reuse built binaries
#   CHECK_EXAMPLES_MAKE_TEST=1 ...            # also run `make test` (long)
#   CHECK_EXAMPLES_DIR=/tmp/x ...             # work there, and keep it
#
# No network and no GPU are used. The examples that need them run as the
# demo does, against a local Hub (`drama mirror serve` of a small demo
# repository, named by HF_ENDPOINT for the whole run) and the stand-in
# native engine (DRAMA_ENGINE_BIN=bin/tensorfold-standin for the whole run,
# in place of the GPU engine in <root>/engine/). These run with a change,
# printed beside them, marked "(needs ...)":
#   - drama fetch --variant nvfp4|full and drama pins lock --variant nvfp4
#     name the real repositories on huggingface.co (22.3 GB): they get
#     --pins with the demo repository's pins for the same variant;
#   - drama fetch --endpoint http://10.0.0.5:8080 names a mirror on another
#     host: it gets the local Hub's address instead, and --pins;
#   - drama serve --variant nvfp4 needs a GPU and the native engine in
#     <root>/engine/: DRAMA_ENGINE_BIN names the stand-in instead;
#   - drama up --dry-run on a fresh root runs at a terminal (script(1)): it
#     asks for the licence there, and without one says it cannot;
#   - drama up --accept-license (fresh root) gets --pins as drama fetch does;
#     its engine step is skipped, as it says, since DRAMA_ENGINE_BIN names one;
#   - --transcribe-url http://127.0.0.1:8080 (drama bench, drama qualify)
#     names a speech recognition server: scripts/transcribe-standin serves
#     there, hearing the words the stand-in engine's speech carries;
#   - make test runs only with CHECK_EXAMPLES_MAKE_TEST=1 (the whole suite);
#   - not run at all, and listed as such: drama engine install|show|verify
#     (the GPU engine's build: Zig, CUDA and its sources) and drama service
#     install|status|uninstall and drama up --service (they change this
#     machine's service manager; drama service install --print runs).
# Files an example names (anna.json, take1.wav, codec.pth, stats.json, ...)
# are made from the repository's test data before it runs; the steps a user
# does by hand between two examples (typing transcripts into a manifest)
# are done by the script and printed.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
work=${CHECK_EXAMPLES_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/drama-examples.XXXXXX")}
mkdir -p "$work"
ran="$work/ran.txt" failed="$work/failed.txt" skipped="$work/skipped.txt"
: > "$ran"; : > "$failed"; : > "$skipped"
pids="" hub_pid=""
# stop: end the servers the examples started (the local Hub stays).
stop() { for p in $pids; do kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=""; }
cleanup() { stop; [ -n "$hub_pid" ] && { kill -INT "$hub_pid" 2>/dev/null; wait "$hub_pid" 2>/dev/null; }; hub_pid=""; }
trap cleanup EXIT
die() { echo "check-examples: $*" >&2; exit 1; }
say() { printf '\n== %s\n' "$*"; }

# Go keeps its caches where they are (HOME changes below; nothing is fetched).
export GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE) GOPATH=$(go env GOPATH) GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local

say "a fresh clone of $src (its committed state) in $work/drama"
rm -rf "$work/drama"
git clone -q "$src" "$work/drama" || die "git clone failed"
clone=$work/drama
cd "$clone"
if [ -n "${CHECK_EXAMPLES_BIN:-}" ]; then
	bin_src=$(cd "$src" && cd "$CHECK_EXAMPLES_BIN" && pwd)
	mkdir -p bin && cp -a "$bin_src"/. bin/
else
	make build >/dev/null || die "make build failed"
fi

# The sandbox: a HOME of its own, so the default root (~/.local/share/drama)
# and the Hugging Face cache (~/.cache/huggingface/hub) are fresh.
export HOME="$work/home"
rm -rf "$HOME"; mkdir -p "$HOME"
unset DRAMA_HOME XDG_DATA_HOME HF_HOME HF_HUB_CACHE HF_ENDPOINT HF_TOKEN HF_HUB_OFFLINE DRAMA_PLUGIN_DIR DRAMA_ENGINE_BIN
export PATH="$clone/bin:$PATH"
export DRAMA_ENGINE_BIN="$clone/bin/tensorfold-standin" TENSORFOLD_STANDIN_LOAD_TIME=50ms
root="$HOME/.local/share/drama"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in 8793 8080; do
	port_free "$p" || die "port $p is in use: the examples name it (drama serve's default 127.0.0.1:8793, drama mirror serve's 8080); stop what listens there"
done

# ex WRITTEN [RUN [WHY]]: run one example in the current directory. WRITTEN
# is the example as the docs give it; RUN is what runs (WRITTEN unless the
# example needs the network or a GPU, then WHY says so).
ex() {
	local written=$1 run=${2:-$1} why=${3:-} rc
	printf '%s\n' "$written" >> "$ran"
	printf '\n$ %s\n' "$written"
	if [ "$run" != "$written" ]; then printf '  (needs %s) runs: %s\n' "$why" "$run"; fi
	(eval "$run") > "$work/out" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		tail -n 4 "$work/out" | cut -c1-160 | sed 's/^/  | /'
	else
		sed 's/^/  ! /' "$work/out" | tail -n 25
		printf '%s  [exit %d in %s]\n' "$written" "$rc" "$PWD" >> "$failed"
	fi
}

# bgex WRITTEN RUN URL [WHY]: an example that serves: start it (RUN is
# WRITTEN without its comment and its &, or with a change WHY says), wait
# until URL answers (or it exits), and keep it running until stop. Where it
# needs the GPU engine, the stand-in serves (DRAMA_ENGINE_BIN).
bgex() {
	local written=$1 run=$2 url=$3 why=${4:-}
	printf '%s\n' "$written" >> "$ran"
	printf '\n$ %s\n' "$written"
	if [ -n "$why" ]; then printf '  (needs %s) runs: %s\n' "$why" "$run"; fi
	case "$run" in *--engine-bin*) ;; *serve\ --variant*) printf '  (needs a GPU and the native engine: the stand-in serves, DRAMA_ENGINE_BIN=%s)\n' "$DRAMA_ENGINE_BIN" ;; esac
	(eval "exec $run") > "$work/bg.log" 2>&1 &
	local pid=$!
	pids="$pids $pid"
	for _ in $(seq 1 300); do
		curl -sf "$url" >/dev/null 2>&1 && { echo "  | answers at $url (pid $pid)"; return 0; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	sed 's/^/  ! /' "$work/bg.log" | tail -n 25
	printf '%s  [did not answer at %s]\n' "$written" "$url" >> "$failed"
	return 1
}

# transcriber: serve the stand-in speech recognition server where the
# --transcribe-url examples name one (127.0.0.1:8080) until stop.
transcriber() {
	printf '\n  (a speech recognition server at http://127.0.0.1:8080: scripts/transcribe-standin, hearing the stand-in engine'"'"'s words)\n'
	"$work/transcribe-standin" -addr 127.0.0.1:8080 > "$work/transcriber.log" 2>&1 &
	pids="$pids $!"
	for _ in $(seq 1 100); do port_free 8080 || return 0; sleep 0.05; done
	die "the transcriber did not start: $(cat "$work/transcriber.log")"
}

skip() { printf '%s\n' "$1" >> "$ran"; printf '%s  [%s]\n' "$1" "$2" >> "$skipped"; printf '\n$ %s\n  (not run: %s)\n' "$1" "$2"; }

# fresh NAME: a new working directory for a group of examples, with the
# files the examples name.
fresh() {
	local d="$work/ex/$1"
	rm -rf "$d"; mkdir -p "$d/voices" "$d/my-dir" "$d/repos"
	cp "$clone/voices/testdata/cuda.json" "$d/anna.json"
	cp "$clone/voices/testdata/cloned.json" "$d/clone.json"
	cp "$clone/voices/testdata/cuda.json" "$clone/voices/testdata/metal.json" "$clone/voices/testdata/cloned.json" "$d/voices/"
	cp "$clone/voices/testdata/fish/ref0.npy" "$d/ref1.npy"; cp "$clone/voices/testdata/fish/ref0.lab" "$d/ref1.lab"
	cp "$clone/voices/testdata/fish/ref1.npy" "$d/ref2.npy"; cp "$clone/voices/testdata/fish/ref1.lab" "$d/ref2.lab"
	cp "$fixtures/speech.wav" "$d/take1.wav"; cp "$fixtures/speech.flac" "$d/take2.flac"
	cp "$fixtures/speech.wav" "$d/interview.wav"; cp "$fixtures/speech.wav" "$d/robot.wav"
	cp "$clone/pth/testdata/wn.pth" "$d/codec.pth"; cp "$clone/pth/testdata/generator.pth" "$d/ckpt.pth"
	cp "$fixtures/tokenizer.json" "$d/tokenizer.json"
	cp "$fixtures/keep.json" "$fixtures/stats.json" "$d/"
	cp -r "$fixtures/bf16" "$d/bf16"
	cp "$fixtures/chapter.txt" "$d/chapter.txt"
	printf 'a file of my own\n' > "$d/my-dir/notes.txt"
	cp -r "$work/mirror/." "$d/repos/"
	cp "$work/pins/demo-full.pins.json" "$d/my.json"
	cd "$d"
}

say "test data for the examples, and a local Hub"
fixtures="$work/fixtures"
rm -rf "$fixtures"; mkdir -p "$fixtures"
cp voices/clip/testdata/speech.wav "$fixtures/speech.wav"
ffmpeg -nostdin -v error -y -i voices/clip/testdata/speech.wav "$fixtures/speech.flac" || die "ffmpeg is needed for take2.flac"
go run ./scripts/drama-tokenizer "$fixtures" >/dev/null || die "tokenizer"
go build -o "$work/transcribe-standin" ./scripts/transcribe-standin || die "transcribe-standin"
go run ./scripts/quant-synth -o "$fixtures/bf16" -layers 2 -experts 4 -hidden 256 -inter 128 -shards 2 -bf16 || die "quant-synth"
printf 'It was a bright cold day in April, and the clocks were striking thirteen.\n' > "$fixtures/chapter.txt"
echo '{"0":[0,1],"1":[0,2],"2":[1],"3":[3],"4":[0],"5":[1,2],"6":[0],"7":[3]}' > "$fixtures/keep.json"
echo '{"0":[4,3,2,1],"1":[4,3,2,1],"2":[4,3,2,1],"3":[4,3,2,1],"4":[4,3,2,1],"5":[4,3,2,1],"6":[4,3,2,1],"7":[4,3,2,1]}' > "$fixtures/stats.json"

# The demo repository: a small Qwen3-MoE-shaped checkpoint in eight shards,
# a small torch archive with weight-norm layers as codec.pth (not the codec
# itself: pth inspect says so), the Drama tokenizer layout.
rev=$(printf 'drama examples repository' | sha1sum | cut -c1-40)
repo="$work/mirror/demo/drama-examples/$rev"
rm -rf "$work/mirror"; mkdir -p "$repo"
go run ./scripts/quant-synth -o "$repo" -layers 8 -experts 4 -hidden 256 -inter 128 -shards 8 || die "quant-synth"
cp "$fixtures/tokenizer.json" "$repo/tokenizer.json"
jq -c '. + {"max_seq_len": 40960}' "$repo/config.json" > "$repo/config.tmp" && mv "$repo/config.tmp" "$repo/config.json"   # the context drama serve and tokenize read
cp pth/testdata/wn.pth "$repo/codec.pth"
drama mirror serve "$work/mirror" --addr 127.0.0.1:0 --json -q > "$work/mirror.json" 2>"$work/mirror.log" &
hub_pid=$!
for _ in $(seq 1 100); do grep -q endpoint "$work/mirror.json" 2>/dev/null && break; sleep 0.05; done
hub=$(grep -o '"endpoint": *"[^"]*"' "$work/mirror.json" | sed 's/.*: *"\(.*\)"/\1/')
[ -n "$hub" ] || die "the local Hub did not start: $(cat "$work/mirror.log")"
export HF_ENDPOINT=$hub
mkdir -p "$work/pins"
for v in full nvfp4; do
	cat > "$work/pins/demo-$v.pins.json" <<JSON
{"format": "drama-pins/1", "variant": "$v", "repo": "demo/drama-examples", "repo_type": "model",
 "revision": "$rev", "license": "demo licence (the real variants: Fish Audio Community License v1.0)",
 "engine": "cuda", "serve_flags": [], "memory_gib": 0, "files": []}
JSON
	drama pins lock --pins "$work/pins/demo-$v.pins.json" -o "$work/pins/demo-$v.lock.json" -q || die "pins lock"
done
echo "local Hub at $hub (HF_ENDPOINT); demo pins in $work/pins"
P_FULL=$work/pins/demo-full.lock.json P_NVFP4=$work/pins/demo-nvfp4.lock.json
net="the Internet (the real repository on huggingface.co)"
gpu_build="needs Zig 0.17.0, CUDA 13 and the native engine's pinned sources: drama engine install builds the GPU engine"

readme_blocks() { awk '/^```sh$/{on=1; next} /^```/{on=0} on' "$clone/README.md"; }

say "README: the first block"
cd "$clone"
ex 'make demo    # build drama and its engine plugins, then run the main path on a demo root'
# the README's second command, as it writes it (its comment lists what make test runs)
make_test=$(readme_blocks | grep -m1 '^make test ')
if [ "${CHECK_EXAMPLES_MAKE_TEST:-}" = 1 ]; then
	ex "$make_test"
else
	skip "$make_test" "the whole test suite; set CHECK_EXAMPLES_MAKE_TEST=1"
fi

say "README: install (the release archives; the linux/amd64 one unpacked into ~/.local/bin)"
cd "$clone"
ex 'make dist VERSION=1.2.3                          # dist/drama-1.2.3-OS-ARCH.tar.gz and dist/SHA256SUMS'
ex '(cd dist && sha256sum -c --ignore-missing SHA256SUMS)'
ex 'tar -xzf dist/drama-1.2.3-linux-amd64.tar.gz'
ex 'mkdir -p ~/.local/bin && cp drama-1.2.3-linux-amd64/drama* ~/.local/bin/   # drama, its plugins and their .sha256 files'
ex '~/.local/bin/drama plugins'
rm -rf ~/.local/bin drama-1.2.3-linux-amd64 dist

say "README: from nothing to speech"
fresh nothing-to-speech
ex 'drama up --variant nvfp4 --dry-run               # the steps, the bytes and time each needs, what cannot work here' \
	"script -qec 'drama up --variant nvfp4 --dry-run' /dev/null" "a terminal (script(1) gives one): with none, the licence not yet accepted cannot be asked and is refused, as the run itself would"
bgex 'drama up --variant nvfp4 --accept-license        # fetch, verify, build the engine, serve; prints a drama say line' \
	"drama up --variant nvfp4 --accept-license --pins $P_NVFP4" http://127.0.0.1:8793/ready "$net"
stop
ex 'drama fetch --variant nvfp4 --accept-license   # 22.3 GB, verified while it arrives' \
	"drama fetch --variant nvfp4 --accept-license --pins $P_NVFP4" "$net"
ex 'drama verify --variant nvfp4 --level sha256'
skip 'drama engine install --variant nvfp4           # builds the native engine: Zig 0.17.0, CUDA 13' "$gpu_build"
echo "  (in its place: the stand-in's sha256 recorded in <root>/engine/engine.sha256, as for an engine put there by hand)"
mkdir -p "$root/engine" && (cd "$clone/bin" && sha256sum tensorfold-standin) > "$root/engine/engine.sha256"
bgex 'drama serve --variant nvfp4 &' 'drama serve --variant nvfp4' http://127.0.0.1:8793/ready
ex 'drama say "Hello there. [laughs]" -o hello.wav'
stop

say "README: drama fetch"
fresh fetch
ex 'drama fetch --variant nvfp4 --accept-license' "drama fetch --variant nvfp4 --accept-license --pins $P_NVFP4" "$net"
ex 'drama fetch --endpoint http://10.0.0.5:8080 --workers 16   # from a drama mirror' \
	"drama fetch --endpoint $hub --workers 16 --pins $P_FULL --accept-license" "a drama mirror on another host; here the local Hub"
ex 'HF_HUB_OFFLINE=1 drama fetch --variant full                # no network: present and verified, or an error' \
	"HF_HUB_OFFLINE=1 drama fetch --variant full --pins $P_FULL" "$net, for the full variant's listing"

say "README: drama verify"
fresh verify
ex 'drama verify --variant nvfp4                 # sizes; files a full check vouched for stay sha256-verified'
ex 'drama verify --level sha256 --json           # read and hash every byte, one file per core'
cd "$clone"
ex 'drama verify --root ./demo/root --pins demo/demo.lock.json   # the root make demo made'

say "README: drama pins"
fresh pins
ex 'drama pins show --variant nvfp4'
ex 'drama pins lock --variant nvfp4               # fill sizes and sha256 from the Hub'"'"'s listing of the pinned commit' \
	"drama pins lock --variant nvfp4 --pins $work/pins/demo-nvfp4.pins.json" "$net"
ex 'drama pins diff full nvfp4                    # which files the variants share'
ex 'drama pins make ./my-dir --local -o my.pins.json'

say "README: drama tokenize"
cd "$clone"
ex 'drama tokenize --root demo/root "[laughs] Hello there!"       # after make demo: its root carries a small tokenizer'
fresh tokenize
ex 'drama tokenize --prompt --count "Read this aloud."             # the installed variant'"'"'s tokenizer.json and config.json'

say "README: drama pth"
fresh pth
ex 'drama pth inspect codec.pth                   # format, tensors, dtypes; recognises the Drama codec and its geometry'
ex 'drama pth convert codec.pth -o codec.safetensors --fold-weight-norm --dtype f16'

say "README: drama quantize and drama st"
fresh quantize
ln -s "$root/full" full
ex 'drama st inspect ~/.local/share/drama/full'
ex 'drama quantize ./full -o ./nvfp4 --to nvfp4 --router-stats stats.json --coverage 0.9 --check'

say "README: drama voice and drama encode"
fresh voice
ex 'drama voice check voices/*.json'
ex 'drama voice convert anna.json --to metal --source consented -o catalog/anna.json'
ex 'drama voice prepare take1.wav take2.flac -o anna-prep'
echo "  (by hand, as the prepare step says: each reference's transcript typed into anna-prep/manifest.json)"
jq '.references |= map(.text = "Hello there, this is a recording.")' anna-prep/manifest.json > anna-prep/m.json && mv anna-prep/m.json anna-prep/manifest.json
ex 'drama encode --name Anna --manifest anna-prep --consent-who "Anna Example" --consent-statement "I agree that my voice is cloned for the studio'"'"'s audiobooks."'

say "README: drama serve and drama say"
fresh serve
bgex 'drama serve --variant nvfp4                               # 127.0.0.1:8793; OpenAI SDKs: base_url=http://127.0.0.1:8793/v1' \
	'drama serve --variant nvfp4' http://127.0.0.1:8793/ready
stop
cd "$clone"
bgex 'drama serve --engine-bin ./bin/tensorfold-standin         # the stand-in engine: try drama without a GPU' \
	'drama serve --engine-bin ./bin/tensorfold-standin' http://127.0.0.1:8793/ready
fresh serve-say
ex 'drama say "Hello there." -o hello.wav'
stop

# --- each command's help examples, in the order drama lists its commands.
help_examples() {
	local c s
	for c in $(drama __complete "" 2>/dev/null | grep -v '^:' | cut -f1); do
		[ "$c" = help ] || [ "$c" = completion ] && continue
		drama "$c" --help 2>/dev/null | sed -n '/^Examples:/,/^[A-Z]/p' | grep '^ *\$ ' | sed 's/^ *\$ //'
		for s in $(drama __complete "$c" "" 2>/dev/null | grep -v '^:' | cut -f1 | grep -v -- '^-'); do
			drama "$c" "$s" --help 2>/dev/null | sed -n '/^Examples:/,/^[A-Z]/p' | grep '^ *\$ ' | sed 's/^ *\$ //'
		done
	done
}

say "help: drama encode"
fresh encode-help
drama voice prepare take1.wav -o anna-prep -q >/dev/null
jq '.references |= map(.text = "Hello there, this is a recording.")' anna-prep/manifest.json > anna-prep/m.json && mv anna-prep/m.json anna-prep/manifest.json
rm -f "$root/voices/anna.json"   # the README's encode made the same voice id
ex 'drama encode --name Anna --manifest anna-prep --consent-who "Anna Example" --consent-statement "I, Anna Example, agree that my voice is cloned for the studio'"'"'s audiobooks."'
ex 'drama encode --name Me --source self --consent-who "Sam" --consent-statement "My own voice." take1.wav:"Hello, this is my voice."'
ex 'drama encode --name Robot --source synthetic robot.wav:"Beep. I am not a person." --format drama3-voice/1 -o robot.json'

say "help: drama fetch"
fresh fetch-help
ex 'drama fetch --variant nvfp4 --accept-license' "drama fetch --variant nvfp4 --accept-license --pins $P_NVFP4" "$net"
ex 'drama fetch --endpoint http://10.0.0.5:8080 --workers 16' "drama fetch --endpoint $hub --workers 16 --pins $P_FULL --accept-license" "a drama mirror on another host; here the local Hub"
ex 'HF_HUB_OFFLINE=1 drama fetch --variant full' "HF_HUB_OFFLINE=1 drama fetch --variant full --pins $P_FULL" "$net, for the full variant's listing"

say "help: drama mirror serve"
fresh mirror-help
bgex 'drama mirror serve --cache --addr 0.0.0.0:8080' 'drama mirror serve --cache --addr 0.0.0.0:8080' "http://127.0.0.1:8080/api/models/demo/drama-examples/tree/$rev"
stop
bgex 'drama mirror serve ./repos --fault drop@3x2 --fault 503x4' 'drama mirror serve ./repos --fault drop@3x2 --fault 503x4' "http://127.0.0.1:8080/api/models/demo/drama-examples/revision/$rev"
stop

say "help: drama pins"
fresh pins-help
ex 'drama pins diff full nvfp4'
ex 'drama pins lock --variant nvfp4' "drama pins lock --variant nvfp4 --pins $work/pins/demo-nvfp4.pins.json" "$net"
ex 'drama pins lock --pins my.json --output -'
cp -rL "$root/nvfp4" my-quant
rm -rf my-quant/.drama
ex 'drama pins make ./my-quant --variant nvfp4 -o my-quant.pins.json'
ex 'drama pins show --variant nvfp4'
drama pins make ./my-dir --local -o my.pins.json -q
ex 'drama pins show --pins my.pins.json --json'

say "help: drama plugins"
cd "$clone"
ex 'drama plugins'
ex 'drama plugins --plugin-dir ./bin --json'

say "help: drama pth"
fresh pth-help
ex 'drama pth convert codec.pth -o codec.safetensors'
ex 'drama pth convert codec.pth -o codec-f16.safetensors --fold-weight-norm --dtype f16'
rm -f codec.safetensors
ex "drama pth convert ckpt.pth -o codec.safetensors --drop '^discriminator\\.'"
ex 'drama pth inspect codec.pth'
ex 'drama pth inspect codec.pth --verify --json | jq .codec.geometry'

say "help: drama quantize"
fresh quantize-help
ln -s "$root/full" full
ex 'drama quantize ~/.local/share/drama/full -o ./nvfp4 --to nvfp4 --experts keep.json --check --max-nmse 0.02'
ex 'drama quantize ./full -o ./pruned --router-stats stats.json --coverage 0.9'
ex 'drama quantize ./bf16 -o ./fp8 --to fp8-block'
ex 'drama quantize ./nvfp4 -o ./back --dequantize --json'

say "help: drama serve and drama say (on the stand-in engine)"
fresh serve-help
bgex 'drama serve --variant nvfp4' 'drama serve --variant nvfp4' http://127.0.0.1:8793/ready
stop
cd "$clone"
bgex 'drama serve --engine-bin ./bin/tensorfold-standin     # no GPU: the stand-in engine' \
	'drama serve --engine-bin ./bin/tensorfold-standin' http://127.0.0.1:8793/ready
fresh say-help
ex "curl -s --fail localhost:8793/v1/audio/speech -H 'Content-Type: application/json' -d '{\"input\":\"Hello.\"}' -o hello.wav"
rm -f hello.wav
ex 'drama say "Hello there." -o hello.wav'
ex 'echo "Read from a pipe." | drama say - -o pipe.wav --force'
ex "drama say \"[whispering] I'm fine.\" --server 127.0.0.1:8793 -o whisper.wav --force"
ex "printf 'First words. Then more.\\n' | drama say --live - -o live.wav --force"
ex "printf 'Spoken as it comes.\\n' | drama say --live - -o - --format pcm > live.pcm"
ex 'test -s live.wav && test -s live.pcm'
stop
cd "$clone"
bgex 'drama serve --engine-bin ./bin/tensorfold-standin --gpus 0,1                     # an engine per GPU, one queue' \
	'drama serve --engine-bin ./bin/tensorfold-standin --gpus 0,1' http://127.0.0.1:8793/ready
stop
bgex 'drama serve --engine-bin ./bin/tensorfold-standin --gpus 0 --engines-per-gpu 3   # three engines on GPU 0' \
	'drama serve --engine-bin ./bin/tensorfold-standin --gpus 0 --engines-per-gpu 3' http://127.0.0.1:8793/ready
stop

say "help: drama st inspect"
fresh st-help
cp "$root/full/model-00001-of-00008.safetensors" .
cp -rL "$work/ex/quantize-help/nvfp4" nvfp4
ex 'drama st inspect ~/.local/share/drama/full'
ex 'drama st inspect model-00001-of-00008.safetensors --tensors'
ex 'drama st inspect ./nvfp4 --by role'
ex 'drama st inspect ./nvfp4 --json'

say "help: drama tokenize"
fresh tokenize-help
ex 'drama tokenize "[laughs] Hello there!"'
ex 'drama tokenize --tokenizer ./tokenizer.json --json "Hi" "<|im_start|>user"'
ex 'drama tokenize --count - < chapter.txt'
cp anna.json voices/anna.json
ex 'drama tokenize --prompt --voice voices/anna.json --count "Read this aloud."'

say "help: drama verify"
fresh verify-help
ex 'drama verify --variant nvfp4'
ex 'drama verify --level sha256 --json'
cd "$clone"
ex 'drama verify --root ./demo/root --pins demo/demo.lock.json   # after make demo'

say "help: drama voice"
fresh voice-help
ex 'drama voice check voices/*.json'
ex 'drama voice check anna.json --tokenizer tokenizer.json --json'
ex 'drama voice convert anna.json --to metal --source consented -o catalog/anna.json'
ex 'drama voice convert clone.json --to drama3-voice/1 -o voices/anna.json'
ex 'drama voice convert ref1.npy ref2.npy --id anna-fish --name "Anna (Fish references)" --to cuda -o voices/anna-fish.json'
ex 'drama voice list ~/.local/share/drama/voices'
ex 'drama voice list catalog --json'
ex 'drama voice prepare take1.wav take2.flac -o anna-prep'
ex 'drama voice prepare interview.wav -o prep --force'
ex 'drama voice prepare take1.wav -o prep --replace --json'
ex 'drama voice show anna.json'
ex 'drama voice show anna.json --json'

say "help and README: drama engine (builds the GPU engine)"
for e in 'drama engine install --variant full' 'drama engine install --variant nvfp4 --source /srv/mirror --zig /opt/zig-0.17.0/zig --nvcc /usr/local/cuda/bin/nvcc' \
	"drama engine install --sources engine-sources.json --source mirror --patch voice-cache.patch=\$(sha256sum voice-cache.patch | cut -d' ' -f1) --head \$(cat voice-cache.head)" \
	'drama engine show' 'drama engine show --variant full --json' 'drama engine verify' 'drama engine verify --variant full --json'; do
	skip "$e" "$gpu_build; show and verify read what it installed"
done

say "help and README: drama service"
fresh service
ex 'drama service install --print --grace 30s'
for e in 'drama service install --user --variant nvfp4' 'drama service status' 'drama service uninstall --user' \
	'sudo drama service install --system --root /srv/drama --variant nvfp4'; do
	skip "$e" "installs into this machine's service manager (systemd or launchd), outside the sandbox; --print above shows the unit"
done

say "help and README: drama mirror serve with a CDN listener"
fresh mirror-cdn
bgex 'drama mirror serve --cache --addr 0.0.0.0:8080 --cdn-addr 0.0.0.0:8081' 'drama mirror serve --cache --addr 0.0.0.0:8080 --cdn-addr 0.0.0.0:8081' \
	"http://127.0.0.1:8080/api/models/demo/drama-examples/revision/$rev"
stop

say "help: drama serve --keep-alive"
fresh serve-keepalive
bgex 'drama serve --keep-alive 10m                           # unload the engine after 10 minutes without a request' \
	'drama serve --keep-alive 10m' http://127.0.0.1:8793/ready
stop

say "help: drama serve beyond loopback, with API keys"
fresh serve-remote
echo "  (by hand, as the comment says: keys.txt with a key, a name and a scope, chmod 600)"
printf '%s examples admin\n' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" > keys.txt && chmod 600 keys.txt
bgex 'drama serve --addr 0.0.0.0:8793 --allow-remote --api-key-file keys.txt   # keys.txt: KEY NAME SCOPE a line, chmod 600' \
	'drama serve --addr 0.0.0.0:8793 --allow-remote --api-key-file keys.txt' http://127.0.0.1:8793/ready
ex "curl -s -o /dev/null -w '%{http_code}\\n' localhost:8793/v1/models | grep -qx 401 && curl -sf localhost:8793/v1/models -H \"Authorization: Bearer \$(cut -d' ' -f1 keys.txt)\" >/dev/null"
stop

say "help: drama serve with a voice alias, and curl of a whole WAV"
fresh serve-alias
bgex 'drama serve --voice-alias alloy=default                # OpenAI'"'"'s "alloy" speaks the built-in voice' \
	'drama serve --voice-alias alloy=default' http://127.0.0.1:8793/ready
ex "curl -s --fail localhost:8793/v1/audio/speech -H 'Content-Type: application/json' -d '{\"input\":\"Hello.\",\"stream\":false}' -o hello.wav"

say "help and README: drama bench (against the drama serve running on this root)"
ex 'drama status'
ex 'drama status                     # each drama serve on this root: ready or why not, queue depth, uptime, logs'
ex 'drama status --json'
ex 'drama bench --out bench-a'
ex 'drama bench --server http://127.0.0.1:8793 --passes 1 --out bench-b'
transcriber
ex 'drama bench --transcribe-url http://127.0.0.1:8080 --out bench-c'
ex 'drama stop                       # SIGTERM to the root'"'"'s drama serve; waits while it finishes what is in flight'
stop
cp bench-a/report.json old.json; cp bench-b/report.json new.json
ex 'drama bench compare bench-a/report.json bench-b/report.json'
ex 'drama bench compare old.json new.json --json'
cd "$clone"
ex 'drama bench --start --passes 1 -- --engine-bin bin/tensorfold-standin --admission off'
fresh bench-readme
bgex 'drama serve --variant nvfp4' 'drama serve --variant nvfp4' http://127.0.0.1:8793/ready
ex 'drama bench --out bench-a                                  # against the drama serve running on this root'
drama bench --passes 1 --out bench-b -q >/dev/null 2>&1
stop
ex 'drama bench compare bench-a/report.json bench-b/report.json'

say "help and README: drama qualify (on the stand-in engine)"
fresh qualify
ex 'drama qualify --variant nvfp4 --accept-native-numerics'
ex 'drama qualify --variant nvfp4 --accept-native-numerics     # writes <root>/.drama/qualified-nvfp4.json when every check passes'
transcriber
ex 'drama qualify --variant nvfp4 --transcribe-url http://127.0.0.1:8080 --accept-native-numerics'
ex 'drama qualify --variant nvfp4 --transcribe-url http://127.0.0.1:8080 --accept-native-numerics  # and the replies'"'"' word error rate is at most 5 %'
stop
ex 'drama qualify --check --variant nvfp4'
bgex 'drama serve --variant nvfp4 --require-qualified            # speech answers 503 until that marker holds; GET /v1/models says "qualified"' \
	'drama serve --variant nvfp4 --require-qualified' http://127.0.0.1:8793/ready
stop
bgex 'drama up --variant nvfp4 --qualify --accept-native-numerics --require-qualified' \
	'drama up --variant nvfp4 --qualify --accept-native-numerics --require-qualified' http://127.0.0.1:8793/ready
stop
bgex 'drama up --variant nvfp4 --accept-license' 'drama up --variant nvfp4 --accept-license' http://127.0.0.1:8793/ready
stop
ex 'drama up --variant nvfp4 --dry-run'
skip 'drama up --variant nvfp4 --accept-license --service' "installs drama serve into this machine's service manager (systemd or launchd), outside the sandbox; drama service install --print shows the unit"
ex 'drama qualify --variant full --memory-gib 48 --accept-native-numerics -- --admission external'

say "help: drama stop (nothing runs on these roots now)"
ex 'drama stop'
cd "$clone"
ex 'drama stop nvfp4 --root ./demo/root'

say "help and README: drama list, doctor, config show"
fresh everyday
ex 'drama list'
ex 'drama list                       # VARIANT SIZE SHARED CACHE VERIFIED ENGINE QUALIFIED VOICES CLONED'
ex 'drama list --json'
# With DRAMA_ENGINE_BIN naming the stand-in, which needs no GPU, doctor
# passes here as written.
ex 'drama doctor'
ex 'drama doctor                     # versions, paths, plugins and checksums, engine, GPU or Metal, memory, disk, ffmpeg'
ex 'drama doctor --variant nvfp4 --json'
ex 'drama config show'
ex 'drama config show                # each setting, its value, and flag / env NAME / file PATH:LINE / default'
ex 'drama config show --json'

say "help and README: drama rm (last: it removes the nvfp4 variant)"
ex 'drama rm nvfp4 --dry-run'
ex 'drama rm nvfp4 --dry-run         # what would go, and what is kept because something else uses it'
ex 'drama rm nvfp4 --json'
echo "  (nvfp4 fetched again for the next example)"
drama fetch --variant nvfp4 --pins "$P_NVFP4" --accept-license -q >/dev/null 2>&1
ex 'drama rm nvfp4'

cleanup
trap - EXIT

# Every example of the README and of each command's help was run?
cd "$clone"
{ readme_blocks; help_examples; } | sed 's/[[:space:]]*$//' | grep -v -e '^#' -e '^$' | sort -u > "$work/examples.txt"
sed 's/[[:space:]]*$//' "$ran" | sort -u > "$work/ran-sorted.txt"
comm -23 "$work/examples.txt" "$work/ran-sorted.txt" > "$work/missing.txt"

say "summary"
echo "examples: $(wc -l < "$work/examples.txt") in README.md and the help; run: $(wc -l < "$work/ran-sorted.txt")"
if [ -s "$skipped" ]; then echo "not run:"; sed 's/^/  /' "$skipped"; fi
status=0
if [ -s "$work/missing.txt" ]; then echo "examples this script does not run (add them):"; sed 's/^/  /' "$work/missing.txt"; status=1; fi
if [ -s "$failed" ]; then echo "failed:"; sed 's/^/  /' "$failed"; status=1; fi
if [ "$status" = 0 ]; then
	echo "every example ran without an error"
	[ -z "${CHECK_EXAMPLES_DIR:-}" ] && rm -rf "$work"
else
	echo "the sandbox is kept for a look: $work"
fi
exit "$status"
