"""huggingface_hub against a Hub endpoint: every call drama mirror serve must answer.

Usage: hf_mirror.py ENDPOINT REPO COMMIT OUT.json WORKDIR TOKEN TOKEN_ENDPOINT
  ENDPOINT  the mirror (also set as HF_ENDPOINT)
  REPO      a model repository with a main branch
  COMMIT    a second commit of REPO, not the tip of main
  OUT.json  where the results go: {"checks": {name: {"ok": bool, "error": str, "value": ...}}}
  WORKDIR   scratch space for caches
  TOKEN     a token to send where a check says so
  TOKEN_ENDPOINT  a mirror of the same repository that requires TOKEN

Each check runs on its own; a failure is recorded, not raised, so that one
run reports everything. Paths of downloaded files are reported for the
caller to hash.
"""

import json
import os
import sys
import traceback

endpoint, repo, commit, out_path, work, token, token_endpoint = sys.argv[1:8]
os.environ["HF_ENDPOINT"] = endpoint

import huggingface_hub  # noqa: E402  (HF_ENDPOINT must be set first)
from huggingface_hub import HfApi  # noqa: E402

api = HfApi(endpoint=endpoint)
checks = {}


def check(name, fn):
    try:
        checks[name] = {"ok": True, "value": fn()}
    except Exception as e:  # every failure is a result
        checks[name] = {"ok": False, "error": "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())}


def entry(e):
    d = {"path": e.path, "type": "file" if isinstance(e, huggingface_hub.hf_api.RepoFile) else "directory"}
    if d["type"] == "file":
        d.update(oid=e.blob_id, size=e.size, lfs=e.lfs.sha256 if e.lfs else None)
        if e.last_commit is not None:
            d["last_commit"] = e.last_commit.oid
    else:
        d["oid"] = e.tree_id
        if e.last_commit is not None:
            d["last_commit"] = e.last_commit.oid
    return d


# the downloads need the list first; when it fails they are left out, and the
# caller reports each as not run
check("list_repo_files[first]", lambda: api.list_repo_files(repo))
files = checks["list_repo_files[first]"].get("value") or []

# hf_hub_download of every file: with the token from the mirror that
# requires it (huggingface_hub keeps it on a redirect to the same host name)
# into one cache, and without one into another
for tok, ep, cache in ((token, token_endpoint, "cache-token"), (False, endpoint, "cache-anon")):
    for f in files:
        check(
            "hf_hub_download[%s]%s" % ("token" if tok else "anon", f),
            lambda f=f, tok=tok, ep=ep, cache=cache: huggingface_hub.hf_hub_download(
                repo, f, cache_dir=os.path.join(work, cache), token=tok, endpoint=ep
            ),
        )
check("repo_exists[token]", lambda: HfApi(endpoint=token_endpoint, token=token).repo_exists(repo))
check("repo_exists[token,without]", lambda: HfApi(endpoint=token_endpoint, token=False).repo_exists(repo))
check(
    "hf_hub_download[commit]",
    lambda: huggingface_hub.hf_hub_download(repo, "config.json", revision=commit, cache_dir=os.path.join(work, "cache-anon")),
)
check("snapshot_download[main]", lambda: huggingface_hub.snapshot_download(repo, cache_dir=os.path.join(work, "snap")))
check(
    "snapshot_download[commit]",
    lambda: huggingface_hub.snapshot_download(repo, revision=commit, cache_dir=os.path.join(work, "snap")),
)
check("list_repo_tree", lambda: [entry(e) for e in api.list_repo_tree(repo, recursive=True)])
check("list_repo_tree[top]", lambda: [entry(e) for e in api.list_repo_tree(repo)])
check("list_repo_files", lambda: api.list_repo_files(repo))
check("list_repo_files[commit]", lambda: api.list_repo_files(repo, revision=commit))


def info(**kw):
    i = api.model_info(repo, **kw)
    return {
        "id": i.id,
        "sha": i.sha,
        "siblings": [
            {"rfilename": s.rfilename, "size": s.size, "blob_id": s.blob_id, "lfs": s.lfs.sha256 if s.lfs else None}
            for s in i.siblings
        ],
    }


check("model_info", lambda: info())
check("model_info[commit,files_metadata]", lambda: info(revision=commit, files_metadata=True))
check("repo_exists[true]", lambda: api.repo_exists(repo))
check("repo_exists[false]", lambda: api.repo_exists(repo.split("/")[0] + "/no-such-model"))
check("file_exists[true]", lambda: api.file_exists(repo, "config.json"))
check("file_exists[true,lfs]", lambda: api.file_exists(repo, next(f for f in files if f.endswith(".safetensors"))))
check("file_exists[false]", lambda: api.file_exists(repo, "no-such-file.txt"))
check("file_exists[false,revision]", lambda: api.file_exists(repo, "config.json", revision="no-such-branch"))
check(
    "get_paths_info",
    lambda: [entry(e) for e in api.get_paths_info(repo, ["config.json", "nested", "no-such-file.txt"] + files, expand=True)],
)
check(
    "list_repo_refs",
    lambda: [{"name": b.name, "ref": b.ref, "target_commit": b.target_commit} for b in api.list_repo_refs(repo).branches],
)
check("list_repo_commits", lambda: [c.commit_id for c in api.list_repo_commits(repo)])

with open(out_path, "w") as fh:
    json.dump({"version": huggingface_hub.__version__, "files": files, "checks": checks}, fh)
