// Fill a Hugging Face cache with @huggingface/hub.
//
//   node hf_cache_write.mjs HUB_URL CACHE REPO REVISION PATH...
//
// downloadFileToCacheDir of each PATH at REVISION into CACHE. Prints one
// JSON object: {"files": {path: local path}}.
import { downloadFileToCacheDir } from "@huggingface/hub";

const [hubUrl, cacheDir, repo, revision, ...paths] = process.argv.slice(2);
const files = {};
for (const path of paths) {
  files[path] = await downloadFileToCacheDir({ repo, path, revision, cacheDir, hubUrl });
}
console.log(JSON.stringify({ files }));
