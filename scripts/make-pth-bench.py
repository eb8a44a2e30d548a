#!/usr/bin/env python3
"""Write a codec-shaped fp32 checkpoint for pth benchmarks.

Usage: make-pth-bench.py KEYS_JSON OUT.pth [--prefix generator.]

KEYS_JSON lists [name, shape, dtype] rows (docs/codec-state-dict-keys.json
of the shared docs). Every tensor is filled with seeded normal values, so
weight-norm folding has non-zero norms; the file is about 1.57 GB.
"""

import collections
import json
import sys

import torch


def main():
    keys, out = sys.argv[1], sys.argv[2]
    prefix = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--prefix" else ""
    g = torch.Generator().manual_seed(0)
    sd = collections.OrderedDict()
    with open(keys) as f:
        for name, shape, _ in json.load(f):
            sd[prefix + name] = torch.randn(*shape, generator=g)
    torch.save(sd, out)


if __name__ == "__main__":
    main()
