#!/usr/bin/env python3
"""Second reference for drama quantize: reads an output directory with
PyTorch alone and dequantizes every NVFP4 expert projection the way the
loaders do, comparing with the block-FP8 source dequantized in torch.

    python3 scripts/check-quant-output.py SRC_DIR OUT_DIR [modelopt|compressed-tensors]

ModelOpt:  W = e2m1(weight) * (weight_scale.float() * weight_scale_2)
compressed-tensors:  W = e2m1(weight_packed) * (weight_scale.float() / weight_global_scale)
Nibbles are read with the even element low, as torch.float4_e2m1fn_x2 is
documented; a wrong order would show as an NMSE far above 0.01.
Prints one JSON object: per projection NMSE, and gate/up scale equality.
"""
import glob
import json
import struct
import sys

import torch

DT = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
      "F8_E4M3": torch.float8_e4m3fn, "U8": torch.uint8}
E2M1 = torch.tensor([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def load_dir(d):
    out = {}
    for path in sorted(glob.glob(d + "/*.safetensors")):
        raw = open(path, "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        hdr = json.loads(raw[8:8 + n])
        base = 8 + n
        for k, v in hdr.items():
            if k == "__metadata__":
                continue
            s, e = v["data_offsets"]
            buf = bytearray(raw[base + s:base + e])
            t = torch.frombuffer(buf, dtype=torch.uint8) if e > s else torch.empty(0, dtype=torch.uint8)
            out[k] = t.view(DT[v["dtype"]]).reshape(v["shape"])
    return out


def unpack(packed):
    lo, hi = (packed & 15).long(), (packed >> 4).long()
    codes = torch.stack([lo, hi], dim=-1).reshape(packed.shape[0], -1)
    return E2M1[codes]


def main():
    src, out = load_dir(sys.argv[1]), load_dir(sys.argv[2])
    layout = sys.argv[3] if len(sys.argv) > 3 else "modelopt"
    res, globals_ = {}, {}
    for name, w in src.items():
        if not name.endswith(".weight") or w.dtype != torch.float8_e4m3fn:
            continue
        mod = name[:-len(".weight")]
        s = src[mod + ".weight_scale_inv"].float()
        n, k = w.shape
        ref = (w.float() * s.repeat_interleave(128, 0)[:n].repeat_interleave(128, 1)[:, :k]).bfloat16().float()
        if layout == "modelopt":
            if mod + ".weight" not in out or out[mod + ".weight"].dtype != torch.uint8:
                continue
            g = out[mod + ".weight_scale_2"].float().reshape(())
            div = out[mod + ".weight_scale"].float() * g
            q = unpack(out[mod + ".weight"])
        else:
            if mod + ".weight_packed" not in out:
                continue
            g = 1 / out[mod + ".weight_global_scale"].float().reshape(())
            div = out[mod + ".weight_scale"].float() / out[mod + ".weight_global_scale"].float().reshape(())
            q = unpack(out[mod + ".weight_packed"])
        deq = (q.reshape(n, k // 16, 16) * div.unsqueeze(-1)).reshape(n, k)
        res[mod] = float(((deq - ref) ** 2).sum() / (ref ** 2).sum())
        globals_[mod] = float(g)
    pairs = [(m, m.replace("gate_proj", "up_proj")) for m in globals_ if m.endswith("gate_proj")]
    same = all(globals_[a] == globals_[b] for a, b in pairs if b in globals_)
    print(json.dumps({"torch": torch.__version__, "layout": layout, "projections": len(res),
                      "max_nmse": max(res.values()), "mean_nmse": sum(res.values()) / len(res),
                      "gate_up_global_equal": same, "nmse": res}, indent=1, sort_keys=True))


main()
