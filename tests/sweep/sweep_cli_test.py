#!/usr/bin/env python3
"""`replayssm sweep` end to end on the shipped tiny models: the results schema, determinism (two runs give
bit-identical datasets), sharding + `merge` (equal to the unsharded run), kill -9 + --resume (equal to an
uninterrupted run), and the bad-input contract (one line, exit 2, nothing left under the output name)."""
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_files import datasets, same  # noqa: E402  (tests/sweep/sweep_files.py)

CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]
OPTS = {"--tokens": "160", "--offset": "1000", "--formats": "fp32,fp8_e4m3:row,nvfp4",
        "--policies": "conventional-shared,replay-split", "--L": "16", "--backend": "emulated"}


def args(**override):
    o = dict(OPTS)
    o.update({"--" + k.replace("_", "-"): v for k, v in override.items()})
    return ["sweep", "--quiet"] + [x for kv in o.items() for x in kv]


BASE = args()



def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    a = os.path.join(tmp, "a.h5")
    r = run(*BASE, "--out", a)
    check(r.returncode == 0, f"sweep exit {r.returncode}: {r.stderr.strip()[-400:]}")
    if r.returncode != 0:
        finish("sweep_cli")
    with h5py.File(a, "r") as f:
        runs = list(f["runs"])
        plan = [s.decode() if isinstance(s, bytes) else s for s in f["config/plan"][...]]
        check(len(runs) == len(plan) and len(runs) == 2 * 3 * 2, f"runs {len(runs)} plan {len(plan)}")
        check(list(f["bins"][...]) == [1, 2, 4, 8, 16, 32, 64, 128, 161], f"bins {f['bins'][...]}")
        for attr in ("tool_version", "git_sha", "compiler_flags", "device", "option.formats"):
            check(attr in f.attrs, f"root attribute {attr}")
        for name in runs:
            g = f["runs"][name]
            check(g["kl"].shape == (160,) and g["nll"].shape == (160,) and g["top1"].shape == (160,), name + " shapes")
            check(g["kl_binned"].shape == (8, 4), name + " kl_binned")
            check(g["output_drift"].shape[1] == 160 and g["state_drift"].shape[1] == 10, name + " drift shapes")
            check(np.isfinite(g["kl"][...]).all() and (g["kl"][...] >= 0).all(), name + " kl finite, >= 0")
            for k in ("model", "format", "scaling", "rounding", "policy", "L", "backend", "device", "fp64_device",
                      "first_flip", "bytes_per_element", "capacity_vs_fp32"):
                check(k in g.attrs, f"{name} attr {k}")
            # Token flips: the per-bin rate is 1 - mean(top1) over each bin, the first flip the first 0 of top1.
            top1, edges = g["top1"][...], f["bins"][...]
            want = [1.0 - top1[lo - 1:hi - 1].mean() for lo, hi in zip(edges[:-1], edges[1:])]
            check(g["flip_rate_binned"].shape == (8,) and np.allclose(g["flip_rate_binned"][...], want, rtol=0,
                                                                      atol=1e-15), name + " flip_rate_binned")
            zeros = np.flatnonzero(top1 == 0)
            check(int(g.attrs.get("first_flip", -2)) == (int(zeros[0]) if zeros.size else -1), name + " first_flip")
        # Bytes per state element at the tiny heads (GDN 128 x 128, Mamba-2 64 x 128), scales included.
        bpe = {f"{m}.conventional_shared.{fmt}.rne.L16": v for m, fmt, v in (
            ("tiny_gdn", "fp32-none", 4.0), ("tiny_gdn", "fp8_e4m3-row", 1.03125), ("tiny_mamba2", "fp8_e4m3-row", 1.03125),
            ("tiny_gdn", "nvfp4-block", 0.5 + 1 / 16 + 4 / 16384), ("tiny_mamba2", "nvfp4-block", 0.5 + 1 / 16 + 4 / 8192))}
        for name, v in bpe.items():
            got = f["runs"][name].attrs.get("bytes_per_element", -1.0)
            check(got == v and f["runs"][name].attrs.get("capacity_vs_fp32") == 4.0 / v,
                  f"{name} bytes_per_element {got} (want {v})")
        for model in ("tiny_gdn", "tiny_mamba2"):
            fp32 = f["runs"][f"{model}.conventional_shared.fp32-none.rne.L16"]["kl"][...].mean()
            nv_conv = f["runs"][f"{model}.conventional_shared.nvfp4-block.rne.L16"]
            nv_split = f["runs"][f"{model}.replay_split.nvfp4-block.rne.L16" + (".u-hp" if "gdn" in model else "")]
            # FP32 is the floor; NVFP4 costs KL; split keeps the recurrence exact (tiny state drift).
            check(fp32 < 1e-6, f"{model} fp32 KL {fp32:.2e}")
            check(nv_conv["kl"][...].mean() > 10 * fp32, f"{model} nvfp4 KL above the floor")
            check(nv_split["state_drift"][...].max() < 1e-4 < nv_conv["state_drift"][...].max(),
                  f"{model} split state drift {nv_split['state_drift'][...].max():.2e} vs conventional "
                  f"{nv_conv['state_drift'][...].max():.2e}")
    ref = datasets(a)

    # Determinism: the same command twice.
    b = os.path.join(tmp, "b.h5")
    run(*BASE, "--out", b, "--jobs", "1")
    check(same(ref, datasets(b)), "two runs (jobs 2 and 1) give bit-identical datasets")

    # --gate prints the verdict table of what it wrote and changes nothing in the results.
    g = os.path.join(tmp, "g.h5")
    r = run(*BASE, "--out", g, "--gate")
    check(r.returncode == 0 and "tiny_gdn.conventional_shared.fp32-none.rne.L16" in r.stdout and " PASS" in r.stdout
          and " FAIL" in r.stdout, f"sweep --gate prints the gate table (exit {r.returncode}): {r.stdout[-300:]}")
    check(same(ref, datasets(g)), "sweep --gate writes the same datasets and config as without it")
    rows = [line for line in r.stdout.splitlines() if line.startswith("tiny_")]
    r = run("gate", g, "--out", os.path.join(tmp, "gate.h5"))
    check(r.returncode == 0 and len(rows) == 12 and rows == [line for line in r.stdout.splitlines()
                                                             if line.startswith("tiny_")],
          "replayssm gate prints the rows sweep --gate printed")

    # Shards + merge == unsharded.
    s0, s1, m = (os.path.join(tmp, n) for n in ("s0.h5", "s1.h5", "m.h5"))
    run(*BASE, "--out", s0, "--shard", "0/2")
    run(*BASE, "--out", s1, "--shard", "1/2")
    r = run("merge", "--out", m, s0, s1)
    check(r.returncode == 0, f"merge exit {r.returncode}: {r.stderr.strip()}")
    check(r.returncode == 0 and same(ref, datasets(m)), "merged shards equal the unsharded run")
    r = run("merge", "--out", os.path.join(tmp, "m2.h5"), s0)
    check(r.returncode == 2, "merge of an incomplete shard set is refused")

    # kill -9 mid-sweep, then --resume: identical to the uninterrupted run.
    c = os.path.join(tmp, "c.h5")
    p = subprocess.Popen([CLI, *BASE, "--out", c, "--jobs", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = c + ".runs"
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        if os.path.isdir(work) and len([n for n in os.listdir(work) if n.endswith(".h5")]) >= 3:
            break
        time.sleep(0.05)
    killed = p.poll() is None
    if killed:
        p.send_signal(signal.SIGKILL)
    p.wait()
    check(killed and p.returncode == -signal.SIGKILL, "the sweep was killed mid-run (kill -9)")
    check(not os.path.exists(c), "no results file under the output name after kill -9")
    r = run(*BASE, "--out", c, "--resume")
    check(r.returncode == 0 and same(ref, datasets(c)), "resumed sweep equals the uninterrupted run")
    check(not os.path.exists(work), "work folder removed after success")

    # An experiment file: its values apply, the command line overrides them.
    ini = os.path.join(tmp, "study.ini")
    with open(ini, "w") as fh:
        fh.write("# a study\ntokens = 100000000\nformats = fp32\npolicies = conventional-shared\n")
    d = os.path.join(tmp, "d.h5")
    r = subprocess.run([CLI, "sweep", "--quiet", "--backend", "emulated", "--config", ini, "--tokens", "40",
                        "--out", d], capture_output=True, text=True)
    check(r.returncode == 0, f"--config with an override: exit {r.returncode}: {r.stderr.strip()}")
    if r.returncode == 0:
        with h5py.File(d, "r") as f:
            check(len(f["runs"]) == 2 and all(f["runs"][n]["kl"].shape == (40,) for n in f["runs"]),
                  "config values applied, --tokens from the command line wins")
    r = run(*BASE, "--config", os.path.join(tmp, "missing.ini"), "--out", d + "x")
    check(r.returncode == 2 and "missing.ini" in r.stderr, f"missing config: {r.returncode} {r.stderr.strip()}")

    # Bad input: one line naming what is wrong, exit 2, no output file.
    def bad(label, extra, needle):
        out = os.path.join(tmp, label + ".h5")
        r = run(*args(**{k.lstrip("-").replace("-", "_"): v for k, v in zip(extra[::2], extra[1::2])}), "--out", out)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2, f"{label}: exit {r.returncode}")
        check(len(lines) == 1 and needle in lines[0], f"{label}: message {lines}")
        check(not os.path.exists(out), f"{label}: output left behind")

    bad("unknown_format", ["--formats", "fp7"], "fp7")
    bad("unknown_policy", ["--policies", "replay-sideways"], "replay-sideways")
    bad("bad_scaling", ["--formats", "nvfp4:row"], "nvfp4")
    bad("missing_text", ["--text", os.path.join(tmp, "nope.txt")], "nope.txt")
    bad("too_many_tokens", ["--tokens", "100000000"], "beyond the end")
    bad("missing_model", ["--model", os.path.join(tmp, "nope.h5")], "nope.h5")
    bad("bad_shard", ["--shard", "2/2"], "--shard")
    r = run(*BASE, "--out", os.path.join(tmp, "no_dir", "x.h5"))
    check(r.returncode == 2 and "no_dir" in r.stderr, f"unwritable output: {r.returncode} {r.stderr.strip()}")

finish("sweep_cli")
