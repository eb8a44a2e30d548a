// @huggingface/hub against a Hub endpoint: every call drama mirror serve must answer.
//
// Usage: node hfjs_mirror.mjs ENDPOINT REPO COMMIT OUT.json WORKDIR TOKEN TOKEN_ENDPOINT
//   ENDPOINT  the mirror
//   REPO      a model repository with a main branch
//   COMMIT    a second commit of REPO, not the tip of main
//   OUT.json  where the results go: {"checks": {name: {"ok": bool, "error": str, "value": ...}}}
//   WORKDIR   scratch space for caches
//   TOKEN     an access token (hf_...); every check runs without it against
//             ENDPOINT and with it against TOKEN_ENDPOINT
//   TOKEN_ENDPOINT  a mirror of the same repository that requires TOKEN
//
// Each check runs on its own; a failure is recorded, not thrown. Downloads
// report the sha256 of the bytes (downloadFile) or the path in the cache
// (the others) for the caller to compare.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
	downloadFile,
	downloadFileToCacheDir,
	fileExists,
	listFiles,
	modelInfo,
	pathsInfo,
	repoExists,
	snapshotDownload,
} from "@huggingface/hub";

const [endpoint, repo, commit, outPath, work, token, tokenEndpoint] = process.argv.slice(2);
console.debug = () => {}; // downloadFileToCacheDir narrates each download
const checks = {};

async function check(name, fn) {
	try {
		checks[name] = { ok: true, value: await fn() };
	} catch (e) {
		checks[name] = { ok: false, error: String(e?.stack ?? e) };
	}
}

const all = async (it) => {
	const out = [];
	for await (const x of it) out.push(x);
	return out;
};

// the downloads need the list first; when it fails they are left out, and
// the caller reports each as not run
await check("listFiles[first]", async () =>
	(await all(listFiles({ repo, recursive: true, hubUrl: endpoint }))).filter((e) => e.type === "file").map((e) => e.path),
);
const files = checks["listFiles[first]"].value ?? [];

await check("repoExists[token,without]", () => repoExists({ hubUrl: tokenEndpoint, repo }));

for (const [mode, accessToken, hubUrl] of [
	["anon", undefined, endpoint],
	["token", token, tokenEndpoint],
]) {
	const p = { hubUrl, accessToken };
	const cacheDir = join(work, "cache-" + mode);
	for (const path of files) {
		await check(`downloadFile[${mode}]${path}`, async () => {
			const blob = await downloadFile({ ...p, repo, path });
			if (!blob) throw new Error("downloadFile returned null");
			return createHash("sha256").update(Buffer.from(await blob.arrayBuffer())).digest("hex");
		});
		await check(`downloadFileToCacheDir[${mode}]${path}`, () => downloadFileToCacheDir({ ...p, repo, path, cacheDir }));
	}
	await check(`downloadFile[${mode},missing]`, () => downloadFile({ ...p, repo, path: "no-such-file.txt" }));
	await check(`snapshotDownload[${mode},main]`, () => snapshotDownload({ ...p, repo, cacheDir: join(work, "snap-" + mode) }));
	await check(`snapshotDownload[${mode},commit]`, () =>
		snapshotDownload({ ...p, repo, revision: commit, cacheDir: join(work, "snap-" + mode) }),
	);
	await check(`listFiles[${mode}]`, async () =>
		(await all(listFiles({ ...p, repo, recursive: true }))).map((e) => ({ path: e.path, type: e.type, oid: e.oid, size: e.size, lfs: e.lfs?.oid ?? null })),
	);
	await check(`listFiles[${mode},top]`, async () => (await all(listFiles({ ...p, repo }))).map((e) => ({ path: e.path, type: e.type, oid: e.oid })));
	await check(`modelInfo[${mode}]`, async () => {
		const i = await modelInfo({ ...p, name: repo, additionalFields: ["sha", "filePaths"] });
		return { name: i.name, sha: i.sha, filePaths: i.filePaths };
	});
	await check(`modelInfo[${mode},commit]`, async () => (await modelInfo({ ...p, name: repo, revision: commit, additionalFields: ["sha"] })).sha);
	await check(`fileExists[${mode},true]`, () => fileExists({ ...p, repo, path: "config.json" }));
	await check(`fileExists[${mode},true,lfs]`, () => fileExists({ ...p, repo, path: files.find((f) => f.endsWith(".safetensors")) }));
	await check(`fileExists[${mode},false]`, () => fileExists({ ...p, repo, path: "no-such-file.txt" }));
	await check(`repoExists[${mode},true]`, () => repoExists({ ...p, repo }));
	await check(`repoExists[${mode},false]`, () => repoExists({ ...p, repo: repo.split("/")[0] + "/no-such-model" }));
	await check(`pathsInfo[${mode}]`, async () =>
		(await pathsInfo({ ...p, repo, paths: ["config.json", "nested", "no-such-file.txt", ...files], expand: true })).map((e) => ({
			path: e.path,
			type: e.type,
			oid: e.oid,
			lfs: e.lfs?.oid ?? null,
			lastCommit: e.lastCommit?.id ?? null,
		})),
	);
}

writeFileSync(outPath, JSON.stringify({ files, checks }));
