#!/usr/bin/env python3
"""Independent oracle for int8_ef (INT8 with an error-feedback residual), written from the rule documented in
src/formats/README.md ("Error-feedback INT8"), not from the C++ code. Every operation is float32, round to nearest:

  store t:  r     = res_{t-1} * (scale_{t-1} / 15)        (no previous store, or scale_{t-1} Inf / NaN: y = x)
            y     = x + r
            scale = amax(y over the group, NaN ignored) / 127; 1 if amax = 0; FLT_MIN if below it; one ulp lower
                    where scale * 127 would overflow
            inv   = 1 / scale; q = clamp(rint(y * inv), -127, 127), NaN -> 0
            e     = y - q * scale
            res   = clamp(rint((e * inv) * 15), -8, 7), NaN -> 0
  decode:   q * scale
  layout:   codes = int8 [V][K], then 4-bit two's complement residuals two a byte (even element in the low nibble);
            scales = float32 little-endian: column [K], row [V], head [1], block [V][ceil(K/32)]

Usage: check_feedback.py <path to the formats_feedback_dump binary>   (dump_feedback.cpp describes its output)
The oracle replays every case's sequence of stores from its own stored state (it reads only the dumped x's) and
compares the codes, residuals, scales and decoded values bit for bit."""
import subprocess
import sys

try:
    import numpy as np
except ImportError as e:
    print(f"FAIL: {e} (install scripts/requirements-test.txt)")
    sys.exit(1)

F32 = np.float32
FLT_MIN = np.float32(np.finfo(np.float32).tiny)


def scale_from_amax(amax):
    """The int8 group scale of each amax (float32 array)."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = (amax / F32(127)).astype(F32)
        s = np.where(s < FLT_MIN, FLT_MIN, s)
        over = np.isinf(s * F32(127)) & ~np.isinf(s)
        s = np.where(over, np.nextafter(s, F32(0)), s)
        return np.where(amax == 0, F32(1), s).astype(F32)


def rint_clamp(t, lo, hi):
    with np.errstate(invalid="ignore"):
        r = np.rint(np.clip(t, F32(lo), F32(hi)))
    return np.where(np.isnan(t), 0, r).astype(np.int64)


def group_ids(scaling, V, K):
    """The scale index of every element [V][K] and the number of scales."""
    v, k = np.meshgrid(np.arange(V), np.arange(K), indexing="ij")
    if scaling == "column":
        return k, K
    if scaling == "row":
        return v, V
    if scaling == "head":
        return np.zeros_like(v), 1
    nb = (K + 31) // 32
    return v * nb + k // 32, V * nb


class Store:
    """The oracle's own stored state of one head: q [V][K], res [V][K], scales [n]."""

    def __init__(self, scaling, V, K):
        self.scaling, self.V, self.K = scaling, V, K
        self.gid, self.ns = group_ids(scaling, V, K)
        self.q = self.res = self.sc = None

    def store(self, x):
        with np.errstate(over="ignore", invalid="ignore"):
            if self.q is None:
                y = x.copy()
            else:
                ps = self.sc[self.gid]
                r = (self.res.astype(F32) * (ps / F32(15)).astype(F32)).astype(F32)
                y = np.where(np.isfinite(ps), (x + r).astype(F32), x).astype(F32)
            amax = np.zeros(self.ns, dtype=F32)
            np.fmax.at(amax, self.gid.ravel(), np.abs(y).ravel())  # fmax ignores NaN
            sc = scale_from_amax(amax)
            inv = (F32(1) / sc).astype(F32)
            q = rint_clamp((y * inv[self.gid]).astype(F32), -127, 127)
            e = (y - (q.astype(F32) * sc[self.gid]).astype(F32)).astype(F32)
            res = rint_clamp(((e * inv[self.gid]).astype(F32) * F32(15)).astype(F32), -8, 7)
        self.q, self.res, self.sc = q, res, sc

    def code_bytes(self):
        n = self.V * self.K
        nib = (self.res.ravel() & 0xF).astype(np.uint8)
        if n % 2:
            nib = np.append(nib, np.uint8(0))
        packed = (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)
        return np.concatenate([(self.q.ravel() & 0xFF).astype(np.uint8), packed]).tobytes()

    def decoded(self):
        with np.errstate(invalid="ignore", over="ignore"):
            return (self.q.astype(F32) * self.sc[self.gid]).astype(F32)


def floats(hexes):
    return np.array([int(h, 16) for h in hexes], dtype=np.uint32).view(F32)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout.splitlines()
    bad, n_cases, n_stores, n_fed = [], 0, 0, 0
    i = 0
    while i < len(out):
        _, name, scaling, V, K, stores = out[i].split()
        V, K, stores = int(V), int(K), int(stores)
        i += 1
        n_cases += 1
        st = Store(scaling, V, K)
        prev_res = None
        for t in range(stores):
            x = floats(out[i].split()[1:]).reshape(V, K)
            codes = bytes.fromhex(out[i + 1].split()[1])
            scales = bytes.fromhex(out[i + 2].split()[1]) if len(out[i + 2].split()) > 1 else b""
            dec = floats(out[i + 3].split()[1:]).reshape(V, K)
            i += 4
            st.store(x)
            n_stores += 1
            if prev_res is not None and np.any(prev_res != 0):
                n_fed += 1  # a store whose input was changed by the previous residual
            prev_res = st.res
            where = f"{name} store {t}"
            if codes != st.code_bytes():
                a, b = np.frombuffer(codes, np.uint8), np.frombuffer(st.code_bytes(), np.uint8)
                j = int(np.nonzero(a != b)[0][0]) if a.size == b.size else -1
                bad.append(f"{where}: codes differ (first byte {j} of {a.size}: ours {a[j] if j >= 0 else '?'} "
                           f"oracle {b[j] if j >= 0 else '?'})")
            if scales != st.sc.astype("<f4").tobytes():
                bad.append(f"{where}: scales differ")
            want = st.decoded()
            same = (dec.view(np.uint32) == want.view(np.uint32)) | (np.isnan(dec) & np.isnan(want))
            if not np.all(same):
                j = np.argwhere(~same)[0]
                bad.append(f"{where}: decoded differs at {tuple(j)}: ours {dec[tuple(j)]!r} oracle {want[tuple(j)]!r}")
            # the documented invariants: |res| <= 8 steps of 1/16, NaN elements stored as code 0 and residual 0
            nan = np.isnan(x)
            if np.any(st.q[nan] != 0) or np.any(st.res[nan] != 0):
                bad.append(f"{where}: a NaN element is not stored as 0 / 0")
    for b in bad[:30]:
        print("MISMATCH", b)
    print(f"int8_ef: {n_cases} cases, {n_stores} stores ({n_fed} fed by a nonzero residual) replayed by the numpy "
          f"oracle: {len(bad)} mismatches")
    if n_fed < n_cases:
        print("FAIL: too few stores exercised the residual feedback")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
