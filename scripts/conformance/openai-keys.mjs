// OpenAI's own Node SDK (npm openai) against a drama serve that asks for
// API keys.
//
//   node scripts/conformance/openai-keys.mjs BASE_URL MODEL ADMIN_KEY SPEAK_KEY
//
// BASE_URL is drama serve's API root (http://127.0.0.1:PORT/v1). ADMIN_KEY
// is a key of scope admin, SPEAK_KEY one of scope speak. The SDK sends its
// apiKey as Authorization: Bearer: the right key lists the models and
// speaks; a wrong key is the SDK's AuthenticationError (401,
// invalid_api_key); references sent inline with a speak key are the SDK's
// PermissionDeniedError (403) naming the scope voices. Each check prints one
// line; the first failure exits with status 1 and says what was wrong.
import OpenAI from "openai";

const [baseURL, model, adminKey, speakKey] = process.argv.slice(2);
if (!baseURL || !model || !adminKey || !speakKey) {
  console.error("usage: openai-keys.mjs BASE_URL MODEL ADMIN_KEY SPEAK_KEY");
  process.exit(2);
}
const client = (apiKey) => new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });

function fail(msg) {
  console.error("FAIL " + msg);
  process.exit(1);
}
function ok(name, detail = "") {
  console.log("ok   " + name + (detail ? ": " + detail : ""));
}

// refused runs call, which must throw the SDK's error class want with status.
async function refused(name, call, want, status, code, words) {
  try {
    await call();
  } catch (e) {
    if (!(e instanceof want)) fail(`${name}: threw ${e?.constructor?.name}: ${e?.message}, want ${want.name}`);
    if (e.status !== status) fail(`${name}: status ${e.status}, want ${status}`);
    if (code && e.code !== code) fail(`${name}: code ${e.code}, want ${code}`);
    if (words && !String(e.message).includes(words)) fail(`${name}: message ${JSON.stringify(e.message)} does not say ${words}`);
    ok(name, `${e.constructor.name} ${e.status} ${e.code}: ${String(e.message).split("\n")[0]}`);
    return;
  }
  fail(`${name}: the call was let through`);
}

// the right key
for (const [name, key] of [["admin key", adminKey], ["speak key", speakKey]]) {
  const list = await client(key).models.list();
  if (!list.data.some((m) => m.id === model)) fail(`${name}: models.list has no ${model}`);
  const resp = await client(key).audio.speech.create({ model, voice: "default", input: "A keyed request.", response_format: "wav" });
  const bytes = Buffer.from(await resp.arrayBuffer());
  if (bytes.subarray(0, 4).toString() !== "RIFF" || bytes.length <= 44) fail(`${name}: speech is not a WAV (${bytes.length} bytes)`);
  ok(name, `models.list and speech (${bytes.length} bytes)`);
}

// a wrong key
const wrong = client(adminKey + "-wrong");
await refused("wrong key: models.list", () => wrong.models.list(), OpenAI.AuthenticationError, 401, "invalid_api_key");
await refused(
  "wrong key: speech",
  () => wrong.audio.speech.create({ model, voice: "default", input: "Not for this key." }),
  OpenAI.AuthenticationError,
  401,
  "invalid_api_key",
);

// a key below the scope: inline references need scope voices
const references = [{ text: "Words of a reference.", vq_codes: Array.from({ length: 10 }, () => Array(20).fill(3)) }];
await refused(
  "speak key: inline references",
  () => client(speakKey).audio.speech.create({ model, input: "With my own voice.", references }),
  OpenAI.PermissionDeniedError,
  403,
  "insufficient_scope",
  "needs scope voices",
);
const own = await client(adminKey).audio.speech.create({ model, input: "With my own voice.", references, response_format: "wav" });
ok("admin key: inline references", `${(await own.arrayBuffer()).byteLength} bytes`);
