"""Scan a Hugging Face cache with huggingface_hub and print what it finds.

Usage: hf_cache_scan.py CACHE_DIR [REPO FILE]

Prints one JSON document: each repository with its refs and the files of
each revision, the scan's warnings, and, when REPO and FILE are given, the
path huggingface_hub resolves for FILE at the ref drama-pinned offline (or
null when it cannot).
"""
import json
import sys

from huggingface_hub import hf_hub_download, scan_cache_dir


def main():
    cache = sys.argv[1]
    info = scan_cache_dir(cache)
    out = {
        "repos": [
            {
                "repo_id": r.repo_id,
                "refs": sorted(r.refs),
                "revisions": {rev.commit_hash: sorted(f.file_name for f in rev.files) for rev in r.revisions},
            }
            for r in sorted(info.repos, key=lambda r: r.repo_id)
        ],
        "warnings": [str(w) for w in info.warnings],
        "resolved": None,
    }
    if len(sys.argv) == 4:
        try:
            out["resolved"] = hf_hub_download(sys.argv[2], sys.argv[3], revision="drama-pinned", cache_dir=cache, local_files_only=True)
        except Exception as e:  # noqa: BLE001 - reported, not raised
            out["resolved_error"] = f"{type(e).__name__}: {e}"
    json.dump(out, sys.stdout, indent=2)


if __name__ == "__main__":
    main()
