#!/usr/bin/env python3
"""`replayssm sweep --tree` end to end on the shipped tiny models: the tree datasets beside the chain ones, the branch
statistics recomputed from the raw branches, determinism, kill -9 + --resume, the shapes (branching, binary, star, a one-node tree), the
option from an experiment file, and the bad-input contract (one line naming --tree, exit 2, no output)."""
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, finish  # noqa: E402  (tests/pycheck.py)

CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]
TOKENS = 64
BASE = ["sweep", "--quiet", "--tree", "2,2", "--tokens", str(TOKENS), "--formats", "fp32,fp8_e4m3:row",
        "--policies", "replay-shared,conventional-shared", "--backend", "emulated"]
# 2,2 over 64 positions: byte 0 alone, 31 rounds of 6 nodes (4 branches each), a last round cut to depth 1 (1 branch).
BRANCHES = 31 * 4 + 1


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


def sweep_ok(what, *args):
    """Runs a sweep that must succeed; True when it did (a failure is recorded with the tail of its stderr)."""
    r = run(*args)
    check(r.returncode == 0, f"{what}: exit {r.returncode} {r.stderr.strip()[-400:]}")
    return r.returncode == 0


def tree_datasets(path):
    with h5py.File(path, "r") as f:
        return {f"{name}/{k}": g[k][...] for name, g in f["runs"].items() for k in g}


with tempfile.TemporaryDirectory() as tmp:
    a = os.path.join(tmp, "a.h5")
    if not sweep_ok("sweep --tree 2,2", *BASE, "--out", a):
        finish("sweep_tree_cli")
    with h5py.File(a, "r") as f:
        check(f["config"].attrs.get("tree") == "2,2", "config records the shape")
        check(f.attrs.get("option.tree") == "2,2", "provenance records the shape")
        edges = f["bins"][...]
        runs = list(f["runs"])
        check(len(runs) == 2 * 2 * 2, f"runs {len(runs)}")
        for name in runs:
            g = f["runs"][name]
            kl, bkl, bpos = g["kl"][...], g["branch_kl"][...], g["branch_position"][...]
            check(kl.shape == (TOKENS,) and np.isfinite(kl).all() and (kl >= 0).all(), name + " path kl")
            check(bkl.shape == (BRANCHES,) and np.isfinite(bkl).all() and (bkl >= 0).all(), name + " branch kl")
            check(g["branch_top1"].shape == (BRANCHES,) and bpos.shape == (BRANCHES,), name + " branch shapes")
            check(bpos.min() >= 1 and bpos.max() < TOKENS, name + " branch positions (byte 0 has no branches)")
            check(g["output_drift"].shape == (0, 0), name + " no layer drift in tree rounds")
            for k, v in (("tree", "2,2"), ("tree_nodes", 6), ("tree_depth", 2), ("tree_rounds", 33)):
                check(g.attrs.get(k) == v, f"{name} attr {k}={g.attrs.get(k)}")
            # The binned branch statistics are those of the raw branches.
            want_mean, want_max, want_flip = [], [], []
            top1 = g["branch_top1"][...]
            for lo, hi in zip(edges[:-1], edges[1:]):
                sel = (bpos + 1 >= lo) & (bpos + 1 < hi)
                want_mean.append(bkl[sel].mean() if sel.any() else 0.0)
                want_max.append(bkl[sel].max() if sel.any() else 0.0)
                want_flip.append(1.0 - top1[sel].mean() if sel.any() else 0.0)
            kb = g["branch_kl_binned"][...]
            check(kb.shape == (len(edges) - 1, 2) and np.allclose(kb[:, 0], want_mean, rtol=1e-12, atol=0)
                  and (kb[:, 1] == want_max).all(), name + " branch_kl_binned")
            check(np.allclose(g["branch_flip_rate_binned"][...], want_flip, rtol=0, atol=1e-15), name + " flip rate")
        for model in ("tiny_gdn", "tiny_mamba2"):
            fp32 = f["runs"][f"{model}.replay_shared.fp32-none.rne.L16"]
            fp8 = f["runs"][f"{model}.conventional_shared.fp8_e4m3-row.rne.L16"]
            check(fp32["kl"][...].max() < 1e-8 and fp32["branch_kl"][...].max() < 1e-8, f"{model} fp32 at the floor")
            check(fp8["branch_kl"][...].mean() > 100 * fp32["branch_kl"][...].mean(), f"{model} fp8 costs KL")

    b = os.path.join(tmp, "b.h5")
    if sweep_ok("rerun with one job", *BASE, "--jobs", "1", "--out", b):
        da, db = tree_datasets(a), tree_datasets(b)
        check(da.keys() == db.keys() and all(da[k].tobytes() == db[k].tobytes() for k in da),
              "a rerun (other job count) gives the same bits")

    # kill -9 after the first run file, then --resume: the bits of an uninterrupted run (branch datasets included).
    one = ["sweep", "--quiet", "--tree", "2,2", "--tokens", "512", "--formats", "fp32,bf16,fp8_e4m3:row", "--policies",
           "replay-shared", "--jobs", "1", "--model", os.path.join(os.path.dirname(os.path.dirname(
               os.path.dirname(os.path.abspath(__file__)))), "datasets", "models", "tiny_gdn.h5")]
    whole, killed = os.path.join(tmp, "whole.h5"), os.path.join(tmp, "killed.h5")
    proc = subprocess.Popen([CLI, *one, "--out", killed], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not (
            os.path.isdir(killed + ".runs") and any(n.endswith(".h5") for n in os.listdir(killed + ".runs"))):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if sweep_ok("--resume after kill -9", *one, "--resume", "--out", killed) and sweep_ok("uninterrupted", *one,
                                                                                           "--out", whole):
        dw, dk = tree_datasets(whole), tree_datasets(killed)
        check(dw.keys() == dk.keys() and all(dw[k].tobytes() == dk[k].tobytes() for k in dw),
              "kill -9 + --resume gives the uninterrupted bits")

    for shape, nodes in (("binary:2", 6), ("star:3", 3), ("chain:1", 1), ("1", 1)):
        out = os.path.join(tmp, "s.h5")
        if sweep_ok(f"--tree {shape}", "sweep", "--quiet", "--tree", shape, "--tokens", "16", "--formats", "bf16",
                    "--policies", "replay-shared", "--out", out):
            with h5py.File(out, "r") as f:
                for name, g in f["runs"].items():
                    check(g.attrs.get("tree_nodes") == nodes and np.isfinite(g["kl"][...]).all(), f"{shape} {name}")

    ini = os.path.join(tmp, "tree.ini")
    with open(ini, "w") as fh:
        fh.write("tree = star:2\ntokens = 16\nformats = fp32\npolicies = replay-shared\n")
    out = os.path.join(tmp, "ini.h5")
    if sweep_ok("--config with tree", "sweep", "--quiet", "--config", ini, "--out", out):
        with h5py.File(out, "r") as f:
            check(f["config"].attrs.get("tree") == "star:2", "the experiment file's tree is recorded")

    bad = [["--tree", "0"], ["--tree", "chain:65"], ["--tree", "binary:6"], ["--tree", "4,,2"], ["--tree", "tree"],
           ["--tree", "2", "--shard", "0/2"], ["--tree", "2", "--backend", "cuda"]]
    for extra in bad:
        out = os.path.join(tmp, "bad.h5")
        r = run("sweep", "--quiet", "--tokens", "8", "--out", out, *extra)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and "--tree" in lines[0] and not os.path.exists(out),
              f"{extra}: exit {r.returncode}, stderr {r.stderr.strip()!r}")

finish("sweep_tree_cli")
