#!/usr/bin/env python3
"""Measure `drama pth convert` against PyTorch + safetensors in one run.

Usage: bench-pth-peer.py DRAMA KEYS_JSON WORKDIR [FIXTURES_DIR]

Makes a codec-shaped fp32 checkpoint (make-pth-bench.py), warms the page
cache, then times, best of two runs each, with peak RSS of the child:
  cp                 copy of the checkpoint
  peer keep          torch.load(mmap=True, weights_only=True) + save_file
  drama keep         drama pth convert --dtype keep
  drama keep given   the same with --source-sha256 (no hashing of the source)
  peer f16           the same + fold (torch._weight_norm) + .half()
  drama f16          drama pth convert --fold-weight-norm --dtype f16
Every run ends with fsync of its output. Then checks that drama's outputs load
in safetensors and torch and equal torch's own tensors (keep: bit for bit;
f16: the fold differs from torch by float32 rounding only), and converts the
pth fixtures and compares them with torch.load.
"""

import json
import os
import subprocess
import sys
import time

PEER = r'''
import os, sys, torch
from safetensors.torch import save_file
src, out, mode = sys.argv[1:4]
sd = torch.load(src, mmap=True, weights_only=True, map_location="cpu")
if mode == "f16":
    folded = {}
    for k, v in sd.items():
        for g_s, v_s in (("weight_g", "weight_v"), ("parametrizations.weight.original0", "parametrizations.weight.original1")):
            if k.endswith(v_s):
                p = k[: -len(v_s)]
                g = sd[p + g_s]
                dim = [i for i, s in enumerate(g.shape) if s != 1]
                folded[p + "weight"] = torch._weight_norm(v, g, dim[0] if dim else -1)
                break
        else:
            if not (k.endswith("weight_g") or k.endswith("parametrizations.weight.original0")):
                folded[k] = v
    sd = {k: v.half() for k, v in folded.items()}
save_file(sd, out, metadata={"format": "pt"})
fd = os.open(out, os.O_RDONLY); os.fsync(fd); os.close(fd)
'''


def run(cmd):
    """Runs cmd; returns its wall time and its own peak RSS in KiB."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited with {p.returncode}")
    return dt, ru.ru_maxrss


def best(name, cmd, out, size, results):
    times, rss = [], None
    for _ in range(2):
        if os.path.exists(out):
            os.remove(out)
        dt, r = run(cmd)
        times.append(dt)
        rss = r or rss
    t = min(times)
    results[name] = {"seconds": round(t, 3), "gb_per_s": round(size / t / 1e9, 3), "peak_rss_mib": rss and round(rss / 1024, 1)}
    print(name, results[name], flush=True)


def raw(t):
    import torch
    return t.contiguous().reshape(-1).view(torch.uint8)


def fold_ref(sd, p):
    import torch
    for g_s, v_s in (("weight_g", "weight_v"), ("parametrizations.weight.original0", "parametrizations.weight.original1")):
        if p + v_s in sd:
            g, v = sd[p + g_s], sd[p + v_s]
            dim = [i for i, s in enumerate(g.shape) if s != 1]
            return torch._weight_norm(v, g, dim[0] if dim else -1)
    raise KeyError(p)


def check(drama_out, src, f16):
    import torch
    from safetensors.torch import load_file
    got = load_file(drama_out)
    ref = torch.load(src, mmap=True, weights_only=True)
    if not f16:
        assert list(got) == list(ref), "names or order differ"
        bad = [k for k in ref if not torch.equal(raw(got[k]), raw(ref[k]))]
        return {"tensors": len(got), "unequal": len(bad)}
    worst, differing, total = 0.0, 0, 0
    for k, v in got.items():
        assert v.dtype == torch.float16, k
        want = ref[k].half() if k in ref else fold_ref(ref, k[: -len("weight")]).half()
        d = (v.float() - want.float()).abs()
        worst = max(worst, d.max().item())
        differing += int((d > 0).sum().item())
        total += v.numel()
    return {"tensors": len(got), "f16_elements": total, "f16_elements_differing_from_torch": differing, "max_abs_diff": worst}


def fixtures(drama, fx, work):
    import torch
    from safetensors.torch import load_file
    out = {}
    for name in ("dtypes.pth", "proto4.pth", "legacy.pth", "generator.pth", "keepvars.pth", "casts.pth"):
        dst = os.path.join(work, name + ".safetensors")
        subprocess.run([drama, "pth", "convert", os.path.join(fx, name), "-o", dst, "--force", "--drop", "^u16$"], check=True, stderr=subprocess.DEVNULL)
        got = load_file(dst)
        ref = torch.load(os.path.join(fx, name), weights_only=name != "proto4.pth")
        if "state_dict" in ref:
            ref = {k[len("generator."):]: v for k, v in ref["state_dict"].items() if k.startswith("generator.")}
        ref = {k: v for k, v in ref.items() if k != "u16"}
        bad = [k for k in ref if got[k].dtype != ref[k].dtype or got[k].shape != ref[k].shape or not torch.equal(raw(got[k]), raw(ref[k]))]
        out[name] = {"tensors": len(got), "unequal": bad}
    return out


def main():
    drama, keys, work = sys.argv[1:4]
    fx = sys.argv[4] if len(sys.argv) > 4 else None
    os.makedirs(work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(work, "codec.pth")
    subprocess.run([sys.executable, os.path.join(here, "make-pth-bench.py"), keys, src], check=True)
    size = os.path.getsize(src)
    subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)
    res = {"source_bytes": size, "cpus": os.cpu_count()}
    o = lambda n: os.path.join(work, n)
    best("cp", ["sh", "-c", f"cp {src} {o('cp.out')} && sync {o('cp.out')}"], o("cp.out"), size, res)
    best("peer_keep", [sys.executable, "-c", PEER, src, o("peer.safetensors"), "keep"], o("peer.safetensors"), size, res)
    best("drama_keep", [drama, "pth", "convert", src, "-o", o("drama.safetensors"), "-q"], o("drama.safetensors"), size, res)
    import hashlib
    h = hashlib.sha256()
    with open(src, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    best("drama_keep_given_sha256", [drama, "pth", "convert", src, "-o", o("drama2.safetensors"), "-q", "--source-sha256", h.hexdigest()], o("drama2.safetensors"), size, res)
    best("peer_f16", [sys.executable, "-c", PEER, src, o("peer16.safetensors"), "f16"], o("peer16.safetensors"), size, res)
    best("drama_f16", [drama, "pth", "convert", src, "-o", o("drama16.safetensors"), "-q", "--fold-weight-norm", "--dtype", "f16"], o("drama16.safetensors"), size, res)
    res["ratio_keep_drama_over_peer"] = round(res["peer_keep"]["seconds"] / res["drama_keep"]["seconds"], 2)
    res["ratio_keep_drama_over_cp"] = round(res["cp"]["seconds"] / res["drama_keep"]["seconds"], 2)
    res["ratio_keep_given_sha256_drama_over_cp"] = round(res["cp"]["seconds"] / res["drama_keep_given_sha256"]["seconds"], 2)
    res["ratio_f16_drama_over_peer"] = round(res["peer_f16"]["seconds"] / res["drama_f16"]["seconds"], 2)
    res["check_keep"] = check(o("drama.safetensors"), src, False)
    res["check_f16"] = check(o("drama16.safetensors"), src, True)
    if fx:
        res["fixtures"] = fixtures(drama, fx, work)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
