#!/usr/bin/env python3
"""Write a codec-shaped fp32 checkpoint for pth benchmarks.

Usage: make-pth-bench.py KEYS_JSON OUT.pth [--prefix generator.]

KEYS_JSON lists [name, shape, dtype] rows (docs/codec-state-dict-keys.json
of the shared docs). The file is about 1.57 GB.

With torch, every tensor is filled with seeded normal values and written
by torch.save. Without torch, the same layout is written directly in
torch.save's zip format (data.pkl, one stored data/N record per tensor,
64-byte aligned as torch aligns them), the values random float32s between
-0.125 and 0.125 (never zero-norm, NaN or infinite), so weight-norm
folding and casts see ordinary numbers.
"""

import collections
import json
import os
import pickle
import struct
import sys
import types
import zipfile


def with_torch(keys, out, prefix):
    import torch

    g = torch.Generator().manual_seed(0)
    sd = collections.OrderedDict()
    for name, shape, _ in keys:
        sd[prefix + name] = torch.randn(*shape, generator=g)
    torch.save(sd, out)


# Stand-ins for the torch names a state dict's pickle refers to, so the
# standard pickler writes the same opcodes torch.save does.
_torch = types.ModuleType("torch")
_utils = types.ModuleType("torch._utils")


class FloatStorage:
    pass


def _rebuild_tensor_v2(*args):
    raise NotImplementedError


FloatStorage.__module__ = "torch"
_rebuild_tensor_v2.__module__ = "torch._utils"
_torch.FloatStorage = FloatStorage
_torch._utils = _utils
_utils._rebuild_tensor_v2 = _rebuild_tensor_v2


class Tensor:
    def __init__(self, key, shape):
        self.key, self.shape = key, tuple(shape)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __reduce__(self):
        stride, s = [], 1
        for d in reversed(self.shape):
            stride.insert(0, s)
            s *= d
        storage = ("storage", FloatStorage, self.key, "cpu", self.numel())
        return (_rebuild_tensor_v2, (storage, 0, self.shape, tuple(stride), False, collections.OrderedDict()))


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, tuple) and len(obj) == 5 and obj[0] == "storage":
            return obj
        return None


def values(n):
    """n random little-endian float32s of magnitude 2^-7 to 2^-3."""
    b = bytearray(os.urandom(4 * n))
    # the top byte holds the sign and 7 exponent bits: keep the sign, set
    # the exponent to 120..123 (with the next byte's top bit)
    table = bytes((0xBC if x & 0x80 else 0x3C) | (x & 1) for x in range(256))
    b[3::4] = bytes(b[3::4]).translate(table)
    return b


def without_torch(keys, out, prefix):
    sys.modules.setdefault("torch", _torch)
    sys.modules.setdefault("torch._utils", _utils)
    sd = collections.OrderedDict()
    for i, (name, shape, _) in enumerate(keys):
        sd[prefix + name] = Tensor(str(i), shape)
    root = os.path.splitext(os.path.basename(out))[0]
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        with z.open(root + "/data.pkl", "w") as f:
            Pickler(f, protocol=2).dump(sd)
        z.writestr(root + "/byteorder", "little")
        for t in sd.values():
            info = zipfile.ZipInfo(root + "/data/" + t.key)
            name_len = len(info.filename.encode())
            # pad the local header's extra field so the data is 64-byte aligned
            at = z.fp.tell() + 30 + name_len + 4
            pad = (-at) % 64
            info.extra = struct.pack("<HH", 0x1234, pad) + b"\0" * pad
            with z.open(info, "w", force_zip64=True) as f:
                left = t.numel()
                while left:
                    n = min(left, 1 << 20)
                    f.write(values(n))
                    left -= n
        z.writestr(root + "/version", "3\n")


def main():
    keys_file, out = sys.argv[1], sys.argv[2]
    prefix = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--prefix" else ""
    with open(keys_file) as f:
        keys = json.load(f)
    try:
        import torch  # noqa: F401
    except ImportError:
        without_torch(keys, out, prefix)
        return
    with_torch(keys, out, prefix)


if __name__ == "__main__":
    main()
