#!/usr/bin/env python3
"""Soak: kill -9 a short sweep at 20 random moments (seeded), `--resume` after each kill, and check that the final
results file holds exactly the datasets (bit for bit) and config attributes of an uninterrupted run.

The kill moments are drawn uniformly over the uninterrupted run's wall time, so they land in every phase: start-up,
the FP64 reference, the middle of a run, between runs, while a run file is being written, and during the final write.
Each resumed attempt keeps the runs finished so far (`<out>.runs/`), so the sweep always makes progress.
Run with Debian's /usr/bin/python3 (numpy + h5py); the CLI comes from $REPLAYSSM_CLI (or argv[1]).
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]
KILLS = int(os.environ.get("REPLAYSSM_SOAK_KILLS", "20"))
SEED = int(os.environ.get("REPLAYSSM_SOAK_SEED", "20240601"))
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "datasets", "models")

# Both models, 8 runs of 64 positions: ~3 s of CPU uninterrupted (a few times that under ASan).
SWEEP = ["sweep", "--quiet", "--model", os.path.join(MODELS, "tiny_gdn.h5"), os.path.join(MODELS, "tiny_mamba2.h5"),
         "--tokens", "64", "--offset", "2000", "--formats", "fp32,nvfp4",
         "--policies", "conventional-shared,replay-split", "--L", "8", "--backend", "emulated", "--jobs", "2"]


def contents(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                a = obj[...]
                out[name] = (a.dtype.str, a.shape, a.tobytes() if a.dtype.kind != "O" else repr(a.tolist()))
        f.visititems(visit)
        for k, v in f["config"].attrs.items():
            out["config@" + k] = v
        for name in f["runs"]:
            for k, v in f["runs"][name].attrs.items():
                if k != "elapsed_s":  # wall time: the one field allowed to differ between reruns
                    out[f"runs/{name}@{k}"] = v
    return out


def same(x, y):
    if isinstance(x, tuple) or isinstance(y, tuple):
        return x == y  # (dtype, shape, raw bytes)
    return bool(np.array_equal(x, y))


def main():
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        ref = os.path.join(tmp, "ref.h5")
        t0 = time.monotonic()
        r = subprocess.run([CLI, *SWEEP, "--out", ref], capture_output=True, text=True)
        full = time.monotonic() - t0
        if r.returncode != 0:
            print("uninterrupted sweep failed:", r.stderr)
            return 1
        print(f"uninterrupted sweep: {full:.2f} s")

        out = os.path.join(tmp, "soak.h5")
        kills, attempts, finished_early = 0, 0, 0
        while kills < KILLS:
            attempts += 1
            delay = rng.uniform(0.0, full)
            args = [CLI, *SWEEP, "--out", out] + (["--resume"] if attempts > 1 else [])
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                done = len([n for n in os.listdir(out + ".runs") if n.endswith(".h5")]) \
                    if os.path.isdir(out + ".runs") else 0
                print(f"kill {kills:2d} at {delay:6.3f} s: {done} run file(s) kept")
                continue
            err = p.stderr.read().decode(errors="replace")
            if p.returncode != 0:
                print(f"attempt {attempts} exited {p.returncode} before its kill: {err}")
                return 1
            # It finished before its kill moment: start over from scratch so every kill interrupts real work.
            finished_early += 1
            os.remove(out)
            print(f"attempt {attempts} finished before {delay:.3f} s; starting over")
        r = subprocess.run([CLI, *SWEEP, "--out", out, "--resume"], capture_output=True, text=True)
        if r.returncode != 0:
            print("final resume failed:", r.stderr)
            return 1
        a, b = contents(ref), contents(out)
        bad = sorted(k for k in set(a) | set(b) if k not in a or k not in b or not same(a[k], b[k]))
        leftovers = sorted(n for n in os.listdir(tmp) if n not in ("ref.h5", "soak.h5"))
        print(f"{kills} kills over {attempts} attempts ({finished_early} finished early); "
              f"{len(a)} datasets/attributes compared")
        if leftovers:
            print("stale files after the final resume (temporary outputs of killed attempts):", leftovers)
        if bad:
            print("FAIL: differs from the uninterrupted run:", bad[:10])
            return 1
        if os.path.exists(out + ".runs"):
            print("FAIL: work folder left after success")
            return 1
        print("PASS: resumed result is bit-identical to the uninterrupted run")
        return 0


if __name__ == "__main__":
    sys.exit(main())
