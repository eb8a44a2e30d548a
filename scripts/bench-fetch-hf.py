"""huggingface_hub's snapshot_download of one commit, as scripts/bench-fetch.sh runs it.

Usage: bench-fetch-hf.py ENDPOINT REPO COMMIT CACHE_DIR [MAX_WORKERS]

Run with PYTHONPATH pointing at huggingface_hub and HF_HUB_DISABLE_XET=1 (the
mirror serves plain HTTP, as the Hub does for clients without hf_xet). Writes
the seconds spent inside snapshot_download (the import of huggingface_hub
left out) to the file named by $HF_CALL_FILE, when set.
"""

import os
import sys
import time

endpoint, repo, commit, cache = sys.argv[1:5]
workers = int(sys.argv[5]) if len(sys.argv) > 5 else 8
os.environ["HF_ENDPOINT"] = endpoint
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from huggingface_hub import snapshot_download  # noqa: E402  (HF_ENDPOINT must be set first)

start = time.monotonic()
snapshot_download(repo, revision=commit, cache_dir=cache, max_workers=workers, endpoint=endpoint)
took = time.monotonic() - start
if os.environ.get("HF_CALL_FILE"):
    with open(os.environ["HF_CALL_FILE"], "w") as f:
        f.write("%.3f\n" % took)
