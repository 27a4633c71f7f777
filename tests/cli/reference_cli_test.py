#!/usr/bin/env python3
"""`replayssm reference` end to end, as a user would run it: a dump written by hand with h5py, the CLI, and an
independent NumPy recurrence (written here from DESIGN.md section 2, not from the C++ code) to check against.
Also the bad-input contract: one line naming file and field, exit 2, no file left under the output name."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, finish  # noqa: E402  (tests/pycheck.py)

CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]



def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


def gdn_numpy(q, k, v, g, beta, scale, S0=None):
    T, Hk, K = q.shape
    _, Hv, V = v.shape
    S = np.zeros((Hv, V, K)) if S0 is None else S0.copy()
    o = np.zeros((T, Hv, V))
    for t in range(T):
        for h in range(Hv):
            kk, qq = k[t, h // (Hv // Hk)], q[t, h // (Hv // Hk)] * scale
            a = np.exp(g[t, h])
            u = beta[t, h] * (v[t, h] - a * S[h] @ kk)
            S[h] = a * S[h] + np.outer(u, kk)
            o[t, h] = S[h] @ qq
    return o, S


def mamba2_numpy(x, B, C, dt, A, D, S0=None):
    T, H, P = x.shape
    _, G, N = B.shape
    S = np.zeros((H, P, N)) if S0 is None else S0.copy()
    y = np.zeros((T, H, P))
    for t in range(T):
        for h in range(H):
            gi = h // (H // G)
            S[h] = np.exp(dt[t, h] * A[h]) * S[h] + np.outer(dt[t, h] * x[t, h], B[t, gi])
            y[t, h] = S[h] @ C[t, gi] + D[h] * x[t, h]
    return y, S


def unit(a):
    return a / np.sqrt((a * a).sum(-1, keepdims=True))


rng = np.random.default_rng(7)
with tempfile.TemporaryDirectory() as tmp:
    # GDN with grouped heads (2 key heads serve 4 value heads), an initial state, T not a multiple of 16.
    T, Hk, Hv, K, V = 37, 2, 4, 8, 6
    q, k = unit(rng.normal(size=(T, Hk, K))), unit(rng.normal(size=(T, Hk, K)))
    v = rng.normal(size=(T, Hv, V))
    g = -np.exp(rng.uniform(-6, 2, size=(T, Hv)))
    beta = 1 / (1 + np.exp(-rng.normal(size=(T, Hv))))
    S0 = rng.normal(size=(Hv, V, K)) * 0.1
    dump = os.path.join(tmp, "gdn.h5")
    with h5py.File(dump, "w") as f:
        f.attrs["arch"] = "gdn"
        for name, arr in dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=S0).items():
            f[f"layers/0/{name}"] = arr  # float64
        f["layers/1/q"], f["layers/1/k"] = q.astype(np.float32), k.astype(np.float32)
        f["layers/1/v"], f["layers/1/g"] = v.astype(np.float32), g.astype(np.float32)
        f["layers/1/beta"] = beta.astype(np.float32)
    out = os.path.join(tmp, "ref.h5")
    r = run("reference", "--in", dump, "--out", out, "--check-forms")
    check(r.returncode == 0, f"gdn reference exit {r.returncode}: {r.stderr.strip()}")
    if r.returncode == 0:
        with h5py.File(out, "r") as f:
            o_ref, S_ref = gdn_numpy(q, k, v, g, beta, 1 / np.sqrt(K), S0)
            err = np.abs(f["layers/0/o"][...] - o_ref).max() / np.abs(o_ref).max()
            serr = np.abs(f["layers/0/final_state"][...] - S_ref).max() / np.abs(S_ref).max()
            check(err < 1e-12 and serr < 1e-12, f"gdn layer 0 vs numpy: {err:.2e} {serr:.2e}")
            f32 = [a.astype(np.float32).astype(np.float64) for a in (q, k, v, g, beta)]
            o1, _ = gdn_numpy(*f32, 1 / np.sqrt(K))
            err1 = np.abs(f["layers/1/o"][...] - o1).max() / np.abs(o1).max()
            check(err1 < 1e-12, f"gdn layer 1 (float32 input) vs numpy: {err1:.2e}")
            check(f["layers/0/o"].dtype == np.float64, "outputs are float64")
            for attr in ("tool_version", "git_sha", "compiler_flags", "device", "option.in"):
                check(attr in f.attrs, f"provenance attribute {attr}")

    # Mamba-2 with groups and D; layer 0 from a non-zero initial state, layer 1 (float32 inputs) from zero. Both the
    # outputs and the final state [H, P, N] are checked against the NumPy recurrence.
    T, H, G, P, N = 20, 4, 2, 3, 5
    x, B, C = rng.normal(size=(T, H, P)), rng.normal(size=(T, G, N)), rng.normal(size=(T, G, N))
    dt = np.log1p(np.exp(rng.normal(size=(T, H))))
    A, D = -np.exp(rng.uniform(0, 2, size=H)), rng.normal(size=H)
    # Slow decay on head 0 (dt * A near -0.01) so that the initial state still matters at t = T; large enough to
    # dominate the state early on.
    A[0], dt[:, 0] = -0.05, 0.2
    S0m = rng.normal(size=(H, P, N)) * 3.0
    dump = os.path.join(tmp, "m2.h5")
    with h5py.File(dump, "w") as f:
        f.attrs["arch"] = "mamba2"
        for name, arr in dict(x=x, B=B, C=C, dt=dt, A=A, D=D, initial_state=S0m).items():
            f[f"layers/0/{name}"] = arr
        for name, arr in dict(x=x, B=B, C=C, dt=dt, A=A, D=D).items():
            f[f"layers/1/{name}"] = arr.astype(np.float32)
    r = run("reference", "--in", dump, "--out", out)
    check(r.returncode == 0, f"mamba2 reference exit {r.returncode}: {r.stderr.strip()}")
    if r.returncode == 0:
        with h5py.File(out, "r") as f:
            y_ref, S_ref = mamba2_numpy(x, B, C, dt, A, D, S0m)
            y_zero, S_zero = mamba2_numpy(x, B, C, dt, A, D)
            # The initial state must be visible in both outputs and final state, or the check below cannot tell.
            check(np.abs(y_ref - y_zero).max() > 0.1 * np.abs(y_ref).max()
                  and np.abs(S_ref - S_zero).max() > 0.1 * np.abs(S_ref).max(),
                  "mamba2: the initial state changes the outputs and the final state")
            check("final_state" in f["layers/0"], "mamba2: /layers/0/final_state written")
            if "final_state" in f["layers/0"]:
                fs = f["layers/0/final_state"][...]
                check(fs.shape == (H, P, N), f"mamba2 final_state shape {fs.shape} (H, P, N) = {(H, P, N)}")
                if fs.shape == (H, P, N):
                    serr = np.abs(fs - S_ref).max() / np.abs(S_ref).max()
                    check(serr < 1e-12, f"mamba2 final_state (from the initial state) vs numpy: {serr:.2e}")
            err = np.abs(f["layers/0/o"][...] - y_ref).max() / np.abs(y_ref).max()
            check(err < 1e-12, f"mamba2 (from the initial state) vs numpy: {err:.2e}")
            f32 = [a.astype(np.float32).astype(np.float64) for a in (x, B, C, dt, A, D)]
            y1, S1 = mamba2_numpy(*f32)
            err1 = np.abs(f["layers/1/o"][...] - y1).max() / np.abs(y1).max()
            serr1 = np.abs(f["layers/1/final_state"][...] - S1).max() / np.abs(S1).max()
            check(err1 < 1e-12 and serr1 < 1e-12, f"mamba2 layer 1 (float32 input, zero state) vs numpy: "
                  f"{err1:.2e} {serr1:.2e}")

    # Bad inputs: one line naming the file and the field, exit 2, nothing left under the output name.
    def bad(name, mutate, field):
        path = os.path.join(tmp, name + ".h5")
        with h5py.File(path, "w") as f:
            f.attrs["arch"] = "mamba2"
            for n, arr in dict(x=x, B=B, C=C, dt=dt, A=A).items():
                f[f"layers/0/{n}"] = arr
            mutate(f)
        o = os.path.join(tmp, name + "_out.h5")
        r = run("reference", "--in", path, "--out", o)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2, f"{name}: exit {r.returncode}")
        check(len(lines) == 1 and path in lines[0] and field in lines[0], f"{name}: message {lines}")
        check(not os.path.exists(o) and not any(p.startswith(name + "_out.h5") for p in os.listdir(tmp)),
              f"{name}: output left behind")

    def set_nan(f):
        d = f["layers/0/x"][...]
        d[3, 1, 2] = np.nan
        del f["layers/0/x"]
        f["layers/0/x"] = d

    def reshape(name, arr):
        def m(f):
            del f[f"layers/0/{name}"]
            f[f"layers/0/{name}"] = arr
        return m

    bad("missing_dt", lambda f: f.__delitem__("layers/0/dt"), "/layers/0/dt")
    bad("nan_x", set_nan, "/layers/0/x")
    bad("rank_B", reshape("B", B[:, 0, :]), "/layers/0/B")
    bad("shape_C", reshape("C", C[:, :, :4]), "/layers/0/C")
    bad("groups", reshape("B", rng.normal(size=(T, 3, N))), "/layers/0/B")
    bad("positive_A", reshape("A", -A), "/layers/0/A")
    bad("unknown_arch", lambda f: f.attrs.__setitem__("arch", "rwkv"), "arch")
    bad("no_arch", lambda f: f.attrs.__delitem__("arch"), "arch")
    bad("no_layers", lambda f: f.__delitem__("layers"), "/layers")
    trunc = os.path.join(tmp, "trunc.h5")
    with open(os.path.join(tmp, "m2.h5"), "rb") as src, open(trunc, "wb") as dst:
        dst.write(src.read()[:1500])
    r = run("reference", "--in", trunc, "--out", os.path.join(tmp, "t_out.h5"))
    check(r.returncode == 2 and trunc in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          f"truncated file: exit {r.returncode} {r.stderr.strip()}")
    r = run("reference", "--in", os.path.join(tmp, "nope.h5"), "--out", os.path.join(tmp, "n_out.h5"))
    check(r.returncode == 2 and "nope.h5" in r.stderr, f"missing file: {r.returncode} {r.stderr.strip()}")
    r = run("reference", "--in", dump, "--out", os.path.join(tmp, "no_such_dir", "x.h5"))
    check(r.returncode == 2 and "no_such_dir" in r.stderr, f"unwritable output: {r.returncode} {r.stderr.strip()}")
    r = run("reference", "--in", dump, "--out", dump)
    check(r.returncode == 2, f"output == input: {r.returncode}")
    check(os.path.exists(dump) and h5py.is_hdf5(dump), "input survives --out == --in")

finish("reference_cli")
