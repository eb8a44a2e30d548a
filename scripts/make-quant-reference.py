#!/usr/bin/env python3
"""Reference outputs for safetensors/dtype and safetensors/quant, from PyTorch.

Run with torch >= 2.1 (float8 dtypes); the CPU is enough:

    python3 scripts/make-quant-reference.py safetensors/quant/testdata

Writes (all safetensors, little-endian):
  codecs.safetensors   float32 inputs "in" and torch's casts of them:
                       "bf16" (.bfloat16()), "f16" (.half()),
                       "e4m3" (.to(float8_e4m3fn)), "e5m2" (.to(float8_e5m2)).
  fp8-experts.safetensors   two experts of block-FP8 source weights
                       (weight F8_E4M3 + weight_scale_inv F32 per 128x128
                       block) with edge cases; expert 1 has its amax only in
                       up_proj.
  nvfp4-expected.safetensors  NVFP4 of those experts, ModelOpt layout
                       (weight U8 packed, weight_scale F8_E4M3,
                       weight_scale_2 F32 0-dim), gate and up sharing one
                       global scale; "f32path.*" the same with the BF16 step
                       skipped; "bf16src.*" NVFP4 of a BF16 matrix;
                       "fp8blk.*" BF16 -> 128x128 block FP8; "deq.*" the
                       BF16 dequantizations.
The formulas are those documented in docs/quantize.md.
"""
import json
import struct
import sys

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
G = torch.Generator().manual_seed(20261129)

SAFE_DTYPES = {
    torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16",
    torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2",
    torch.uint8: "U8", torch.int32: "I32",
}


def save(path, tensors):
    """A plain safetensors writer (no dependency beyond torch)."""
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous().cpu()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": SAFE_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    with open(f"{OUT}/{path}", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def codecs():
    hi = torch.arange(65536, dtype=torch.int64) << 16
    lows = [torch.zeros(65536, dtype=torch.int64), torch.full((65536,), 0x8000, dtype=torch.int64),
            torch.randint(0, 65536, (65536,), generator=G, dtype=torch.int64)]
    bits = torch.cat([hi | lo for lo in lows])
    bits = torch.where(bits >= 2**31, bits - 2**32, bits).to(torch.int32)
    x = bits.view(torch.float32)
    return {"in": x, "bf16": x.bfloat16(), "f16": x.half(),
            "e4m3": x.to(torch.float8_e4m3fn), "e5m2": x.to(torch.float8_e5m2)}


def fp8_weight(n, k, spread):
    w = (torch.randn(n, k, generator=G) * spread).clamp(-448, 448).to(torch.float8_e4m3fn)
    b = w.view(torch.uint8)
    b[0, 0:16] = 0x00            # an all-zero 16-block
    b[1, 16:32] = 0x80           # an all negative-zero 16-block
    b[2, 32:48] = torch.tensor([0x00, 0x80] * 8, dtype=torch.uint8)
    b[3, 48:64] = 0x80
    b[3, 50] = 0x01              # a tiny value among negative zeros
    b[5, 130] = 0x7E             # full scale in the second 128-block
    b[6, 131] = 0xFE
    b[130:140, :] |= (b[130:140, :] > 0x40).to(torch.uint8) * 0x80  # more negatives
    return w


def scale_inv(n, k, base):
    s = torch.exp(torch.randn((n + 127) // 128, (k + 127) // 128, generator=G)) * base
    s[0, 0] = 3.3e-5
    return s.float()


def block_dequant(w8, s_inv, bf16=True):
    n, k = w8.shape
    s = s_inv.repeat_interleave(128, 0)[:n].repeat_interleave(128, 1)[:, :k]
    x = w8.float() * s
    return x.bfloat16().float() if bf16 else x


BOUNDS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
E2M1 = torch.tensor([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def e2m1(y):
    a = y.abs()
    c = torch.searchsorted(BOUNDS, a.contiguous())
    c = c + ((a == 0.75) | (a == 1.75) | (a == 3.5)).long()
    return (c | ((y < 0).long() << 3)).to(torch.uint8)


def nvfp4(x, wsf2):
    n, k = x.shape
    xb = x.reshape(n, k // 16, 16)
    s = xb.abs().amax(-1) / (6.0 * wsf2)
    s = torch.where(s == 0, torch.ones_like(s), s).clamp(max=448.0)
    s8 = s.to(torch.float8_e4m3fn)
    q = e2m1((xb / (s8.float() * wsf2).unsqueeze(-1)).reshape(n, k))
    packed = q[:, 0::2] | (q[:, 1::2] << 4)
    deq = (E2M1[q.long()].reshape(n, k // 16, 16) * (s8.float() * wsf2).unsqueeze(-1)).reshape(n, k)
    return packed, s8, wsf2.reshape(()), deq.bfloat16()


def global_scale(*xs):
    amax = torch.stack([x.abs().amax() for x in xs]).amax().float()
    return amax / (6.0 * 448.0)


def fp8_block(x):
    n, k = x.shape
    bn, bk = (n + 127) // 128, (k + 127) // 128
    pad = torch.zeros(bn * 128, bk * 128)
    pad[:n, :k] = x
    blocks = pad.reshape(bn, 128, bk, 128)
    amax = blocks.abs().amax(dim=(1, 3))
    s = amax / 448.0
    s = torch.where(s == 0, torch.ones_like(s), s)
    q = (blocks / s[:, None, :, None]).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q.reshape(bn * 128, bk * 128)[:n, :k], s


def main():
    save("codecs.safetensors", codecs())
    src, out = {}, {}
    shapes = {"gate_proj": (320, 512), "up_proj": (320, 512), "down_proj": (512, 320)}
    for e in range(2):
        for p, (n, k) in shapes.items():
            base = 1e-5 if (e == 1 and p == "gate_proj") else 2e-4
            src[f"experts.{e}.{p}.weight"] = fp8_weight(n, k, 48.0)
            src[f"experts.{e}.{p}.weight_scale_inv"] = scale_inv(n, k, base)
        for path, bf in (("", True), ("f32path.", False)):
            x = {p: block_dequant(src[f"experts.{e}.{p}.weight"], src[f"experts.{e}.{p}.weight_scale_inv"], bf)
                 for p in shapes}
            gu = global_scale(x["gate_proj"], x["up_proj"])
            for p in shapes:
                wsf2 = gu if p != "down_proj" else global_scale(x[p])
                packed, s8, w2, deq = nvfp4(x[p], wsf2)
                pre = f"{path}experts.{e}.{p}."
                out[pre + "weight"], out[pre + "weight_scale"], out[pre + "weight_scale_2"] = packed, s8, w2
                if path == "" and e == 0:
                    out[f"deq.fp8.experts.{e}.{p}"] = x[p].bfloat16()
                    out[f"deq.nvfp4.experts.{e}.{p}"] = deq
    xb = (torch.randn(64, 256, generator=G) * 0.02).bfloat16()
    xb[0, :16] = 0
    out["bf16src.x"] = xb
    out["bf16src.weight"], out["bf16src.weight_scale"], out["bf16src.weight_scale_2"], _ = nvfp4(xb.float(), global_scale(xb.float()))
    xf = (torch.randn(200, 272, generator=G) * 0.05).bfloat16()
    xf[:128, :128] = 0
    out["fp8blk.x"] = xf
    out["fp8blk.weight"], out["fp8blk.weight_scale_inv"] = fp8_block(xf.float())
    save("fp8-experts.safetensors", src)
    save("nvfp4-expected.safetensors", out)
    print("torch", torch.__version__, "wrote", OUT)


main()
