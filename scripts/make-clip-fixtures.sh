#!/bin/sh
# Makes the audio fixtures of voices/clip/testdata with espeak-ng and sox
# (Debian: apt-get install -y espeak-ng sox). Rerun to regenerate; the tests
# read the committed files and never need these tools.
#
#   speech.wav       ~13 s of espeak-ng speech, 22.05 kHz 16-bit mono: 1 s of
#                    silence, four sentences with 0.6 s pauses, 1 s of silence
#   speech.txt       the sample offsets (22.05 kHz) where each sentence starts
#                    and ends, measured by sox before the pieces were joined
#   fmt-*.wav        0.25 s of a 1 kHz sine at -6 dBFS in the codings the reader
#                    takes (stereo, 48 kHz, 24-bit, float), made by sox
#   fmt-alaw.wav     the same in A-law, a coding the reader refuses
set -eu
dir=$(cd "$(dirname "$0")/.." && pwd)/voices/clip/testdata
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dir"

i=0
for s in \
	"The quick brown fox jumps over the lazy dog, and then it rests for a while." \
	"Every recording should begin with a moment of silence before the first word." \
	"She sells sea shells by the sea shore, where the waves are calm and clear." \
	"A cloned voice needs a clear statement of consent from the person who speaks."; do
	i=$((i + 1))
	espeak-ng -v en-us -s 165 -w "$tmp/raw$i.wav" "$s"
	# strip espeak's own leading and trailing silence (amplitude under -50 dB)
	sox -D "$tmp/raw$i.wav" "$tmp/s$i.wav" silence 1 1 -50d reverse silence 1 1 -50d reverse
done
sox -D -n -r 22050 -c 1 -b 16 "$tmp/lead.wav" trim 0 1.0
sox -D -n -r 22050 -c 1 -b 16 "$tmp/pause.wav" trim 0 0.6
sox -D "$tmp/lead.wav" "$tmp/s1.wav" "$tmp/pause.wav" "$tmp/s2.wav" "$tmp/pause.wav" \
	"$tmp/s3.wav" "$tmp/pause.wav" "$tmp/s4.wav" "$tmp/lead.wav" "$dir/speech.wav"

# sentence spans in samples: lead 22050, pause 13230
pos=22050
: >"$dir/speech.txt"
for i in 1 2 3 4; do
	n=$(soxi -s "$tmp/s$i.wav")
	echo "$pos $((pos + n))" >>"$dir/speech.txt"
	pos=$((pos + n + 13230))
done

sine="synth 0.25 sine 1000 vol 0.5"
sox -D -n -r 44100 -c 1 -b 16 -e signed-integer "$dir/fmt-pcm16-44k.wav" $sine
sox -n -r 48000 -c 2 -b 24 -e signed-integer "$dir/fmt-pcm24-48k-stereo.wav" $sine
sox -D -n -r 22050 -c 1 -b 32 -e signed-integer "$dir/fmt-pcm32-22k.wav" $sine
sox -n -r 48000 -c 1 -b 32 -e floating-point "$dir/fmt-float32-48k.wav" $sine
sox -D -n -r 8000 -c 1 -e a-law "$dir/fmt-alaw.wav" $sine
