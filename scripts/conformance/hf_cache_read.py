"""Read a Hugging Face cache with huggingface_hub, offline, and report.

    python3 hf_cache_read.py CACHE REPO COMMIT [REVISION...]

With HF_HUB_OFFLINE=1: snapshot_download(REPO, revision=COMMIT) and of each
REVISION (a ref such as main), hf_hub_download of every file of the
snapshot at COMMIT, and scan_cache_dir(CACHE). Prints one JSON object:
{"snapshot", "files": {path: sha256}, "revisions": {rev: folder},
"downloads": {path: sha256}, "warnings": [...], "refs": [...]}.
"""

import hashlib
import json
import os
import sys

from huggingface_hub import hf_hub_download, scan_cache_dir, snapshot_download


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    cache, repo, commit, revisions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if os.environ.get("HF_HUB_OFFLINE") != "1":
        sys.exit("hf_cache_read.py: set HF_HUB_OFFLINE=1")
    snap = snapshot_download(repo, revision=commit, cache_dir=cache)
    files = {}
    for root, _, names in os.walk(snap):
        for n in names:
            p = os.path.join(root, n)
            files[os.path.relpath(p, snap).replace(os.sep, "/")] = sha256(p)
    revs = {r: snapshot_download(repo, revision=r, cache_dir=cache) for r in revisions}
    downloads = {
        p: sha256(hf_hub_download(repo, p, revision=commit, cache_dir=cache)) for p in sorted(files)
    }
    info = scan_cache_dir(cache)
    refs = sorted(r for repo_info in info.repos for rev in repo_info.revisions for r in rev.refs)
    print(json.dumps({
        "snapshot": snap,
        "files": files,
        "revisions": revs,
        "downloads": downloads,
        "warnings": [str(w) for w in info.warnings],
        "refs": refs,
    }))


if __name__ == "__main__":
    main()
