#!/usr/bin/python3
"""End-to-end test of `replayssm quantize` on h5py-made inputs: shapes, attributes, the documented code/scale
layouts (decoded here independently with numpy), stochastic rounding and bad input (exit 2, one line naming the
file and the field). Usage: quantize_cli_test.py [path to replayssm] (default: $REPLAYSSM_CLI)."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, failures  # noqa: E402  (tests/pycheck.py)

CLI = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("REPLAYSSM_CLI", "")



def run(*args):
    return subprocess.run([CLI, "quantize", *args], capture_output=True, text=True)


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def e4m3_value(c):
    c = np.asarray(c, dtype=np.int64)
    s = np.where(c & 0x80, -1.0, 1.0)
    e = (c >> 3) & 0xF
    m = c & 7
    v = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7.0))
    v = np.where((c & 0x7F) == 0x7F, np.nan, v)
    return (s * v).astype(np.float32)


def nibbles(codes_row, n):
    lo = codes_row & 0xF
    hi = codes_row >> 4
    return np.stack([lo, hi], axis=1).reshape(-1)[:n]


def bf16_rne(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32)
    return (r << 16).view(np.float32), r.astype(np.uint16)


def main():
    if not CLI or not os.path.exists(CLI):
        print(f"SKIP: replayssm binary not found ({CLI!r})")
        return 77
    tmp = tempfile.mkdtemp(prefix="quantize_cli_")
    inp = os.path.join(tmp, "in.h5")
    rng = np.random.default_rng(1)
    x4 = (rng.normal(size=(2, 3, 4, 64)) * np.exp2(rng.integers(-6, 4, size=(2, 3, 4, 1)))).astype(np.float32)
    x4[0, 0, 1, :16] = 0  # an all-zero block
    x2 = rng.normal(size=(5, 40)).astype(np.float32)  # one head, K = 40: short last blocks
    with h5py.File(inp, "w") as f:
        f["/layers/0/state"] = x4
        f["/flat"] = x2
        f["/vec"] = np.zeros(8, np.float32)

    def quantize(fmt, ds, *extra, name=None):
        out = os.path.join(tmp, (name or fmt) + ".h5")
        r = run("--format", fmt, "--in", f"{inp}:{ds}", "--out", out, *extra)
        check(r.returncode == 0, f"{fmt} {extra}: rc {r.returncode}: {r.stderr.strip()}")
        return h5py.File(out, "r") if r.returncode == 0 else None

    # ---- shapes and attributes for every format (default scaling)
    for fmt, scaling, bits in [("fp32", "none", 32), ("bf16", "none", 16), ("fp16", "none", 16),
                               ("fp8_e4m3", "row", 8), ("fp8_e5m2", "row", 8), ("int8", "row", 8),
                               ("nvfp4", "block", 4), ("mxfp8", "block", 8), ("mxfp4", "block", 4)]:
        f = quantize(fmt, "/layers/0/state")
        if f is None:
            continue
        d = f["/dequantized"]
        check(d.shape == x4.shape and d.dtype == np.float32, f"{fmt}: dequantized {d.shape} {d.dtype}")
        check(f.attrs["format"] == fmt and f.attrs["scaling"] == scaling and f.attrs["rounding"] == "rne",
              f"{fmt}: attrs {dict(f.attrs)}")
        check(int(f.attrs["heads"]) == 6 and int(f.attrs["rows"]) == 4 and int(f.attrs["K"]) == 64, f"{fmt}: dims")
        check(f["/codes"].shape == (6, 4 * 64 * bits // 8) and f["/codes"].dtype == np.uint8, f"{fmt}: codes shape")
        err = np.abs(d[...] - x4).max() / np.abs(x4).max()
        check(err <= {32: 0, 16: 2 ** -8, 8: 0.07, 4: 0.35}[bits], f"{fmt}: max rel error {err}")

    # ---- bf16 bits == numpy's RNE
    f = quantize("bf16", "/layers/0/state")
    want, wcodes = bf16_rne(x4)
    check(np.array_equal(f["/dequantized"][...], want), "bf16: dequantized != RNE bf16")
    check(np.array_equal(f["/codes"][...].view("<u2").reshape(-1), wcodes.reshape(-1)), "bf16: codes layout")

    # ---- fp8 e4m3 with per-row FP32 scales: scale = amax/448, deq = e4m3(code) * scale
    f = quantize("fp8_e4m3", "/layers/0/state")
    sc = f["/scales"][...].view("<f4")  # [6, 4]
    amax = np.abs(x4).reshape(6, 4, 64).max(axis=2)
    check(np.array_equal(sc, np.where(amax == 0, np.float32(1), (amax / np.float32(448)).astype(np.float32))),
          "fp8 row scales != amax/448")
    deq = e4m3_value(f["/codes"][...].reshape(6, 4, 64)) * sc[:, :, None]
    check(np.array_equal(deq.reshape(x4.shape), f["/dequantized"][...]), "fp8: codes*scales != dequantized")

    # ---- int8 head scaling
    f = quantize("int8", "/layers/0/state", "--scaling", "head", name="int8_head")
    sc = f["/scales"][...].view("<f4")  # [6, 1]
    codes = f["/codes"][...].view(np.int8).reshape(6, 4, 64)
    check(np.abs(codes).max() == 127 and codes.min() >= -127, "int8: code range")
    check(np.array_equal((codes.astype(np.float32) * sc[:, :, None]).reshape(x4.shape), f["/dequantized"][...]),
          "int8: codes*scale != dequantized")

    # ---- int16 / int8 / fp8 with per-column FP32 scales: scale[h, k] = amax over the rows / kMax
    for fmt, kmax, ct in (("int16", 32767, "<i2"), ("int8", 127, np.int8), ("fp8_e4m3", 448, None)):
        f = quantize(fmt, "/layers/0/state", "--scaling", "column", name=fmt + "_column")
        if f is None:
            continue
        sc = f["/scales"][...].view("<f4")  # [6, 64]
        amax = np.abs(x4).reshape(6, 4, 64).max(axis=1)
        check(np.array_equal(sc, np.where(amax == 0, np.float32(1), (amax / np.float32(kmax)).astype(np.float32))),
              f"{fmt} column scales != amax/{kmax}")
        raw = f["/codes"][...]
        vals = e4m3_value(raw.reshape(6, 4, 64)) if ct is None else raw.view(ct).reshape(6, 4, 64).astype(np.float32)
        check(np.array_equal((vals * sc[:, None, :]).reshape(x4.shape), f["/dequantized"][...]),
              f"{fmt} column: codes*scale != dequantized")

    # ---- int8_ef (a first store): int8 column codes and scales, then the 4-bit residuals of this store's error
    f = quantize("int8_ef", "/layers/0/state", name="int8_ef")  # default scaling: column
    if f is not None:
        check(f.attrs["scaling"] == "column" and f["/codes"].shape == (6, 256 + 128), "int8_ef: layout")
        sc = f["/scales"][...].view("<f4")  # [6, 64]
        raw = f["/codes"][...]
        q = raw[:, :256].view(np.int8).reshape(6, 4, 64).astype(np.float32)
        check(np.array_equal((q * sc[:, None, :]).reshape(x4.shape), f["/dequantized"][...]),
              "int8_ef: codes*scale != dequantized (the residual is not decoded)")
        nib = np.stack([raw[:, 256:] & 0xF, raw[:, 256:] >> 4], axis=-1).reshape(6, 4, 64).astype(np.int64)
        res = np.where(nib >= 8, nib - 16, nib)
        err = x4.reshape(6, 4, 64).astype(np.float64) - (q * sc[:, None, :]).astype(np.float64)
        check(np.all(np.abs(err - res * sc[:, None, :] / 15) <= sc[:, None, :] / 30 * (1 + 1e-5)),
              "int8_ef: residual != rint(15 * error / scale)")

    # ---- fp8 e4m3 with per-32-row-tile scales and headroom: scale = tile amax / 240 (4 rows: one tile per head)
    f = quantize("fp8_e4m3", "/layers/0/state", "--scaling", "tile", name="fp8_tile")
    if f is not None:
        sc = f["/scales"][...].view("<f4")  # [6, 1]
        amax = np.abs(x4).reshape(6, 4 * 64).max(axis=1)
        check(np.array_equal(sc[:, 0], (amax / np.float32(240)).astype(np.float32)), "fp8 tile scales != amax/240")
        codes = f["/codes"][...].reshape(6, 4, 64)
        check(np.abs(e4m3_value(codes)).max() <= 240, "fp8 tile: codes above 240")
        check(np.array_equal((e4m3_value(codes) * sc[:, :, None]).reshape(x4.shape), f["/dequantized"][...]),
              "fp8 tile: codes*scale != dequantized")

    # ---- nvfp4: float32 head amax + E4M3 per 16, nibbles low = even element (TE dequantize formula)
    for ds, shape in (("/layers/0/state", x4.shape), ("/flat", x2.shape)):
        f = quantize("nvfp4", ds, name="nvfp4_" + ds.strip("/").replace("/", "_"))
        V, K = shape[-2], shape[-1]
        H = int(np.prod(shape[:-2], dtype=np.int64))
        nb = -(-K // 16)
        raw = f["/scales"][...]
        check(raw.shape == (H, 4 + V * nb), "nvfp4: scales shape")
        A = raw[:, :4].copy().view("<f4")[:, 0]
        xs = (x4 if ds != "/flat" else x2).reshape(H, V, K)
        check(np.array_equal(A, np.abs(xs).reshape(H, -1).max(axis=1)), "nvfp4: head amax")
        bs = e4m3_value(raw[:, 4:]).reshape(H, V, nb)
        codes = f["/codes"][...]
        deq = np.empty((H, V, K), np.float32)
        for h in range(H):
            el = E2M1[nibbles(codes[h], V * K)].reshape(V, K)
            blk = ((bs[h] * A[h]) * np.float32(1.0 / 2688.0)).astype(np.float32)  # [V, nb]
            deq[h] = el * np.repeat(blk, 16, axis=1)[:, :K]
        check(np.array_equal(deq.reshape(shape), f["/dequantized"][...]), f"nvfp4 {ds}: layout decode mismatch")
    check(np.all(f["/codes"].shape == (1, 100)), "nvfp4 flat: 5*40/2 code bytes")

    # ---- mxfp4 on K = 40 (a short second block): E8M0 per 32, 2^(c-127)
    f = quantize("mxfp4", "/flat", name="mxfp4_flat")
    sc = f["/scales"][...].reshape(5, 2).astype(np.int64)
    amax = [np.abs(x2[:, :32]).max(axis=1), np.abs(x2[:, 32:]).max(axis=1)]
    for b in range(2):
        want = np.floor(np.log2(amax[b])).astype(np.int64) - 2 + 127
        check(np.array_equal(sc[:, b], want), f"mxfp4: E8M0 scales block {b}")
    el = E2M1[nibbles(f["/codes"][0], 200)].reshape(5, 40)
    X = np.exp2(sc.astype(np.float64) - 127).astype(np.float32)
    check(np.array_equal(el * np.repeat(X, 32, axis=1)[:, :40], f["/dequantized"][...]), "mxfp4: layout decode")

    # ---- stochastic rounding: reproducible, seed-dependent, unbiased-ish
    a = quantize("fp8_e5m2", "/layers/0/state", "--rounding", "sr", "--seed", "5", name="sr_a")
    b = quantize("fp8_e5m2", "/layers/0/state", "--rounding", "sr", "--seed", "5", name="sr_b")
    c = quantize("fp8_e5m2", "/layers/0/state", "--rounding", "sr", "--seed", "6", name="sr_c")
    check(np.array_equal(a["/codes"][...], b["/codes"][...]), "sr: same seed, different codes")
    check(not np.array_equal(a["/codes"][...], c["/codes"][...]), "sr: seed has no effect")
    check(int(a.attrs["seed"]) == 5 and a.attrs["rounding"] == "sr", "sr: attrs")

    # ---- bad input: exit 2, one line naming the file and the field
    bad = [
        (["--format", "bf16", "--in", f"{inp}:/nope"], [inp, "/nope"]),
        (["--format", "bf16", "--in", f"{inp}:/vec"], [inp, "/vec", "rank"]),
        (["--format", "bf16", "--in", os.path.join(tmp, "missing.h5") + ":/x"], ["missing.h5"]),
        (["--format", "fp6", "--in", f"{inp}:/flat"], ["unknown format 'fp6'"]),
        (["--format", "nvfp4", "--scaling", "row", "--in", f"{inp}:/flat"], ["'row'", "nvfp4"]),
        (["--format", "int8", "--scaling", "none", "--in", f"{inp}:/flat"], ["'none'", "int8"]),
        (["--format", "fp32", "--rounding", "sr", "--in", f"{inp}:/flat"], ["sr", "fp32"]),
        (["--format", "bf16", "--rounding", "up", "--in", f"{inp}:/flat"], ["unknown rounding 'up'"]),
    ]
    for args, needles in bad:
        r = run(*args, "--out", os.path.join(tmp, "bad.h5"))
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 2, f"{args}: rc {r.returncode} (want 2)")
        check(len(lines) == 1 and all(n in lines[0] for n in needles), f"{args}: stderr {r.stderr!r}")
        check(not os.path.exists(os.path.join(tmp, "bad.h5")), f"{args}: left an output file")

    print(f"quantize CLI: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
