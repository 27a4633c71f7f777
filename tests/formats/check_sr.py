#!/usr/bin/env python3
"""Independent oracle for src/formats' stochastic rounding (SR): the counter hash and the rounding rule re-written
here from their documented definition (src/formats/README.md, "Stochastic rounding"), not from the C++ code:

  bits(seed, head, v, k, step): h = mix(seed); h = mix(h ^ (head << 32 | step)); h = mix(h ^ (v << 32 | k));
                                bits = h >> 32, where mix is the splitmix64 finalizer (Steele, Lea, Flood 2014):
                                z += 0x9E3779B97F4A7C15; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9;
                                z = (z ^ z >> 27) * 0x94D049BB133111EB; z ^= z >> 31   (all mod 2^64)
  SR of x between its neighbours lo <= |x| < hi (in magnitude): hi iff bits < floor((|x| - lo) / (hi - lo) * 2^32).

Philox rounding (Rounding::philox) takes its bits from Philox-4x32 (Salmon et al. 2011; Random123's philox4x32_R),
written here from the published definition: per round (hi0, lo0) = mulhilo(0xD2511F53, c0),
(hi1, lo1) = mulhilo(0xCD9E8D57, c2), c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0); the key takes the Weyl steps
k0 += 0x9E3779B9, k1 += 0xBB67AE85 between rounds; checked against Random123's known-answer vectors (kat_vectors).
The bits of element (v, k): word 0 of Philox(counter (k, v, head, step), key (seed & 0xFFFFFFFF, seed >> 32)).

Usage: check_sr.py <path to the formats_sr_dump binary>   (dump_sr.cpp describes its output)

Checks, each reported on its own line:
  1. the random bits of element_rand_bits / sr_bits equal this file's hash on a sample of counters (edges included),
     in pure Python integers and in the vectorised numpy form used below;
  2. unscaled codecs (bf16, fp16, e4m3, e5m2 without a scale): for every element and step the decoded value is
     exactly the one the rule above gives, lo and hi taken from the format's grid as ml_dtypes / numpy decode it;
  3. scaled codecs (e4m3 row, int8 row, nvfp4, mxfp8, mxfp4): each element decodes to at most two values that
     bracket x, and the one chosen at each step is the one the rule gives with this file's bits (to 1e-4 of a step);
     column-scaled codecs (e4m3, int8, int16): exactly, every decoded bit (scale = column amax / kMax, the element
     x * (1 / scale) rounded up iff bits < floor(frac * 2^32), decoded code * scale);
  4. statistics over the steps (256) and elements (480 per codec): E[decoded] = x (per element to 5.5 standard
     errors, over all elements to 4, and the mean squared standardized error within 4.5 of its standard deviations of 1: the steps' bits are independent)
     and the fraction rounded up equals the fractional position of x between its neighbours (per tenth of [0, 1],
     to 4 standard errors).
"""
import math
import subprocess
import sys

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:  # the python was found (run_python.sh checked) but lacks the pinned packages
    print(f"FAIL: {e}; install scripts/requirements-test.txt (numpy, ml_dtypes) into that python")
    sys.exit(1)

M64 = (1 << 64) - 1
GOLDEN, MUL1, MUL2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def mix_int(z):
    z = (z + GOLDEN) & M64
    z = ((z ^ (z >> 30)) * MUL1) & M64
    z = ((z ^ (z >> 27)) * MUL2) & M64
    return z ^ (z >> 31)


def bits_int(seed, head, v, k, step):
    h = mix_int(seed)
    h = mix_int(h ^ ((head << 32) | step))
    h = mix_int(h ^ ((v << 32) | k))
    return h >> 32


def mix_np(z):
    with np.errstate(over="ignore"):
        z = z + np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(MUL1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(MUL2)
    return z ^ (z >> np.uint64(31))


def bits_np(seed, head, v, k, step):
    """Vectorised over numpy arrays (broadcast) of v, k, step; seed and head are Python ints."""
    v, k, step = (np.asarray(a, dtype=np.uint64) for a in (v, k, step))
    h = mix_np(np.full(np.broadcast(v, k, step).shape, seed, dtype=np.uint64))
    h = mix_np(h ^ ((np.uint64(head) << np.uint64(32)) | step))
    h = mix_np(h ^ ((v << np.uint64(32)) | k))
    return (h >> np.uint64(32)).astype(np.uint64)


M32 = 0xFFFFFFFF
PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
# Random123 kat_vectors, philox4x32: rounds, counter (4 words), key (2 words), expected output (4 words).
PHILOX_KAT = [
    (7, [~0 & M32] * 4, [~0 & M32] * 2, [0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662]),
    (7, [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
     [0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a]),
    (10, [0] * 4, [0] * 2, [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
    (10, [M32] * 4, [M32] * 2, [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
    (10, [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
     [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]),
]


def philox_np(ctr, key, rounds):
    """Philox-4x32-R, vectorised: ctr a list of 4 uint64 arrays (values < 2^32), key a list of 2."""
    c = [np.asarray(w, dtype=np.uint64) & np.uint64(M32) for w in ctr]
    k0, k1 = (np.asarray(w, dtype=np.uint64) & np.uint64(M32) for w in key)
    for r in range(rounds):
        if r > 0:
            k0, k1 = (k0 + np.uint64(PHILOX_W0)) & np.uint64(M32), (k1 + np.uint64(PHILOX_W1)) & np.uint64(M32)
        p0 = np.uint64(PHILOX_M0) * c[0]  # < 2^64: no overflow
        p1 = np.uint64(PHILOX_M1) * c[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & np.uint64(M32)
        hi1, lo1 = p1 >> np.uint64(32), p1 & np.uint64(M32)
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    return c


def philox_bits_np(seed, head, v, k, step, rounds=10):
    v, k, step = (np.asarray(a, dtype=np.uint64) for a in (v, k, step))
    shape = np.broadcast(v, k, step).shape
    full = lambda val: np.full(shape, val, dtype=np.uint64)  # noqa: E731
    out = philox_np([k + full(0), v + full(0), full(head), step + full(0)], [full(seed & M32), full(seed >> 32)], rounds)
    return out[0]


def f32(hex_tokens):
    return np.array([int(t, 16) for t in hex_tokens], dtype=np.uint32).view(np.float32)


def grid(fmt):
    """Non-negative finite values of an unscaled format, ascending, as float64 (decoded by ml_dtypes / numpy)."""
    if fmt == "bf16":
        codes, t = np.arange(0, 0x7F80, dtype=np.uint16), ml_dtypes.bfloat16
    elif fmt == "fp16":
        codes, t = np.arange(0, 0x7C00, dtype=np.uint16), np.float16
    elif fmt == "fp8_e4m3":
        codes, t = np.arange(0, 0x7F, dtype=np.uint8), ml_dtypes.float8_e4m3fn
    elif fmt == "fp8_e5m2":
        codes, t = np.arange(0, 0x7C, dtype=np.uint8), ml_dtypes.float8_e5m2
    else:
        raise ValueError(fmt)
    g = codes.view(t).astype(np.float64)
    assert np.all(np.diff(g) > 0), fmt
    return g


class Report:
    def __init__(self):
        self.failed = 0

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        self.failed += 0 if ok else 1


def parse(lines):
    samples, rne, configs, philox, pbits = [], None, [], [], []
    cur = None
    for line in lines:
        if not line:
            continue
        f = line.split()
        if f[0] == "bits":
            samples.append((int(f[1], 16), int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6], 16)))
        elif f[0] == "philox":
            philox.append((int(f[1]), [int(t, 16) for t in f[2:6]], [int(t, 16) for t in f[6:8]],
                           [int(t, 16) for t in f[8:12]]))
        elif f[0] == "pbits":
            pbits.append((int(f[1], 16), int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6]), int(f[7], 16)))
        elif f[0] == "rne_bits":
            rne = int(f[1], 16)
        elif f[0] == "config":
            cur = dict(name=f[1], format=f[2], scaling=f[3], V=int(f[4]), K=int(f[5]), steps=int(f[6]),
                       seed=int(f[7], 16), head=int(f[8]), step0=int(f[9]), rounding=f[10], dec=[], step=[])
            configs.append(cur)
        elif f[0] == "x":
            cur["x"] = f32(f[1:])
        elif f[0] == "dec":
            cur["step"].append(int(f[1]))
            cur["dec"].append(f32(f[2:]))
    for c in configs:
        c["dec"] = np.array(c["dec"])  # [steps, V*K] float32
        c["step"] = np.array(c["step"], dtype=np.uint64)
    return samples, rne, configs, philox, pbits


def statistics(rep, name, x, lo, hi, dec, frac, S):
    """x, lo, hi, frac: per element (float64, lo/hi signed like x); dec: [steps, n] float64."""
    two = (frac > 0) & (frac < 1)
    up = (np.abs(dec[:, two]) == np.abs(hi[two])).sum(0)
    p = frac[two]
    step = np.abs(hi[two] - lo[two])
    # E[decoded] = x: the mean over the steps against x, in standard errors of a two-point draw.
    se = step * np.sqrt(p * (1 - p) / S)
    z = (dec[:, two].mean(0) - x[two]) / se
    normal = S * np.minimum(p, 1 - p) >= 10  # where the binomial is near normal
    zn = z[normal]
    if zn.size < 200:
        rep.check(False, f"{name}: statistics: only {zn.size} elements round between two values (>= 200 expected)")
        return
    rep.check(np.abs(zn).max() < 5.5,
              f"{name}: E[decoded] = x per element: max |z| {np.abs(zn).max():.2f} over {normal.sum()} elements "
              f"(< 5.5)")
    ztot = z.sum() / math.sqrt(z.size)
    rep.check(abs(ztot) < 4, f"{name}: E[decoded] = x over all {z.size} rounding elements: z {ztot:+.2f} (|z| < 4)")
    msq = float((zn ** 2).mean())
    band = 4.5 * math.sqrt(2 / zn.size)
    rep.check(abs(msq - 1) < band, f"{name}: mean squared z {msq:.3f} (1 +- {band:.3f}: independent steps)")
    # The fraction rounded up = the fractional position, per tenth of [0, 1].
    worst, what = 0.0, ""
    for b in range(10):
        sel = (p >= b / 10) & (p < (b + 1) / 10)
        if sel.sum() < 5:
            continue
        n = S * sel.sum()
        want = p[sel].mean()
        got = up[sel].sum() / n
        zz = (got - want) * n / math.sqrt(S * (p[sel] * (1 - p[sel])).sum())  # sd of got: sqrt(S sum p(1-p)) / n
        if abs(zz) > abs(worst):
            worst, what = zz, f"[{b / 10:.1f}, {(b + 1) / 10:.1f}): up {got:.4f} vs position {want:.4f}"
    rep.check(abs(worst) < 4, f"{name}: fraction rounded up = fractional position: worst bin z {worst:+.2f} {what}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout.split("\n")
    samples, rne, configs, philox, pbits = parse(out)
    rep = Report()

    # 1. The bits.
    bad = [s for s in samples if bits_int(*s[:5]) != s[5]]
    rep.check(len(samples) >= 3000 and not bad,
              f"random bits: {len(samples) - len(bad)}/{len(samples)} counters equal the documented hash"
              + (f"; first mismatch (seed, head, v, k, step, ours) {bad[0]} oracle {bits_int(*bad[0][:5]):08x}"
                 if bad else ""))
    vec = [int(bits_np(s[0], s[1], np.array([s[2]]), np.array([s[3]]), np.array([s[4]]))[0]) for s in samples[:300]]
    rep.check(vec == [bits_int(*s[:5]) for s in samples[:300]], "the numpy hash equals the integer hash")
    rep.check(rne == 0, f"element_rand_bits under RNE: {rne} (0)")
    # 1b. Philox: this file's implementation on Random123's known answers, then the C++ generator and its bits.
    kat_bad = [(r, ctr, key, want) for (r, ctr, key, want) in PHILOX_KAT
               if [int(w[0]) for w in philox_np([[c] for c in ctr], [[k] for k in key], r)] != want]
    rep.check(not kat_bad, f"philox (numpy): {5 - len(kat_bad)}/5 Random123 known-answer vectors"
              + (f"; first mismatch {kat_bad[0]}" if kat_bad else ""))
    n_ok = sum(1 for r, ctr, key, got in philox
               if [int(w[0]) for w in philox_np([[c] for c in ctr], [[k] for k in key], r)] == got)
    kat_cpp = sum(1 for r, ctr, key, got in philox for (r2, c2, k2, want) in PHILOX_KAT
                  if (r, ctr, key) == (r2, c2, k2) and got == want)
    rep.check(len(philox) >= 1000 and n_ok == len(philox) and kat_cpp == 5,
              f"philox (C++): {n_ok}/{len(philox)} outputs equal the numpy generator, {kat_cpp}/5 known answers")
    pb_ok = sum(1 for (seed, head, v, k, step, rounds, got) in pbits
                if int(philox_bits_np(seed, head, v, k, step, rounds)) == got)
    rep.check(len(pbits) >= 1000 and pb_ok == len(pbits),
              f"philox rounding bits: {pb_ok}/{len(pbits)} element_rand_bits equal word 0 of Philox(k, v, head, step; seed)")
    rep.check(len(configs) == 16, f"{len(configs)} codecs dumped (16)")

    for c in configs:
        name = f"{c['name']} ({c['format']}, {c['scaling']})"
        V, K, S = c["V"], c["K"], c["steps"]
        x = c["x"].astype(np.float64)
        dec = c["dec"].astype(np.float64)
        rep.check(dec.shape == (S, V * K) and np.all(c["step"] == c["step0"] + np.arange(S, dtype=np.uint64)),
                  f"{name}: {S} steps of {V}x{K}")
        vv, kk = np.divmod(np.arange(V * K, dtype=np.uint64), np.uint64(K))
        bits_fn = philox_bits_np if c["rounding"] == "philox" else bits_np
        rnd = bits_fn(c["seed"], c["head"], vv[None, :], kk[None, :], c["step"][:, None])  # [steps, n]
        name += f" {c['rounding']}"
        ax = np.abs(x)
        sign = np.where(np.signbit(c["x"]), -1.0, 1.0)

        if c["scaling"] == "column":
            # 2b. Column scales, exact: the scale from the column's amax (documented rule), x * (1 / scale) in float32,
            # its two neighbours on the element grid (integers, or e4m3 from ml_dtypes), the threshold in integers.
            xv = c["x"].reshape(V, K)
            lo, hi, frac, want = (np.zeros((V, K)) for _ in range(4))
            want = np.zeros((S, V, K), dtype=np.float32)
            r3 = rnd.reshape(S, V, K)
            kmax = {"int8": 127.0, "int16": 32767.0, "fp8_e4m3": 448.0}[c["format"]]
            integer = c["format"] != "fp8_e4m3"
            for k in range(K):
                amax = np.float32(np.max(np.abs(xv[:, k])))
                sc = np.float32(1) if amax == 0 else max(amax / np.float32(kmax), np.float32(np.finfo(np.float32).tiny))
                xs = np.abs(xv[:, k] * (np.float32(1) / sc)).astype(np.float64)
                if c["format"] == "fp8_e4m3":
                    g = grid("fp8_e4m3")
                    i = np.searchsorted(g, xs, side="right") - 1
                    lo_m, hi_m = g[i], g[np.minimum(i + 1, g.size - 1)]
                else:
                    lo_m = np.floor(xs)
                    hi_m = np.minimum(lo_m + 1, kmax)
                fr = np.where((xs > lo_m) & (hi_m > lo_m), (xs - lo_m) / np.where(hi_m > lo_m, hi_m - lo_m, 1.0), 0.0)
                thr = np.floor(fr * 2.0 ** 32).astype(np.uint64)
                sgn = np.where(np.signbit(xv[:, k]), -1.0, 1.0)
                mag = np.where(r3[:, :, k] < thr[None, :], hi_m[None, :], lo_m[None, :])
                signed = lambda m: np.where(m == 0, 0.0, m * sgn) if integer else m * sgn  # noqa: E731 (no int -0)
                want[:, :, k] = signed(mag).astype(np.float32) * sc
                lo[:, k], hi[:, k], frac[:, k] = signed(lo_m).astype(np.float32) * sc, signed(hi_m).astype(np.float32) * sc, fr
            want, lo, hi, frac = want.reshape(S, V * K), lo.reshape(-1), hi.reshape(-1), frac.reshape(-1)
            diff = want.view(np.uint32) != c["dec"].view(np.uint32)
            msg = f"{name}: {diff.size - diff.sum()}/{diff.size} decoded values equal the rule with the oracle's bits"
            if diff.any():
                s_, e = map(int, np.argwhere(diff)[0])
                msg += f"; first: step {s_} element ({e // K}, {e % K}) ours {c['dec'][s_, e]!r} oracle {want[s_, e]!r}"
            rep.check(not diff.any(), msg)
        elif c["scaling"] == "none":
            # 2. Exact: lo / hi from the format's grid, the threshold in integers.
            g = grid(c["format"])
            i = np.searchsorted(g, ax, side="right") - 1
            lo_m = g[i]
            hi_m = g[np.minimum(i + 1, g.size - 1)]
            rep.check(bool(np.all((i + 1 < g.size) & (lo_m <= ax))), f"{name}: every x inside the finite range")
            frac = np.where(ax > lo_m, (ax - lo_m) / (hi_m - lo_m), 0.0)
            thr = np.floor(frac * 2.0 ** 32).astype(np.uint64)  # exact: hi - lo is a power of two
            want = np.where(rnd < thr[None, :], hi_m[None, :], lo_m[None, :]) * sign[None, :]
            want = want.astype(np.float32)
            got = c["dec"]
            diff = want.view(np.uint32) != got.view(np.uint32)
            n_exact = int((frac == 0).sum())
            msg = f"{name}: {diff.size - diff.sum()}/{diff.size} decoded values equal the rule with the oracle's " \
                  f"bits ({n_exact} elements on the grid)"
            if diff.any():
                s, e = map(int, np.argwhere(diff)[0])
                msg += (f"; first: step {int(c['step'][s])} element ({e // K}, {e % K}) x={c['x'][e]!r} ours "
                        f"{got[s, e]!r} oracle {want[s, e]!r} (bits {int(rnd[s, e]):08x}, lo {lo_m[e]!r} hi {hi_m[e]!r})")
            rep.check(not diff.any() and n_exact > 0, msg)
            lo, hi = lo_m * sign, hi_m * sign
        else:
            # 3. Scaled: the two decoded neighbours as observed, the choice against the oracle's bits.
            mag = np.abs(dec)
            lo_m, hi_m = mag.min(0), mag.max(0)
            n_vals = np.array([np.unique(mag[:, e]).size for e in range(V * K)])
            rep.check(bool(np.all(n_vals <= 2)), f"{name}: every element decodes to at most 2 values "
                      f"(max {n_vals.max()})")
            two = (n_vals == 2)
            tol = 1e-5 * ax
            rep.check(bool(np.all(lo_m[two] <= ax[two] + tol[two]) and np.all(ax[two] <= hi_m[two] + tol[two])),
                      f"{name}: the two values bracket x")
            frac = np.where(two, (ax - lo_m) / np.where(two, hi_m - lo_m, 1.0), 0.0)
            frac = np.clip(frac, 0.0, 1.0)
            upd = mag == hi_m[None, :]
            pred = rnd.astype(np.float64) < (frac * 2.0 ** 32)[None, :]
            near = np.abs(rnd.astype(np.float64) - (frac * 2.0 ** 32)[None, :]) < 1e-4 * 2.0 ** 32
            cmp = two[None, :] & ~near
            wrong = cmp & (upd != pred)
            msg = f"{name}: {int(cmp.sum() - wrong.sum())}/{int(cmp.sum())} choices follow the oracle's bits " \
                  f"({int(two.sum())}/{V * K} elements take two values)"
            if wrong.any():
                s, e = map(int, np.argwhere(wrong)[0])
                msg += (f"; first: step {int(c['step'][s])} element ({e // K}, {e % K}) x={c['x'][e]!r} "
                        f"up {bool(upd[s, e])} oracle {bool(pred[s, e])} (position {frac[e]:.6f}, bits {int(rnd[s, e]):08x})")
            rep.check(not wrong.any() and two.sum() >= 0.8 * V * K, msg)
            frac = np.where(two, frac, 0.0)
            lo, hi = lo_m * sign, hi_m * sign
        # 4. Statistics.
        statistics(rep, name, x, lo, hi, dec, frac, S)

    print(f"check_sr: {rep.failed} check(s) failed" if rep.failed else "check_sr: all checks passed")
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
