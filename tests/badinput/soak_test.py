#!/usr/bin/env python3
"""Soak: kill -9 a short sweep at 20 random moments (seeded), `--resume` after each kill, and check that the final
results file holds exactly the datasets (bit for bit) and config attributes of an uninterrupted run.

The kill moments are drawn uniformly over the uninterrupted run's wall time, so they land in every phase: start-up,
the FP64 reference, the middle of a run, between runs, while a run file is being written, and during the final write.
Each resumed attempt keeps the runs finished so far (`<out>.runs/`), so the sweep always makes progress.
A kill counts only when it really interrupted the sweep: the process died of SIGKILL (exit -9) and had not yet moved
its results file into place; at least one kill must land after some runs were kept and before all were. One more
kill is aimed at the final write itself (the moment the attempt's own `<out>.tmp-<pid>` appears), since a uniform
moment rarely lands in it. After the final resume no temporary file (`*.tmp`, `*.tmp-<pid>`: the half-written output
of a killed attempt) may be left in the output folder, nor anything but the two results files.
Run with Debian's /usr/bin/python3 (numpy + h5py); the CLI comes from $REPLAYSSM_CLI (or argv[1]).
"""
import fnmatch
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


def stale_temporaries(folder):
    """Temporary outputs (`*.tmp`, `*.tmp-<pid>`) anywhere under folder, as paths relative to it."""
    found = []
    for root, dirs, files in os.walk(folder):
        for n in dirs + files:
            if fnmatch.fnmatch(n, "*.tmp") or fnmatch.fnmatch(n, "*.tmp-*"):
                found.append(os.path.relpath(os.path.join(root, n), folder))
    return sorted(found)


def kill_during_final_write(out, limit):
    """Runs `--resume` attempts (which first finish any run not yet kept) and kills each the moment its own temporary
    results file appears; returns (attempts, True) once a kill landed while that file was being written (exit -9, no results file
    in place), (attempts, False) if none did."""
    for attempt in range(1, 11):
        p = subprocess.Popen([CLI, *SWEEP, "--out", out, "--resume"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        temp = f"{out}.tmp-{p.pid}"
        deadline = time.monotonic() + limit
        seen = False
        while p.poll() is None and time.monotonic() < deadline:
            if os.path.exists(temp):
                seen = True
                p.send_signal(signal.SIGKILL)
                break
            time.sleep(0.0005)
        if p.poll() is None and not seen:
            p.send_signal(signal.SIGKILL)
        p.wait()
        if seen and p.returncode == -signal.SIGKILL and not os.path.exists(out):
            print(f"kill during the final write (attempt {attempt}): {os.path.basename(temp)} was being written")
            return attempt, True
        if os.path.exists(out):
            os.remove(out)  # it finished first: its work folder is gone, so the next attempt redoes the runs
    return 10, False


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

        with h5py.File(ref, "r") as f:
            total_runs = len(f["runs"])
        out = os.path.join(tmp, "soak.h5")
        kills, attempts, finished_early, partial = 0, 0, 0, 0
        while kills < KILLS:
            attempts += 1
            if attempts > 3 * KILLS + 10:
                print(f"FAIL: only {kills} of {attempts - 1} attempts were really killed mid-sweep")
                return 1
            delay = rng.uniform(0.0, full)
            args = [CLI, *SWEEP, "--out", out] + (["--resume"] if attempts > 1 else [])
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.wait()
            err = p.stderr.read().decode(errors="replace")
            if p.returncode == -signal.SIGKILL and not os.path.exists(out):
                # A real kill: SIGKILL ended it before its results file was in place.
                kills += 1
                done = len([n for n in os.listdir(out + ".runs") if n.endswith(".h5")]) \
                    if os.path.isdir(out + ".runs") else 0
                partial += 0 < done < total_runs
                print(f"kill {kills:2d} at {delay:6.3f} s: {done}/{total_runs} run file(s) kept")
                continue
            if p.returncode not in (0, -signal.SIGKILL):
                print(f"attempt {attempts} exited {p.returncode} before its kill: {err}")
                return 1
            if not os.path.exists(out):
                print(f"attempt {attempts} exited {p.returncode} without a results file (and not by its kill)")
                return 1
            # It finished (or was killed after its results file was in place, exit -9): not a kill. Start over from
            # scratch so every counted kill interrupts real work.
            finished_early += 1
            os.remove(out)
            print(f"attempt {attempts} finished before {delay:.3f} s (exit {p.returncode}); starting over")
        tries, landed = kill_during_final_write(out, 10 * full + 10)
        attempts += tries
        if not landed:
            print("FAIL: no kill landed in the final write of the results file in 10 attempts")
            return 1
        r = subprocess.run([CLI, *SWEEP, "--out", out, "--resume"], capture_output=True, text=True)
        if r.returncode != 0:
            print("final resume failed:", r.stderr)
            return 1
        a, b = contents(ref), contents(out)
        bad = sorted(k for k in set(a) | set(b) if k not in a or k not in b or not same(a[k], b[k]))
        stale = stale_temporaries(tmp)
        leftovers = sorted(n for n in os.listdir(tmp) if n not in ("ref.h5", "soak.h5"))
        print(f"{kills} + 1 kills over {attempts} attempts ({finished_early} finished early, {partial} kills with some "
              f"but not all runs kept); {len(a)} datasets/attributes compared")
        failed = False
        if partial == 0:
            print(f"FAIL: no kill landed between the first and the last of the {total_runs} run files: the resume "
                  "never had to combine kept runs with new ones")
            failed = True
        if stale:
            print("FAIL: stale temporary files after the final resume (outputs of killed attempts):", stale)
            failed = True
        if bad:
            print("FAIL: differs from the uninterrupted run:", bad[:10])
            failed = True
        if os.path.exists(out + ".runs"):
            print("FAIL: work folder left after success")
            failed = True
        elif leftovers:
            print("FAIL: files left in the output folder besides the results:", leftovers)
            failed = True
        if failed:
            return 1
        print("PASS: resumed result is bit-identical to the uninterrupted run")
        return 0


if __name__ == "__main__":
    sys.exit(main())
