#!/usr/bin/python3
"""Make the voices package's fixtures with numpy, independently of drama.

Writes fish-speech code arrays (.npy, as np.save writes them) with .lab
transcripts, and canonical voice files in the three formats written by a
separate implementation of the documented layout, so the Go tests check the
Go reader and writer against them. Rerun from the repository root:

    /usr/bin/python3 scripts/make-voice-fixtures.py
"""
import hashlib
import json
import os

import numpy as np

OUT = "voices/testdata"
rng = np.random.RandomState(20260501)


def codes(frames):
    c = np.empty((10, frames), dtype=np.int64)
    c[0] = rng.randint(0, 4096, frames)
    c[1:] = rng.randint(0, 1024, (9, frames))
    return c


REFS = [
    ("ref0", "Hello there, \"friend\" \u2014 caf\u00e9.", codes(7), "<i8", False),
    ("ref1", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3002", codes(5), "<i4", False),
    ("ref2", "[laughs] Right, then.", codes(4), "<u2", False),
    ("ref3", "Fourth & last <b>one</b>.", codes(6), "<i8", True),
]
REFS[0][2][0, 0] = 4095
REFS[0][2][1, 0] = 1023
REFS[0][2][2, 1] = 0


def sha(c):
    return hashlib.sha256(np.ascontiguousarray(c).astype("<u2").tobytes()).hexdigest()


def s(x):
    return json.dumps(x, ensure_ascii=False)


def matrix(rows, indent):
    pad = " " * indent
    lines = [pad + "[" + ",".join(str(int(v)) for v in row) + "]" for row in rows]
    return "[\n" + ",\n".join(lines) + "\n" + " " * (indent - 2) + "]"


def voice(head, refs):
    out = "{\n"
    for k, v in head:
        out += '  "%s": %s,\n' % (k, v)
    out += '  "references": [\n'
    items = []
    for fields in refs:
        body = ",\n".join('      "%s": %s' % (k, v) for k, v in fields)
        items.append("    {\n" + body + "\n    }")
    return out + ",\n".join(items) + "\n  ]\n}\n"


def write(name, text):
    with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def fish():
    expected = {}
    for name, text, c, dtype, fortran in REFS:
        arr = c.astype(dtype)
        np.save(os.path.join(OUT, "fish", name + ".npy"), np.asfortranarray(arr) if fortran else arr)
        with open(os.path.join(OUT, "fish", name + ".lab"), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        expected[name] = {"text": text, "codes": c.tolist(), "codes_sha256": sha(c)}
    with open(os.path.join(OUT, "fish", "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


def main():
    fish()
    base = [("format", None), ("id", s("fixture")), ("name", s("Fixture Voice"))]
    refs = REFS[:2]
    cuda = [[("text", s(t)), ("frames", c.shape[1]), ("codes_sha256", s(sha(c))), ("vq_codes", matrix(c, 8))]
            for _, t, c, _, _ in refs]
    write("cuda.json", voice([("format", s("drama3-voice/1"))] + base[1:], cuda))
    metal = [[("text", s(t)), ("frames", c.shape[1]), ("codes", matrix(c.T, 8))] for _, t, c, _, _ in refs]
    head = [("format", s("drama3-http-voice/1"))] + base[1:] + [
        ("source", '{"kind": "synthetic"}'), ("note", s("fixture voice"))]
    write("metal.json", voice(head, metal))
    cloned = [[("text", s(t)), ("samples", c.shape[1] * 2048 - 100), ("frames", c.shape[1]), ("codes", matrix(c, 8))]
              for _, t, c, _, _ in REFS]
    consent = ('{\n    "who": "Anna Example",\n    "when": "2026-05-01T11:58:00Z",\n'
               '    "statement": %s\n  }' % s("I, Anna Example, agree that my voice may be cloned for this project."))
    head = [("format", s("localrouter-voice-codes/1"))] + base[1:] + [
        ("created", s("2026-05-01T12:00:00Z")), ("source", '{"kind": "consented"}'), ("consent", consent)]
    write("cloned.json", voice(head, cloned))


if __name__ == "__main__":
    main()
