// Read a Hugging Face cache with @huggingface/hub, with no server to ask.
//
//   node hf_cache_read.mjs CACHE REPO COMMIT PATH...
//
// downloadFileToCacheDir of each PATH at COMMIT against a Hub address that
// refuses connections (so only the cache can answer), then scanCacheDir.
// Prints one JSON object: {"files": {path: sha256}, "warnings": [...]}.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { downloadFileToCacheDir, scanCacheDir } from "@huggingface/hub";

const [cacheDir, repo, revision, ...paths] = process.argv.slice(2);
const hubUrl = process.env.DEAD_HUB_URL ?? "http://127.0.0.1:9";
const files = {};
for (const path of paths) {
  const p = await downloadFileToCacheDir({ repo, path, revision, cacheDir, hubUrl });
  files[path] = createHash("sha256").update(await readFile(p)).digest("hex");
}
const info = await scanCacheDir(cacheDir);
console.log(JSON.stringify({ files, warnings: info.warnings.map((w) => String(w?.message ?? w)) }));
