#!/usr/bin/env python3
"""Independent oracle for src/formats: recompute every decode table and the encodings of a fixed set of tricky
floats with ml_dtypes (float8_e4m3fn, float8_e5m2, float4_e2m1fn, float8_e8m0fnu, bfloat16) and numpy (float16,
int8 rint), and fail on any mismatch.

Usage: check_ml_dtypes.py <path to the formats_dump binary>

Documented semantics that differ from a plain ml_dtypes cast (and are checked as such):
  * fp8/fp4 encodes are satfinite (CUDA __NV_SATFINITE): the oracle clips to +-max before the cast.
  * NaN -> 0x7F for e4m3/e5m2 and 0x7FFF for bf16/fp16 (CUDA's canonical NaN; ml_dtypes keeps the sign).
  * e2m1 has no NaN: CUDA (and we) map NaN to +6 (0x7).
  * int8: rint (half to even) of x, clamped to [-127, 127]; NaN -> 0. int16: the same on [-32767, 32767].
  * MX scale: E8M0 code = clamp(floor(log2(amax)) - emax + 127, 0, 254); NaN/Inf amax -> 0xFF.
"""
import subprocess
import sys

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:  # the venv exists (the CTest wrapper checked) but lacks the pinned packages
    print(f"FAIL: {e}; install scripts/requirements-test.txt into the venv")
    sys.exit(1)


def f32(bits):
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout.split("\n")
    mism = []
    n_dec = n_enc = n_mx = 0

    types = {
        "e4m3": (ml_dtypes.float8_e4m3fn, np.uint8),
        "e5m2": (ml_dtypes.float8_e5m2, np.uint8),
        "e8m0": (ml_dtypes.float8_e8m0fnu, np.uint8),
        "bf16": (ml_dtypes.bfloat16, np.uint16),
        "fp16": (np.float16, np.uint16),
    }
    decode = {k: [] for k in list(types) + ["e2m1", "int8"]}
    enc_rows, mx_rows = [], []
    for line in out:
        if not line:
            continue
        f = line.split()
        if f[0] == "decode":
            decode[f[1]].append((int(f[2]), int(f[3], 16)))
        elif f[0] == "encode":
            enc_rows.append([int(f[1], 16)] + [int(v) for v in f[2:]])
        elif f[0] == "mxscale":
            mx_rows.append((int(f[1], 16), int(f[2]), int(f[3])))

    # ---- decode tables
    def same(ours_bits, want):
        ours = np.array([ours_bits], dtype=np.uint32).view(np.float32)[0]
        want = np.float32(want)
        if np.isnan(want):
            return bool(np.isnan(ours))
        return ours.view(np.uint32) == want.view(np.uint32)

    for name, (t, ut) in types.items():
        rows = decode[name]
        codes = np.array([c for c, _ in rows], dtype=ut)
        want = codes.view(t).astype(np.float32)
        for (c, b), w in zip(rows, want):
            n_dec += 1
            if not same(b, w):
                mism.append(f"decode {name} code {c:#x}: ours {f32(b)!r} ml_dtypes {w!r}")
    rows = decode["e2m1"]
    # float4_e2m1fn codes live in the low nibble of a byte in ml_dtypes' uint8 view
    want = np.array([c for c, _ in rows], dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    for (c, b), w in zip(rows, want):
        n_dec += 1
        if not same(b, w):
            mism.append(f"decode e2m1 code {c:#x}: ours {f32(b)!r} ml_dtypes {w!r}")
    for c, b in decode["int8"]:
        n_dec += 1
        if not same(b, np.float32(np.array([c], dtype=np.uint8).view(np.int8)[0])):
            mism.append(f"decode int8 code {c}")
    if len(decode["e4m3"]) != 256 or len(decode["e2m1"]) != 16 or len(decode["bf16"]) != 65536:
        mism.append("decode tables incomplete")

    # ---- encodings
    arr = np.array(enc_rows, dtype=np.int64)
    xs = arr[:, 0].astype(np.uint32).view(np.float32)
    isnan = np.isnan(xs)
    with np.errstate(invalid="ignore", over="ignore"):
        def cast_bits(t, ut, x):
            return x.astype(t).view(ut).astype(np.int64)

        expect = {
            "e4m3": cast_bits(ml_dtypes.float8_e4m3fn, np.uint8, np.clip(xs, -448.0, 448.0)),
            "e5m2": cast_bits(ml_dtypes.float8_e5m2, np.uint8, np.clip(xs, -57344.0, 57344.0)),
            "e2m1": cast_bits(ml_dtypes.float4_e2m1fn, np.uint8, np.clip(xs, -6.0, 6.0)) & 0xF,
            "bf16": cast_bits(ml_dtypes.bfloat16, np.uint16, xs),
            "fp16": cast_bits(np.float16, np.uint16, xs),
            "int8": np.clip(np.rint(np.where(isnan, 0, xs).astype(np.float64)), -127, 127).astype(np.int64),
            "int16": np.clip(np.rint(np.where(isnan, 0, xs).astype(np.float64)), -32767, 32767).astype(np.int64),
        }
    nan_code = {"e4m3": 0x7F, "e5m2": 0x7F, "e2m1": 0x7, "bf16": 0x7FFF, "fp16": 0x7FFF, "int8": 0, "int16": 0}
    for col, name in enumerate(["e4m3", "e5m2", "e2m1", "bf16", "fp16", "int8", "int16"], start=1):
        ours = arr[:, col]
        want = np.where(isnan, nan_code[name], expect[name])
        bad = np.nonzero(ours != want)[0]
        n_enc += len(ours)
        for i in bad[:20]:
            mism.append(f"encode {name} x={xs[i]!r} ({arr[i, 0]:08x}): ours {ours[i]:#x} oracle {want[i]:#x}")
        if len(bad) > 20:
            mism.append(f"encode {name}: {len(bad) - 20} more mismatches")
    # bf16x2 (compensated hi/lo): hi = bf16(x), lo = bf16(x - hi) in float32 (exact), from ml_dtypes; the documented
    # edges: NaN / Inf -> hi alone; a finite x that rounds to Inf keeps hi = +-max; lo = 0 takes hi's sign.
    fin = np.isfinite(xs)
    with np.errstate(invalid="ignore", over="ignore"):
        hi = xs.astype(ml_dtypes.bfloat16)
        ovf = fin & np.isinf(hi.astype(np.float32))
        hi = np.where(ovf, np.copysign(np.float32(ml_dtypes.finfo(ml_dtypes.bfloat16).max), xs).astype(ml_dtypes.bfloat16), hi)
        hi_f = hi.astype(np.float32)
        r = np.where(fin, xs - hi_f, np.float32(0)).astype(np.float32)
        hi_b = hi.view(np.uint16).astype(np.int64)
        lo_b = np.where(r == 0, hi_b & 0x8000, r.astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.int64))
        want_code = np.where(isnan, 0x7FFF, np.where(fin, hi_b | (lo_b << 16), hi_b))
        lo_f = lo_b.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
        carry = fin & np.isinf(hi_f + lo_f)  # documented: lo one code nearer zero where the sum would pass FLT_MAX
        lo_b = np.where(carry, lo_b - 1, lo_b)
        want_code = np.where(isnan, 0x7FFF, np.where(fin, hi_b | (lo_b << 16), hi_b))
        lo_f = lo_b.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
        dec = np.where(fin, hi_f + lo_f, hi_f).astype(np.float32)
    ours_code, ours_dec = arr[:, 8], arr[:, 9].astype(np.uint32).view(np.float32)
    n_enc += len(ours_code)
    for i in np.nonzero(ours_code != want_code)[0][:20]:
        mism.append(f"encode bf16x2 x={xs[i]!r}: ours {ours_code[i]:#x} oracle {want_code[i]:#x}")
    same_dec = (ours_dec.view(np.uint32) == dec.view(np.uint32)) | (isnan & np.isnan(ours_dec))
    for i in np.nonzero(~same_dec)[0][:20]:
        mism.append(f"decode bf16x2 x={xs[i]!r}: ours {ours_dec[i]!r} oracle {dec[i]!r}")
    with np.errstate(invalid="ignore", over="ignore"):
        rel = np.abs(ours_dec[fin].astype(np.float64) - xs[fin]) > np.abs(xs[fin].astype(np.float64)) * 2.0 ** -16 + 2.0 ** -134
    if np.any(rel):
        mism.append(f"bf16x2: {int(rel.sum())} finite x decode farther than 2^-16 |x| + 2^-134")
    n_bf16x2 = int(fin.sum())

    # the e2m1 NaN convention: a plain ml_dtypes cast of NaN is not +6; make sure the exception above is the only one
    assert nan_code["e2m1"] == 0x7

    # ---- MX shared scale: floor(log2(amax)) - emax, via frexp, checked by decoding with float8_e8m0fnu
    for bits, c8, c2 in mx_rows:
        a = f32(bits)
        for code, emax in ((c8, 8), (c2, 2)):
            n_mx += 1
            if not np.isfinite(a):
                want = 0xFF
            elif a == 0:
                want = 0
            else:
                _, e = np.frexp(np.float64(a))  # a = m * 2^e, m in [0.5, 1)
                want = int(min(max(int(e) - 1 - emax + 127, 0), 254))
            if code != want:
                mism.append(f"mxscale amax={a!r} emax={emax}: ours {code} oracle {want}")
            elif want != 0xFF:
                x = np.array([code], dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)[0]
                if a != 0 and want > 0 and not (x * 2.0**emax <= a < x * 2.0 ** (emax + 1)):
                    mism.append(f"mxscale amax={a!r} emax={emax}: 2^(floor log2) property fails for code {code}")

    print(f"ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}: {n_dec} decodes, {n_enc} encodes, "
          f"{n_mx} MX scales checked, {len(mism)} mismatches")
    for m in mism[:100]:
        print("MISMATCH", m)
    return 1 if mism else 0


if __name__ == "__main__":
    sys.exit(main())
