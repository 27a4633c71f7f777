#!/usr/bin/env python3
"""Soak of in-run checkpoints: a sweep whose runs are long next to --checkpoint-every is killed (kill -9) several
times, each time once it has written a checkpoint since it started plus a random part of a checkpoint interval, and
continued with --resume (a kill that leaves no checkpoint, the run having finished during the wait, is not counted).
Checks:
  - every unfinished run that had a checkpoint resumes from it ("sweep: run X resumes at position P", P the file's
    position, P > 0): a kill loses at most one checkpoint interval of each run;
  - a checkpoint changed on disk is refused (exit 2 naming the file and the field), and the sweep goes on once the
    file is put back;
  - the final results equal an uninterrupted run (--checkpoint-every 0) bit for bit: every dataset, the config and
    the per-run attributes but wall time; no checkpoint or temporary file is left.
Run with Debian's /usr/bin/python3 (numpy + h5py); the CLI comes from $REPLAYSSM_CLI (or argv[1]).
REPLAYSSM_SOAK_BACKEND=cuda runs the same soak on the CUDA backend (on a GPU machine; one job);
REPLAYSSM_SOAK_TREE=SHAPE runs it on a tree sweep (`--tree SHAPE`: checkpoints between rounds), at fewer positions.
"""
import os
import random
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "badinput"))
from soak_test import contents, same  # noqa: E402  (tests/badinput/soak_test.py: what a resumed file must equal)

CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]
SEED = int(os.environ.get("REPLAYSSM_SOAK_SEED", "20261205"))
KILLS = int(os.environ.get("REPLAYSSM_SOAK_KILLS", "5"))
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "datasets", "models")
TREE = os.environ.get("REPLAYSSM_SOAK_TREE")
TOKENS, EVERY = (256, 64) if TREE else (2048, 256)

# Two models, two modes each: four runs of TOKENS positions on two jobs, 128-position chunks (or tree rounds).
SWEEP = ["sweep", "--model", os.path.join(MODELS, "tiny_gdn.h5"), os.path.join(MODELS, "tiny_mamba2.h5"),
         "--tokens", str(TOKENS), "--offset", "3000", "--formats", "fp8_e4m3:row", "--rounding", "sr",
         "--policies", "conventional-shared,replay-split", "--L", "16", "--chunk", "128"]
BACKEND = os.environ.get("REPLAYSSM_SOAK_BACKEND", "emulated")
SWEEP += ["--backend", BACKEND, "--jobs", "1" if BACKEND == "cuda" else "2"] + (["--tree", TREE] if TREE else [])


def checkpoint_position(path):
    """The position in a checkpoint's header (src/sweep/run_checkpoint.h): magic, layout, key pairs, position."""
    with open(path, "rb") as fh:
        b = fh.read()
    assert b[:8] == b"RSSMCKPT", path
    at = 8 + 4
    (fields,) = struct.unpack_from("<I", b, at)
    at += 4
    for _ in range(2 * fields):
        (n,) = struct.unpack_from("<Q", b, at)
        at += 8 + n
    return struct.unpack_from("<q", b, at)[0]


def checkpoints(work):
    if not os.path.isdir(work):
        return {}
    # A run whose result file is there is done (killed between storing it and removing its checkpoint).
    return {n[:-5]: checkpoint_position(os.path.join(work, n)) for n in os.listdir(work)
            if n.endswith(".ckpt") and not os.path.exists(os.path.join(work, n[:-5] + ".h5"))}


def main():
    rng = random.Random(SEED)
    failed = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failed.append(what)

    with tempfile.TemporaryDirectory(prefix="ckpt-soak-") as tmp:
        ref = os.path.join(tmp, "ref.h5")
        t0 = time.monotonic()
        r = subprocess.run([CLI, *SWEEP, "--quiet", "--checkpoint-every", "0", "--out", ref], capture_output=True,
                           text=True)
        full = time.monotonic() - t0
        if r.returncode != 0:
            print("uninterrupted sweep failed:", r.stderr)
            return 1
        print(f"uninterrupted sweep: {full:.2f} s")

        out = os.path.join(tmp, "soak.h5")
        work = out + ".runs"
        log = os.path.join(tmp, "stderr.txt")
        kills, attempts, resumes_checked, tampered = 0, 0, 0, False
        before = {}  # the checkpoints the previous (killed) attempt left
        while True:
            attempts += 1
            if attempts > 4 * KILLS + 4:
                check(False, f"the sweep finished within {attempts - 1} attempts")
                break
            args = [CLI, *SWEEP, "--checkpoint-every", str(EVERY), "--out", out] + (["--resume"] if attempts > 1 else [])
            if before and not tampered:
                # A checkpoint changed on disk: refused, naming the file and the field; put back, the sweep goes on.
                name, _ = sorted(before.items())[0]
                path = os.path.join(work, name + ".ckpt")
                with open(path, "rb") as fh:
                    good = fh.read()
                bad = bytearray(good)
                bad[-3] ^= 0x10
                with open(path, "wb") as fh:
                    fh.write(bad)
                r = subprocess.run(args, capture_output=True, text=True)
                check(r.returncode == 2 and f"{path}: body: checksum mismatch" in r.stderr,
                      f"a changed checkpoint is refused (exit {r.returncode}): {r.stderr.strip()[-200:]}")
                with open(path, "wb") as fh:
                    fh.write(good)
                tampered = True
                before = checkpoints(work)  # the other job may have gone on before the refusal ended the sweep
            start = time.time()
            with open(log, "w") as err:
                p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
                # Kill once this attempt has written a checkpoint, then a random part of an interval later.
                killed = False
                while p.poll() is None and kills < KILLS:
                    if any(os.path.getmtime(os.path.join(work, n)) >= start
                           for n in (os.listdir(work) if os.path.isdir(work) else []) if n.endswith(".ckpt")):
                        time.sleep(rng.uniform(0.0, full * EVERY / TOKENS / 2))
                        if p.poll() is None:
                            p.send_signal(signal.SIGKILL)
                            killed = True
                        break
                    time.sleep(0.01)
                p.wait()
            with open(log) as fh:
                text = fh.read()
            resumed = dict((m.group(1), int(m.group(2))) for m in re.finditer(r"sweep: run (\S+) resumes at position (\d+)", text))
            # Every checkpoint the last kill left is resumed from, at its position (> 0).
            for run, pos in before.items():
                ok = resumed.get(run) == pos and pos > 0
                check(ok, f"attempt {attempts}: {run} resumes at its checkpoint {pos} (said {resumed.get(run)})")
                resumes_checked += ok
            check(set(resumed) <= set(before), f"attempt {attempts}: only runs with checkpoints resume ({sorted(resumed)})")
            if killed and p.returncode == -signal.SIGKILL and not os.path.exists(out):
                before = checkpoints(work)
                if not before:
                    # The checkpointed run finished during the wait and the next one had not reached its first
                    # checkpoint: nothing is lost and nothing can be resumed, so the kill proves nothing. Another.
                    print(f"kill in attempt {attempts} after {time.time() - start:.2f} s left no checkpoint: not counted")
                    continue
                kills += 1
                print(f"kill {kills} of attempt {attempts} after {time.time() - start:.2f} s: checkpoints {before}")
                continue
            check(p.returncode == 0 and os.path.exists(out), f"attempt {attempts} finished (exit {p.returncode}): "
                  f"{text.strip()[-300:]}")
            break

        check(kills == KILLS, f"{kills} kills landed mid-sweep")
        check(resumes_checked >= KILLS, f"{resumes_checked} resumes from a checkpoint checked")
        if os.path.exists(out):
            a, b = contents(ref), contents(out)
            bad = sorted(k for k in set(a) | set(b) if k not in a or k not in b or not same(a[k], b[k]))
            check(not bad, f"resumed results equal the uninterrupted run ({len(a)} datasets/attributes; differ: {bad[:5]})")
        check(not os.path.exists(work), "work folder (checkpoints included) removed after success")
        left = sorted(n for n in os.listdir(tmp) if n not in ("ref.h5", "soak.h5", "stderr.txt"))
        check(not left, f"nothing else left in the output folder: {left}")
    print("PASS" if not failed else f"FAIL: {len(failed)} check(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
