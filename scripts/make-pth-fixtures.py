#!/usr/bin/env python3
"""Write the torch.save fixtures that pth's tests read.

Usage: make-pth-fixtures.py OUTDIR

Run with torch 2.x (float8 needs 2.1 or later; the committed fixtures were
made with torch 2.11). Each file is small (KBs). manifest.json records, for
every file, the state dict's tensors in order with their dtype, shape and the
sha256 of their contiguous little-endian bytes as torch computes them.
"""

import collections
import hashlib
import json
import os
import sys

import torch
import torch.nn as nn
import warnings

warnings.simplefilter("ignore", FutureWarning)

DTYPE_NAMES = {
    torch.float64: "f64",
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "bool",
}
for attr, name in (("float8_e4m3fn", "f8_e4m3fn"), ("float8_e5m2", "f8_e5m2"), ("uint16", "u16")):
    if hasattr(torch, attr):
        DTYPE_NAMES[getattr(torch, attr)] = name


def digest(t):
    flat = t.detach().contiguous().reshape(-1)
    return hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()


def describe(sd):
    out = []
    for k, t in sd.items():
        out.append({"name": k, "dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape), "sha256": digest(t)})
    return out


def dtypes_dict():
    g = torch.Generator().manual_seed(1)
    sd = collections.OrderedDict()
    sd["f64"] = torch.randn(3, 4, generator=g, dtype=torch.float64)
    sd["f32"] = torch.randn(2, 3, generator=g)
    sd["f16"] = torch.randn(5, generator=g).half()
    sd["bf16"] = torch.randn(2, 2, generator=g).bfloat16()
    if hasattr(torch, "float8_e4m3fn"):
        sd["f8_e4m3fn"] = (torch.randn(4, 2, generator=g) * 8).to(torch.float8_e4m3fn)
        sd["f8_e5m2"] = (torch.randn(3, generator=g) * 100).to(torch.float8_e5m2)
    if hasattr(torch, "uint16"):
        sd["u16"] = torch.tensor([0, 1, 40000, 65535], dtype=torch.int32).to(torch.uint16)
    sd["i64"] = torch.arange(-3, 3, dtype=torch.int64) * (1 << 40)
    sd["i32"] = torch.tensor([-(1 << 31), -1, 0, 1, (1 << 31) - 1], dtype=torch.int32)
    sd["i16"] = torch.tensor([[-32768, 7], [300, 32767]], dtype=torch.int16)
    sd["i8"] = torch.tensor([-128, -1, 0, 127], dtype=torch.int8)
    sd["u8"] = torch.arange(0, 256, 37, dtype=torch.uint8)
    sd["bool"] = torch.tensor([True, False, True])
    sd["scalar"] = torch.tensor(3.5)
    sd["empty"] = torch.zeros(0, 5)
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    sd["base"] = base
    sd["same"] = base
    sd["view_rows"] = base[1:3]
    sd["view_cols"] = base[:, 2:5]
    sd["transposed"] = base.t()
    sd["step"] = base[::2, ::3]
    sd["broadcast"] = base[0].expand(3, 6)
    sd["scalar_view"] = base[2, 3]
    return sd


def small_dict():
    g = torch.Generator().manual_seed(2)
    sd = collections.OrderedDict()
    sd["a"] = torch.randn(4, 3, generator=g)
    sd["b"] = torch.arange(10, dtype=torch.int64)
    sd["c"] = sd["a"].t()
    sd["d"] = torch.randn(6, generator=g).half()
    return sd


class WN(nn.Module):
    """Both weight-norm styles, including a transposed convolution."""

    def __init__(self):
        super().__init__()
        self.old = nn.utils.weight_norm(nn.Conv1d(4, 8, 3))
        self.lin = nn.utils.weight_norm(nn.Linear(5, 3))
        P = nn.utils.parametrizations
        self.new = P.weight_norm(nn.Conv1d(8, 6, 5))
        self.up = P.weight_norm(nn.ConvTranspose1d(6, 4, 4, stride=2))
        self.alpha = nn.Parameter(torch.ones(1, 4, 1))


def wn_model():
    torch.manual_seed(3)
    m = WN()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn_like(p))
    return m


def folded_state():
    m = wn_model()
    nn.utils.remove_weight_norm(m.old)
    nn.utils.remove_weight_norm(m.lin)
    nn.utils.parametrize.remove_parametrizations(m.new, "weight")
    nn.utils.parametrize.remove_parametrizations(m.up, "weight")
    return collections.OrderedDict((k, v.detach().clone()) for k, v in m.state_dict().items())


def cast_inputs():
    g = torch.Generator().manual_seed(4)
    fixed = [0, 1, 2, 3, 0x0FFF, 0x1000, 0x1001, 0x2000, 0x3000, 0x3001, 0x7FFF, 0x8000,
             0x8001, 0x18000, 0x17FFF, 0x400000, 0x7FE000, 0x7FF000, 0x7FFFFF, 0x7FEFFF]
    bits = []
    for sign in (0, 1):
        for exp in range(256):
            rnd = torch.randint(0, 1 << 23, (12,), generator=g).tolist()
            for mant in fixed + rnd:
                bits.append((sign << 31) | (exp << 23) | mant)
    arr = torch.tensor([b - (1 << 32) if b >= (1 << 31) else b for b in bits], dtype=torch.int32)
    return arr.view(torch.float32)


def save(outdir, name, obj, sd, manifest, fmt="zip", **kw):
    path = os.path.join(outdir, name)
    torch.save(obj, path, **kw)
    manifest[name] = {"format": fmt, "tensors": describe(sd)}


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    manifest = {"torch": torch.__version__}
    sd = dtypes_dict()
    save(outdir, "dtypes.pth", sd, sd, manifest)
    small = small_dict()
    save(outdir, "proto4.pth", dict(small), small, manifest, pickle_protocol=4)
    save(outdir, "legacy.pth", small, small, manifest, fmt="legacy", _use_new_zipfile_serialization=False)
    m = wn_model()
    save(outdir, "wn.pth", m.state_dict(), m.state_dict(), manifest)
    folded = folded_state()
    save(outdir, "wn_folded.pth", folded, folded, manifest)
    kv = m.state_dict(keep_vars=True)
    save(outdir, "keepvars.pth", kv, kv, manifest)
    gen = collections.OrderedDict()
    for k, v in small.items():
        gen["generator." + k] = v
    gen["discriminator.w"] = torch.ones(2)
    stripped = collections.OrderedDict((k[len("generator."):], v) for k, v in gen.items() if k.startswith("generator."))
    save(outdir, "generator.pth", {"state_dict": gen, "epoch": 7}, stripped, manifest)
    x = cast_inputs()
    casts = collections.OrderedDict(x=x, h=x.half(), b=x.bfloat16())
    save(outdir, "casts.pth", casts, casts, manifest)
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
