// OpenAI's own Node SDK (npm openai) against drama serve.
//
//   node scripts/conformance/openai-speech.mjs BASE_URL MODEL          # the conformance checks
//   node scripts/conformance/openai-speech.mjs BASE_URL MODEL bench N  # first-byte timings
//
// BASE_URL is drama serve's API root (http://127.0.0.1:PORT/v1). The checks
// expect the stand-in native engine (its [standin:fail] marker fails a
// synthesis after its first chunk), paced so that a synthesis takes a while
// (TENSORFOLD_STANDIN_RTF). Each check prints one line; the first failure
// exits with status 1 and says what was wrong.
import OpenAI from "openai";
import { Stream } from "openai/streaming";

const [baseURL, model, mode, count] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: openai-speech.mjs BASE_URL MODEL [bench N]");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: "not-checked", maxRetries: 0, timeout: 60_000 });

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

// timed reads a reply's body and says when its first and last bytes came.
async function timed(start, response) {
  const reader = response.body.getReader();
  let first = 0;
  const parts = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (!first && value.length > 0) first = performance.now() - start;
    parts.push(value);
  }
  return { first, total: performance.now() - start, bytes: Buffer.concat(parts) };
}

const long =
  "The default request streams: its first audio leaves as soon as the engine makes it, " +
  "long before the last sentence of this paragraph has been spoken.";

async function speak(params) {
  return client.audio.speech.create({ model, voice: "default", ...params });
}

// waitReady waits for GET /ready to answer 200: after a failed synthesis
// drama serve checks the engine before it takes the next request.
async function waitReady() {
  const url = baseURL.replace(/\/v1\/?$/, "") + "/ready";
  for (let i = 0; i < 200; i++) {
    if ((await fetch(url)).status === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  fail("drama serve did not become ready again within 10 s");
}

// mustThrow reads a body that must not end as if complete.
async function mustThrow(name, read) {
  await waitReady();
  try {
    await read();
  } catch (e) {
    ok(name, "the read threw " + (e?.constructor?.name ?? typeof e) + ": " + String(e?.message ?? e).split("\n")[0]);
    return;
  }
  fail(name + ": a synthesis that failed midway was read as complete audio");
}

async function checks() {
  // models.list and retrieve
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id);
  check(ids.includes(model), `models.list: ${JSON.stringify(ids)} lacks ${model}`);
  ok("models.list", ids.join(", "));
  const m = await client.models.retrieve(model);
  check(m.id === model && m.object === "model", "models.retrieve: " + JSON.stringify(m));
  ok("models.retrieve", m.id);
  try {
    await client.models.retrieve("tts-1");
    fail("models.retrieve(tts-1) did not throw");
  } catch (e) {
    check(e instanceof OpenAI.NotFoundError, "models.retrieve(tts-1): want NotFoundError, got " + e);
    ok("models.retrieve unknown", e.message);
  }

  // wav, pcm, whole
  const wav = Buffer.from(await (await speak({ input: "Hello from the SDK.", response_format: "wav" })).arrayBuffer());
  check(wav.subarray(0, 4).toString() === "RIFF" && wav.subarray(8, 12).toString() === "WAVE" && wav.length > 44, "wav: not a WAV");
  check(wav.readUInt32LE(24) === 44100 && wav.readUInt16LE(22) === 1 && wav.readUInt16LE(34) === 16, "wav: not mono 16-bit 44.1 kHz");
  check(wav.readUInt32LE(40) === 0xffffffff, "wav: a streamed WAV carries 0xFFFFFFFF sizes");
  ok("speech.create wav (streamed)", wav.length + " bytes");
  const pcmRes = await speak({ input: "Hello from the SDK.", response_format: "pcm" });
  check(pcmRes.headers.get("content-type") === "audio/pcm" && pcmRes.headers.get("x-sample-rate") === "44100", "pcm: headers");
  const pcm = Buffer.from(await pcmRes.arrayBuffer());
  check(pcm.length % 2 === 0 && pcm.equals(wav.subarray(44)), `pcm: ${pcm.length} bytes, not the WAV's PCM`);
  ok("speech.create pcm", pcm.length + " bytes, the same as the WAV's samples");
  const wholeRes = await speak({ input: "Hello from the SDK.", response_format: "wav", stream: false });
  const whole = Buffer.from(await wholeRes.arrayBuffer());
  check(wholeRes.headers.get("content-length") === String(whole.length) && whole.readUInt32LE(40) === whole.length - 44, "stream false: not an exactly sized WAV");
  check(whole.subarray(44).equals(pcm) && wholeRes.headers.get("x-finish-reason") === "stop", "stream false: other audio or no finish reason");
  ok('speech.create "stream": false', "Content-Length " + whole.length + ", exact WAV sizes");

  // an encoded format (drama serve encodes with ffmpeg when it is on the PATH)
  const mp3Res = await speak({ input: "Hello from the SDK.", response_format: "mp3" });
  const mp3 = Buffer.from(await mp3Res.arrayBuffer());
  check(mp3Res.headers.get("content-type") === "audio/mpeg", "mp3: content-type " + mp3Res.headers.get("content-type"));
  check(mp3.subarray(0, 3).toString() === "ID3" || (mp3[0] === 0xff && (mp3[1] & 0xe0) === 0xe0), "mp3: not an MP3 stream");
  ok("speech.create mp3", mp3.length + " bytes");

  // SSE
  const sseRes = await speak({ input: "Hello from the SDK.", response_format: "pcm", stream_format: "sse" });
  let audio = [];
  let done = null;
  for await (const ev of Stream.fromSSEResponse(sseRes, new AbortController())) {
    if (ev.type === "speech.audio.delta") audio.push(Buffer.from(ev.audio, "base64"));
    if (ev.type === "speech.audio.done") done = ev;
  }
  audio = Buffer.concat(audio);
  check(done && audio.equals(pcm), "sse: no done event, or other audio than pcm");
  const frames = Math.ceil(audio.length / 2 / 2048);
  check(done.usage && done.usage.output_tokens === frames, "sse: usage " + JSON.stringify(done.usage) + ", want output_tokens " + frames);
  ok("speech.create sse", `${audio.length} bytes, usage ${JSON.stringify(done.usage)}`);

  // the default request, streamed
  const start = performance.now();
  const t = await timed(start, await speak({ input: long, response_format: "wav" }));
  check(t.first < 0.25 * t.total, `default request: first byte at ${t.first.toFixed(1)} ms of ${t.total.toFixed(1)} ms: want it before 25 %`);
  ok("default request streamed", `first byte ${t.first.toFixed(1)} ms, last ${t.total.toFixed(1)} ms (${((100 * t.first) / t.total).toFixed(1)} %)`);

  // the built-in voice on a fresh install, and a name the operator mapped
  // (the test starts drama serve with --voice-alias nova=default)
  const voices = await (await fetch(baseURL + "/voices")).json();
  const byId = Object.fromEntries(voices.data.map((v) => [v.id, v]));
  check(byId.default?.origin === "builtin" && byId.nova?.alias_of === "default", "GET /v1/voices: " + JSON.stringify(voices.data));
  const nova = Buffer.from(await (await speak({ input: "Hello from the SDK.", response_format: "pcm", voice: "nova" })).arrayBuffer());
  check(nova.equals(pcm), "voice nova (mapped to default): other audio than the built-in voice");
  ok("built-in voice and --voice-alias", "default is " + byId.default.origin + ", nova speaks as " + byId.nova.alias_of);

  // unknown voice
  try {
    await client.audio.speech.create({ model, voice: "alloy", input: "Hi." });
    fail("voice alloy: no error");
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError, "voice alloy: want BadRequestError, got " + e);
    check(e.message.includes('"alloy"') && e.message.includes("--voice-alias alloy="), "voice alloy: message " + e.message);
    check(e.param === "voice", "voice alloy: param " + e.param);
    ok("unknown voice", e.message);
  }

  // a synthesis failing midway: the SDK's read throws
  const failing = "This one starts well and then [standin:fail] fails after its first chunk of audio.";
  await mustThrow("mid-stream failure, default request", async () => (await speak({ input: failing })).arrayBuffer());
  await mustThrow("mid-stream failure, pcm", async () => (await speak({ input: failing, response_format: "pcm" })).arrayBuffer());
  await mustThrow("mid-stream failure, sse", async () => {
    const res = await speak({ input: failing, response_format: "pcm", stream_format: "sse" });
    for await (const ev of Stream.fromSSEResponse(res, new AbortController())) {
      if (ev.type === "speech.audio.done") return;
    }
  });
  // a whole reply goes out as the engine's audio arrives, with its
  // Content-Length: a failure after its first audio cuts it short of it
  await mustThrow('mid-stream failure, "stream": false', async () => (await speak({ input: failing, stream: false })).arrayBuffer());

  // 8 at once
  await waitReady();
  const texts = Array.from({ length: 8 }, (_, i) => `Client ${i % 4} asks for its own line.`);
  const replies = await Promise.all(texts.map(async (input) => Buffer.from(await (await speak({ input, response_format: "pcm" })).arrayBuffer())));
  for (let i = 0; i < 8; i++) {
    check(replies[i].length > 0 && replies[i].equals(replies[(i + 4) % 8]), `concurrent: reply ${i} differs from the same text's other reply`);
  }
  check(!replies[0].equals(replies[1]), "concurrent: different texts gave the same audio");
  ok("8 concurrent requests", replies.map((r) => r.length).join(" "));
}

// bench alternates the SDK's default request with the same request and
// "stream": true, and prints the first-byte times of each as JSON.
async function bench(n) {
  const input = "A short line for timing the first byte.";
  const def = [];
  const str = [];
  for (let i = 0; i < n + 3; i++) {
    for (const [list, extra] of [[def, {}], [str, { stream: true }]]) {
      const start = performance.now();
      const t = await timed(start, await speak({ input, response_format: "wav", ...extra }));
      if (i >= 3) list.push(t.first);
    }
  }
  const p = (xs, q) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))];
  console.log(JSON.stringify({ n, default_p50_ms: p(def, 0.5), stream_true_p50_ms: p(str, 0.5), default_p99_ms: p(def, 0.99), stream_true_p99_ms: p(str, 0.99) }));
}

try {
  if (mode === "bench") await bench(Number(count || 50));
  else await checks();
} catch (e) {
  fail("unexpected: " + (e?.stack ?? e));
}
