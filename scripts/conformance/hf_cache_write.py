"""Fill a Hugging Face cache with huggingface_hub.

    HF_ENDPOINT=http://HOST:PORT python3 hf_cache_write.py CACHE REPO REVISION PATH...

hf_hub_download of each PATH at REVISION into CACHE. Prints one JSON
object: {"files": {path: local path}}.
"""

import json
import sys

from huggingface_hub import hf_hub_download


def main():
    cache, repo, revision, paths = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    files = {p: hf_hub_download(repo, p, revision=revision, cache_dir=cache) for p in paths}
    print(json.dumps({"files": files}))


if __name__ == "__main__":
    main()
