// Fish Audio's own TypeScript SDK (npm fish-audio) against drama serve.
//
//   node scripts/conformance/fish-sdk.mjs BASE_URL CLIP1 CLIP2 CLIP3
//   node scripts/conformance/fish-sdk.mjs BASE_URL bench N   # live first-audio timings
//
// BASE_URL is drama serve's root (http://127.0.0.1:PORT: the SDK adds
// /v1/tts, /v1/tts/live and /model). CLIP1 to CLIP3 are WAV recordings of
// speech (10 s or more in all), for a clone and for inline references. The checks expect the
// stand-in native engine with its stand-in codec (cloning works), paced so
// that a synthesis takes a while (TENSORFOLD_STANDIN_RTF), and ffmpeg on
// drama serve's PATH. The key is $DRAMA_API_KEY (an admin key of the
// server): then a wrong key's 401 is checked too. Each check prints one
// line; the first failure exits with status 1 and says what was wrong.
import { readFileSync } from "node:fs";
import { FishAudioClient, FishAudioError, RealtimeEvents } from "fish-audio";

const [baseUrl, ...clips] = process.argv.slice(2);
if (!baseUrl || (clips.length !== 3 && clips[0] !== "bench")) {
  console.error("usage: fish-sdk.mjs BASE_URL CLIP1 CLIP2 CLIP3");
  process.exit(2);
}
const apiKey = process.env.DRAMA_API_KEY || "not-checked";
const client = new FishAudioClient({ apiKey, baseUrl });
const consent = { "X-Drama-Consent-Who": "The Speaker", "X-Drama-Consent-Statement": "I agree that my voice is cloned for this test." };
const opts = (headers = {}) => ({ maxRetries: 0, headers });

function fail(msg) {
  console.error("FAIL " + msg);
  process.exit(1);
}
function ok(name, detail = "") {
  console.log("ok   " + name + (detail ? ": " + detail : ""));
}
function check(cond, msg) {
  if (!cond) fail(msg);
}

// read collects a convert's stream.
async function read(stream) {
  const parts = [];
  for await (const chunk of stream) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

async function convert(request, headers) {
  return read(await client.textToSpeech.convert(request, "s1", opts(headers)));
}

// refused runs fn, which must throw the SDK's error of status.
async function refused(name, status, fn, words) {
  try {
    await fn();
  } catch (e) {
    check(e instanceof FishAudioError, `${name}: want a FishAudioError, got ${e}`);
    check(e.statusCode === status, `${name}: status ${e.statusCode}, want ${status}: ${e.message}`);
    if (status === 422) check(e.constructor.name === "UnprocessableEntityError", `${name}: ${e.constructor.name}, want UnprocessableEntityError`);
    const body = JSON.stringify(e.body);
    for (const w of words) check(body.includes(w), `${name}: the reply ${body} does not say ${w}`);
    ok(name, `${status} ${e.body?.error?.message ?? body}`);
    return;
  }
  fail(name + ": no error");
}

const text = "Hello from Fish Audio's SDK.";

async function checks() {
  // convert in every format
  const wav = await convert({ text, format: "wav" });
  check(wav.subarray(0, 4).toString() === "RIFF" && wav.readUInt32LE(24) === 44100 && wav.length > 44, "wav: not a 44.1 kHz WAV");
  ok("convert wav", wav.length + " bytes");
  const pcm = await convert({ text, format: "pcm" });
  check(pcm.equals(wav.subarray(44)), `pcm: ${pcm.length} bytes, not the WAV's samples`);
  ok("convert pcm", "the WAV's samples");
  const mp3 = await convert({ text, format: "mp3", mp3_bitrate: 64 });
  check(mp3.subarray(0, 3).toString() === "ID3" || (mp3[0] === 0xff && (mp3[1] & 0xe0) === 0xe0), "mp3: not an MP3 stream");
  ok("convert mp3 (64 kbit/s)", mp3.length + " bytes");
  const dflt = await convert({ text });
  check(dflt.subarray(0, 3).toString() === "ID3" || (dflt[0] === 0xff && (dflt[1] & 0xe0) === 0xe0), "no format: want Fish's default, mp3");
  ok("convert without format", "mp3, as Fish's default");
  const opus = await convert({ text, format: "opus", opus_bitrate: 32 });
  check(opus.subarray(0, 4).toString() === "OggS", "opus: not an Ogg stream");
  ok("convert opus (32 kbit/s)", opus.length + " bytes");
  const wav16 = await convert({ text, format: "wav", sample_rate: 16000 });
  check(wav16.readUInt32LE(24) === 16000 && Math.abs(wav16.length - 44 - (pcm.length * 16000) / 44100) < 4096, `wav at 16 kHz: rate ${wav16.readUInt32LE(24)}, ${wav16.length} bytes`);
  ok("convert wav at sample_rate 16000", wav16.length + " bytes");
  await refused("prosody.speed 1.5", 422, () => convert({ text, format: "wav", prosody: { speed: 1.5 } }), ['"prosody.speed"']);
  await refused("sample_rate 11025", 422, () => convert({ text, format: "wav", sample_rate: 11025 }), ['"sample_rate"']);
  await refused("unknown reference_id", 404, () => convert({ text, format: "wav", reference_id: "nobody" }), ['"reference_id"', "nobody"]);

  // ivc.create: refused without consent, made with the consent headers
  const words = ["Words of take one.", "Words of take two.", "Words of take three."];
  const files = clips.map((c, i) => new File([readFileSync(c)], `take${i + 1}.wav`));
  const voice = { title: "Fish Test", voices: files, texts: words };
  await refused("ivc.create without consent", 422, () => client.voices.ivc.create(voice, opts()), ["X-Drama-Consent-Who", "X-Drama-Consent-Statement"]);
  const made = await client.voices.ivc.create(voice, opts(consent));
  check(made._id === "fish-test" && made.title === "Fish Test" && made.state === "trained" && made.type === "tts", "ivc.create: " + JSON.stringify(made));
  check(made.drama?.consent?.who === "The Speaker" && made.drama?.references === 3, "ivc.create: the consent or references are not recorded: " + JSON.stringify(made.drama));
  ok("ivc.create with consent headers", `${made._id}, ${made.drama.references} references, consent of ${made.drama.consent.who}`);

  // reference_id
  const cloned = await convert({ text, format: "pcm", reference_id: made._id });
  check(cloned.length > 0, "reference_id: no audio");
  ok("convert with reference_id", `${made._id}: ${cloned.length} bytes`);

  // inline references: consent needed, the same audio as the clone's
  const refs = clips.map((c, i) => ({ audio: readFileSync(c), text: words[i] }));
  await refused("inline references without consent", 422, () => convert({ text, format: "pcm", references: refs }), ['"references"', "X-Drama-Consent-Who"]);
  const inline = await convert({ text, format: "pcm", references: refs }, consent);
  check(inline.equals(cloned), `inline references: ${inline.length} bytes, not the audio of the clone made of the same recordings (${cloned.length})`);
  const again = await convert({ text, format: "pcm", references: refs }, consent);
  check(again.equals(inline), "inline references, again: other audio");
  ok("convert with inline references", "the clone's audio, twice");

  // search, get, update, delete
  const all = await client.voices.search({ page_size: 10, page_number: 1 }, opts());
  check(all.total >= 2 && all.items.some((m) => m._id === made._id) && all.items.some((m) => m._id === "default"), "search: " + JSON.stringify(all));
  const mine = await client.voices.search({ self: true, title: "fish" }, opts());
  check(mine.total === 1 && mine.items[0]._id === made._id, "search self+title: " + JSON.stringify(mine));
  const paged = await client.voices.search({ page_size: 1, page_number: 2 }, opts());
  check(paged.total === all.total && paged.items.length === 1 && paged.items[0]._id === all.items[1]._id, "search page 2 of size 1: " + JSON.stringify(paged));
  ok("voices.search", `${all.total} voices; self and title find ${mine.items[0]._id}; pages`);
  const got = await client.voices.get(made._id, opts());
  check(got._id === made._id && got.author?.nickname, "get: " + JSON.stringify(got));
  ok("voices.get", `${got._id} by ${got.author.nickname}`);
  const upd = await client.voices.update(made._id, { title: "Fish Renamed" }, opts());
  check(upd.status === "ok" && (await client.voices.get(made._id, opts())).title === "Fish Renamed", "update: " + JSON.stringify(upd));
  ok("voices.update", "title Fish Renamed");
  await refused("voices.update of an engine voice", 404, () => client.voices.update("default", { title: "x" }, opts()), ["default"]);
  const del = await client.voices.delete(made._id, opts());
  check(del.status === "ok", "delete: " + JSON.stringify(del));
  await refused("voices.get after delete", 404, () => client.voices.get(made._id, opts()), [made._id]);
  ok("voices.delete", made._id);

  await realtime(pcm);
  if (process.env.DRAMA_API_KEY) await wrongKey();
}

// wrongKey: a key the server does not take is the SDK's 401 on every
// route, and an error on the live session's upgrade.
async function wrongKey() {
  const wrong = new FishAudioClient({ apiKey: "wrong-0123456789abcdef0123", baseUrl });
  const words = ["invalid_api_key"];
  await refused("wrong key: convert", 401, async () => read(await wrong.textToSpeech.convert({ text, format: "wav" }, "s1", opts())), words);
  await refused("wrong key: voices.search", 401, () => wrong.voices.search({}, opts()), words);
  await refused("wrong key: ivc.create", 401, () => wrong.voices.ivc.create({ title: "x", voices: [new File([Buffer.from("RIFF")], "x.wav")] }, opts(consent)), words);
  const conn = await wrong.textToSpeech.convertRealtime({ text: "", format: "pcm" }, ["Hello."], "s1");
  const err = await new Promise((resolve) => {
    conn.on(RealtimeEvents.AUDIO_CHUNK, () => resolve(new Error("audio came")));
    conn.on(RealtimeEvents.ERROR, resolve);
    conn.on(RealtimeEvents.CLOSE, () => resolve(new Error("closed without an error")));
  });
  check(String(err?.message).includes("401"), "wrong key: convertRealtime: " + err?.message);
  ok("wrong key: convertRealtime", err.message);
}

// realtime: convertRealtime over a text stream. The stream holds back its
// last piece until the first audio has come: a server that waited for all
// the text would never send it, and the check fails after 20 s.
async function realtime() {
  const sentences = ["The first sentence of a stream of text.", "The second one comes later."];
  let firstAudio = null;
  let sentLast = null;
  let heard;
  const audioCame = new Promise((r) => (heard = r));
  async function* pieces() {
    yield "The first sentence";
    yield " of a stream of text. ";
    const waited = await Promise.race([audioCame.then(() => true), new Promise((r) => setTimeout(() => r(false), 20_000))]);
    check(waited, "convertRealtime: no audio within 20 s of the first sentence's end, while the last piece is held back");
    yield "The second one";
    sentLast = performance.now();
    yield " comes later.";
  }
  const start = performance.now();
  const conn = await client.textToSpeech.convertRealtime({ text: "", format: "pcm" }, pieces(), "s1");
  const chunks = [];
  await new Promise((resolve, reject) => {
    conn.on(RealtimeEvents.AUDIO_CHUNK, (b) => {
      if (firstAudio === null) {
        firstAudio = performance.now();
        heard();
      }
      chunks.push(Buffer.from(b));
    });
    conn.on(RealtimeEvents.ERROR, (e) => reject(new Error("convertRealtime: " + (e?.message ?? e))));
    conn.on(RealtimeEvents.CLOSE, resolve);
  }).catch((e) => fail(e.message));
  check(firstAudio !== null && sentLast !== null && firstAudio < sentLast, "convertRealtime: the first audio did not come before the last piece was sent");
  const live = Buffer.concat(chunks);
  const want = Buffer.concat(await Promise.all(sentences.map((s) => convert({ text: s, format: "pcm" }))));
  check(live.equals(want), `convertRealtime: ${live.length} bytes, not the sentences' audio in order (${want.length})`);
  ok("convertRealtime", `first audio at ${(firstAudio - start).toFixed(0)} ms, the last piece sent at ${(sentLast - start).toFixed(0)} ms; ${live.length} bytes, each sentence's audio in order`);
}

// bench times, N times each, alternating: convertRealtime's first audio
// from the moment the first sentence's end is sent (the text goes on
// later), and the first audio byte of convert for that sentence alone
// (its synthesis, first chunk). It prints the medians and p90s as JSON.
async function bench(n) {
  const sentence = "The first sentence of a stream of text.";
  const live = [];
  const whole = [];
  for (let i = 0; i < n; i++) {
    let sentAt = 0;
    let release;
    const hold = new Promise((r) => (release = r));
    async function* pieces() {
      yield "The first sentence of a stream";
      await new Promise((r) => setTimeout(r, 50));
      sentAt = performance.now();
      yield " of text. ";
      await hold;
      yield "The rest comes later.";
    }
    const conn = await client.textToSpeech.convertRealtime({ text: "", format: "pcm" }, pieces(), "s1");
    await new Promise((resolve, reject) => {
      let first = true;
      conn.on(RealtimeEvents.AUDIO_CHUNK, () => {
        if (first) {
          first = false;
          live.push(performance.now() - sentAt);
          release();
        }
      });
      conn.on(RealtimeEvents.ERROR, reject);
      conn.on(RealtimeEvents.CLOSE, resolve);
    });
    const start = performance.now();
    const stream = await client.textToSpeech.convert({ text: sentence, format: "pcm" }, "s1", opts());
    const reader = stream.getReader();
    const { value } = await reader.read();
    whole.push(performance.now() - start);
    check(value && value.length > 0, "bench: convert sent no audio");
    while (!(await reader.read()).done);
  }
  const q = (v, p) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(p * v.length))];
  console.log(JSON.stringify({ n, live_first_audio_p50_ms: q(live, 0.5), live_first_audio_p90_ms: q(live, 0.9), tts_first_audio_p50_ms: q(whole, 0.5), tts_first_audio_p90_ms: q(whole, 0.9) }));
}

(clips[0] === "bench" ? bench(Number(clips[1] ?? 20)) : checks()).then(
  () => process.exit(0),
  (e) => fail(e?.stack ?? String(e)),
);
