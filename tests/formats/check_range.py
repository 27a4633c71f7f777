#!/usr/bin/env python3
"""Scaled codecs over the whole finite float range (src/formats/README.md, "Range"): runs formats_range_dump and
checks every state it prints.

Usage: check_range.py <path to the formats_range_dump binary>

For every format x scaling x rounding and head states whose row magnitudes span 2^-149 .. FLT_MAX:
  * a finite input decodes to finite values, zeros to zeros (NaN never passes);
  * each element is within the format's bound of its input: relative part (half a code step at the top of the group,
    doubled for stochastic rounding) plus an absolute floor where the format documents one (the scale floor FLT_MIN of
    fp8/int8, NVFP4's E4M3 block-scale range below the head amax, MX's 2^-127 shared-exponent clamp);
  * with RNE: bit-identical to an independent float32 recomputation with ml_dtypes / numpy of the documented rule:
    fp8/int8: scale = amax / kMax (1 if amax = 0), raised to FLT_MIN, one ulp lower where scale * kMax would
    overflow; code = satfinite cast of x * (1 / scale); decoded = value(code) * scale. NVFP4: TE's two-level
    formulas with the range edges of src/formats/README.md. MX: OCP's E8M0 scale and satfinite elements.
"""
import subprocess
import sys

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:
    print(f"FAIL: {e}; install scripts/requirements-test.txt into the venv")
    sys.exit(1)

F32 = np.float32
FLT_MIN = F32(np.finfo(np.float32).tiny)
# int8_ef here is a first store (no residual fed in): its decoded values are int8's
KMAX = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0, "int8": 127.0, "int8_ef": 127.0, "int16": 32767.0}
INT = {"int8": np.int8, "int8_ef": np.int8, "int16": np.int16}
ELEM = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}
# Relative error of one RNE code step at the top of a group (half the spacing near kMax, relative to the group amax).
REL = {"fp8_e4m3": 2.0 ** -4, "fp8_e5m2": 2.0 ** -3, "int8": 0.5 / 127, "int8_ef": 0.5 / 127, "int16": 0.5 / 32767, "nvfp4": 0.3, "mxfp8": 0.14, "mxfp4": 0.3}
BLOCK = {"nvfp4": 16, "mxfp8": 32, "mxfp4": 32}


def groups(scaling, V, K, block=32):
    """Index arrays of the scale groups of a [V, K] state."""
    if scaling in ("head", "none"):
        return [np.s_[:, :]]
    if scaling == "row":
        return [np.s_[v, :] for v in range(V)]
    if scaling == "column":
        return [np.s_[:, k] for k in range(K)]
    if scaling == "tile":
        return [np.s_[v0:v0 + 32, :] for v0 in range(0, V, 32)]
    return [np.s_[v, k0:min(k0 + block, K)] for v in range(V) for k0 in range(0, K, block)]


def oracle_scale(amax, kmax):
    if amax == 0:
        return F32(1)
    s = F32(amax) / F32(kmax)
    if s < FLT_MIN:
        return FLT_MIN
    with np.errstate(over="ignore"):
        if np.isinf(s * F32(kmax)):
            return np.nextafter(s, F32(0))
    return s


def oracle_decode(fmt, x, s):
    with np.errstate(over="ignore", invalid="ignore"):
        xs = x * (F32(1) / s)
    kmax = F32(KMAX[fmt])
    xs = np.clip(xs, -kmax, kmax)
    if fmt in INT:
        return (np.rint(xs).astype(INT[fmt]).astype(F32) * s).astype(F32)  # integer codes: no -0
    return (xs.astype(ELEM[fmt]).astype(F32) * s).astype(F32)


def satcast(v, dtype, vmax):
    """satfinite RNE cast through ml_dtypes, back to float32."""
    return np.clip(v, -vmax, vmax).astype(dtype).astype(F32)


FLT_MAX = F32(np.finfo(np.float32).max)


def oracle_nvfp4(x):
    """The documented NVFP4 rule (TE in the normal range, src/formats/README.md "Range" at the edges), in float32."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        A = F32(np.max(np.abs(x)))
        s_enc = F32(2688) / A
        if np.isinf(s_enc):
            s_enc = FLT_MAX
        if A == 0 or s_enc == 0:
            s_enc = F32(1)
        s_fp4 = s_enc * F32(1.0 / 6.0)
        s_dec = F32(1) / s_enc
        k_dec = F32(1.0 / (6.0 * 448.0))
        y = np.empty_like(x)
        for v in range(x.shape[0]):
            for k0 in range(0, x.shape[1], 16):
                blk = x[v, k0:k0 + 16]
                e = satcast(np.minimum(F32(np.max(np.abs(blk))) * s_fp4, FLT_MAX), ml_dtypes.float8_e4m3fn, F32(448))
                mult = np.minimum(F32(1) / (e * s_dec), FLT_MAX)
                codes = satcast(blk * mult, ml_dtypes.float4_e2m1fn, F32(6))
                m = e * A
                if np.isinf(m):
                    dm = ((e * (A * F32(2.0 ** -12))) * k_dec) * F32(2.0 ** 12)
                elif A > 0 and np.isinf(F32(2688) / A):
                    dm = F32(1) / mult
                else:
                    dm = m * k_dec
                y[v, k0:k0 + 16] = np.clip(codes * dm, -FLT_MAX, FLT_MAX)
    return y


def oracle_mx(x, fmt):
    """OCP MX: E8M0 code = clamp(floor(log2 amax) - emax + 127, 0, 254) (0 for amax 0), elements x * 2^-e."""
    emax, elem, vmax = (8, ml_dtypes.float8_e4m3fn, F32(448)) if fmt == "mxfp8" else (2, ml_dtypes.float4_e2m1fn, F32(6))
    y = np.empty_like(x)
    for v in range(x.shape[0]):
        for k0 in range(0, x.shape[1], 32):
            blk = x[v, k0:k0 + 32]
            amax = float(np.max(np.abs(blk)))
            code = 0 if amax == 0 else min(max(np.frexp(amax)[1] - 1 - emax + 127, 0), 254)
            inv, scale = F32(2.0 ** (127 - code)), F32(2.0 ** (code - 127))
            y[v, k0:k0 + 32] = satcast(blk * inv, elem, vmax) * scale
    return y


def check_state(fmt, scaling, rounding, V, K, x, y, sbytes):
    errs = []
    fin = np.isfinite(x)
    if not np.all(np.isfinite(y[fin])):
        errs.append(f"non-finite output for finite input: {y[fin][~np.isfinite(y[fin])][:3]}")
    if np.any(y[x == 0] != 0):
        errs.append("a zero does not decode to zero")
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    err = np.abs(yd - xd)
    sr = 2.0 if rounding != "rne" else 1.0  # stochastic (sr, philox): within one step
    if fmt in KMAX:
        for g in groups(scaling, V, K):
            amax = float(np.max(np.abs(xd[g])))
            # unscaled fp8 (none): scale 1, values past kMax saturate to it
            qmax = 240.0 if scaling == "tile" else KMAX[fmt]  # tile: SGLang's headroom, amax / 240
            s = 1.0 if scaling == "none" else max(amax / qmax, float(FLT_MIN))
            floor = s * (2.0 ** -9 if fmt == "fp8_e4m3" else 2.0 ** -16 if fmt == "fp8_e5m2" else 0.5)
            rel = REL[fmt] * amax if fmt in INT else REL[fmt] * np.abs(xd[g])
            bound = sr * (rel + floor * (1 + 2.0 ** -20)) + amax * 2.0 ** -22
            if scaling == "none":
                bound = bound + np.maximum(np.abs(xd[g]) - KMAX[fmt], 0.0)
            if np.any(err[g] > bound):
                i = int(np.argmax(err[g] - bound))
                errs.append(f"group {g}: |y - x| = {err[g].flat[i]:.3e} > bound {np.broadcast_to(bound, err[g].shape).flat[i]:.3e}"
                            f" (x = {xd[g].flat[i]:.4e}, y = {yd[g].flat[i]:.4e})")
            if rounding == "rne":
                want = oracle_decode(fmt, x[g], F32(1) if scaling == "none" else oracle_scale(np.max(np.abs(x[g])), qmax))
                if not np.array_equal(want.view(np.uint32), y[g].view(np.uint32)):
                    j = int(np.argmax(want.view(np.uint32) != y[g].view(np.uint32)))
                    errs.append(f"group {g}: oracle {want.flat[j]!r} != ours {y[g].flat[j]!r} (x = {x[g].flat[j]!r})")
    else:
        if rounding == "rne":
            want = oracle_nvfp4(x) if fmt == "nvfp4" else oracle_mx(x, fmt)
            if not np.array_equal(want.view(np.uint32), y.view(np.uint32)):
                j = int(np.argmax(want.view(np.uint32) != y.view(np.uint32)))
                errs.append(f"oracle {want.flat[j]!r} != ours {y.flat[j]!r} (x = {x.flat[j]!r})")
        head = float(np.max(np.abs(xd)))
        for g in groups("block", V, K, BLOCK[fmt]):
            bmax = float(np.max(np.abs(xd[g])))
            # NVFP4: E4M3 block scales reach 2^-9 / 448 of the head amax; MX: the shared exponent stops at 2^-127.
            floor = head * 2.0 ** -14 + 2.0 ** -135 if fmt == "nvfp4" else 2.0 ** -126
            bound = sr * (REL[fmt] * bmax + floor)
            if np.any(err[g] > bound):
                i = int(np.argmax(err[g] - bound))
                errs.append(f"block {g}: |y - x| = {err[g].flat[i]:.3e} > bound {bound:.3e} (x = {xd[g].flat[i]:.4e},"
                            f" y = {yd[g].flat[i]:.4e}, head amax {head:.3e})")
    return errs


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    lines = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout.split("\n")
    n, bad, seen = 0, 0, set()
    for i in range(0, len(lines) - 3, 4):
        _, fmt, scaling, rounding, V, K = lines[i].split()
        V, K = int(V), int(K)
        x = np.array([int(h, 16) for h in lines[i + 1].split()[1:]], dtype=np.uint32).view(F32).reshape(V, K)
        y = np.array([int(h, 16) for h in lines[i + 2].split()[1:]], dtype=np.uint32).view(F32).reshape(V, K)
        errs = check_state(fmt, scaling, rounding, V, K, x, y, lines[i + 3][2:])
        n += 1
        seen.add((fmt, scaling, rounding))
        if errs:
            bad += 1
            if bad <= 20:
                print(f"FAIL {fmt} {scaling} {rounding} (row magnitudes {np.max(np.abs(x), axis=1)}):")
                for e in errs[:3]:
                    print("   ", e)
    print(f"{n} states, {len(seen)} format x scaling x rounding combinations, {bad} failing")
    if len(seen) < 15:
        print("FAIL: fewer combinations than expected")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
