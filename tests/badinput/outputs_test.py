#!/usr/bin/env python3
"""Output files and their metadata, end to end (label badinput):
  - one sweep per --out: a second sweep on the same --out refuses at once naming the first one's pid; the lock of a
    killed sweep blocks nothing; a finished sweep leaves no lock;
  - temporary files of killed writers ("<out>.tmp-<pid>": the pid of a process that exited, and of a zombie its parent
    has not reaped) are gone after the next successful run on that --out (--resume included);
  - numbers are stored as numbers: run attrs L, diverged_at (int64) and seed (uint64), /reference/<m>/nll@bits_per_byte
    on the dataset the schema names; merge keeps them, and still reads shards that stored them as strings;
  - a write that fails (file-size limit) is one line naming --out, exit 2, nothing left behind;
  - --resume recomputes a finished run file whose length does not match the sweep;
  - a one-token capture has no bits_per_byte (the reason instead), a longer one a finite value.
Run with Debian's python3 (numpy + h5py); the CLI comes from $REPLAYSSM_CLI (or argv[1])."""
import os
import resource
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
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GDN = os.path.join(SRC, "datasets", "models", "tiny_gdn.h5")
TEXT = os.path.join(SRC, "datasets", "pg19", "test", "10146.txt")


def sweep_argv(out, tokens="16", *extra, policies="conventional-shared,replay-split"):
    return [CLI, "sweep", "--quiet", "--model", GDN, "--tokens", tokens, "--formats", "fp32,fp8_e4m3:row",
            "--policies", policies, "--L", "4", "--backend", "emulated", "--jobs", "1",
            "--seed", str(2**63 + 5), "--out", out, *extra]


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True)


def check_lock(tmp):
    out = os.path.join(tmp, "locked.h5")
    first = subprocess.Popen(sweep_argv(out, "4096"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lock = out + ".lock"
    deadline = time.time() + 60
    while not os.path.exists(lock) and first.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    check(os.path.exists(lock), "a running sweep holds <out>.lock")
    t0 = time.time()
    r = run(sweep_argv(out))
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    check(r.returncode == 2 and len(lines) == 1 and f"pid {first.pid}" in r.stderr and out in r.stderr,
          f"second sweep on the same --out refused naming the first: {r.returncode} {r.stderr.strip()}")
    check(time.time() - t0 < 10, "the second sweep refuses at once")
    first.kill()
    first.wait()
    check(os.path.exists(lock), "a killed sweep leaves its lock file (stale)")
    r = run(sweep_argv(out))
    check(r.returncode == 0, f"a stale lock of a dead sweep blocks nothing: {r.returncode} {r.stderr.strip()}")
    check(not os.path.exists(lock), "a finished sweep removes its lock")


def check_temps(tmp):
    out = os.path.join(tmp, "res.h5")
    r = run(sweep_argv(out))
    check(r.returncode == 0, f"sweep: {r.stderr.strip()}")
    exited = subprocess.Popen(["true"])
    exited.wait()
    zombie = subprocess.Popen(["true"])  # not waited for: a zombie until we reap it (kill(pid, 0) still succeeds)
    time.sleep(0.3)
    stale = [f"{out}.tmp-{exited.pid}", f"{out}.tmp-{zombie.pid}"]
    for p in stale:
        with open(p, "wb") as fh:
            fh.write(b"half-written")
    r = run(sweep_argv(out, "16", "--resume"))
    check(r.returncode == 0, f"resume: {r.stderr.strip()}")
    left = [p for p in stale if os.path.exists(p)]
    check(not left, f"temporary files of killed writers removed by the resumed run: {left}")
    zombie.wait()
    with open(stale[0], "wb") as fh:
        fh.write(b"half-written")
    r = run([CLI, "synth", "--arch", "gdn", "--tokens", "4", "--out", out])
    check(r.returncode == 0 and not os.path.exists(stale[0]), "any command's output removes a dead writer's temp")
    return out


def check_resume_mismatch(tmp):
    """A finished run file whose length does not match the sweep (same configuration hash) is recomputed on --resume,
    not indexed past its end."""
    out = os.path.join(tmp, "resumed.h5")
    argv = sweep_argv(out, "512", policies="conventional-shared,replay-shared,replay-split")
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = out + ".runs"
    deadline, done = time.time() + 120, []
    while p.poll() is None and time.time() < deadline and not done:
        done = [n for n in os.listdir(work) if n.endswith(".h5")] if os.path.isdir(work) else []
        time.sleep(0.05)
    p.kill()
    p.wait()
    check(bool(done), "a run finished before the kill")
    if not done:
        return
    with h5py.File(os.path.join(work, done[0]), "r+") as f:
        for name in ("kl", "nll", "top1"):
            short = f["run/" + name][:4]
            del f["run/" + name]
            f["run/" + name] = short
        kb = f["run/kl_binned"][:1]
        del f["run/kl_binned"]
        f["run/kl_binned"] = kb
    r = run(argv + ["--resume"])
    check(r.returncode == 0, f"resume over a mismatched run file: {r.returncode} {r.stderr.strip()}")
    with h5py.File(out, "r") as f:
        check(all(g["kl"].shape == (512,) for g in f["runs"].values()), "every run has the sweep's 512 positions")


def check_write_failure(tmp):
    """A write that fails (a full disk, here a file-size limit) is one line naming --out, not the temporary file,
    exit 2 (not a signal from libhdf5's exit handler), and leaves nothing behind."""
    out = os.path.join(tmp, "full.h5")

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200000, 200000))

    before = set(os.listdir(tmp))
    r = subprocess.run([CLI, "synth", "--arch", "gdn", "--tokens", "4096", "--out", out], preexec_fn=limit,
                       capture_output=True, text=True)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    check(r.returncode == 2 and len(lines) == 1 and out + ":" in r.stderr and ".tmp-" not in r.stderr,
          f"failed write: exit 2, one line naming --out: {r.returncode} {r.stderr.strip()}")
    check(set(os.listdir(tmp)) == before, f"failed write leaves nothing: {set(os.listdir(tmp)) - before}")


def attr_kind(v):
    return np.asarray(v).dtype.kind


def check_metadata(tmp):
    out = os.path.join(tmp, "meta.h5")
    r = run(sweep_argv(out))
    check(r.returncode == 0, f"sweep: {r.stderr.strip()}")
    with h5py.File(out, "r") as f:
        for rid, g in f["runs"].items():
            check(attr_kind(g.attrs["L"]) == "i" and int(g.attrs["L"]) == 4, f"{rid}: L is an integer 4")
            check(attr_kind(g.attrs["diverged_at"]) == "i" and int(g.attrs["diverged_at"]) == -1,
                  f"{rid}: diverged_at is the integer -1")
            check(attr_kind(g.attrs["seed"]) == "u" and int(g.attrs["seed"]) == 2**63 + 5,
                  f"{rid}: seed is the unsigned integer given")
        for m, g in f["reference"].items():
            check("bits_per_byte" in g["nll"].attrs and "bits_per_byte" not in g.attrs,
                  f"/reference/{m}: bits_per_byte on the nll dataset, as the schema says")
            bpb = float(g["nll"].attrs["bits_per_byte"])
            check(np.isclose(bpb, np.mean(g["nll"][...]) / np.log(2), rtol=1e-12), f"/reference/{m}: bits_per_byte")
    # Shards that stored the numbers as strings (older files) still merge, into numbers.
    s0, s1, m = (os.path.join(tmp, n) for n in ("s0.h5", "s1.h5", "merged.h5"))
    for i, s in enumerate((s0, s1)):
        r = run(sweep_argv(s, "16", "--shard", f"{i}/2"))
        check(r.returncode == 0, f"shard {i}: {r.stderr.strip()}")
    with h5py.File(s0, "r+") as f:
        for g in f["runs"].values():
            for k in ("L", "seed", "diverged_at"):
                v = str(int(g.attrs[k]))
                del g.attrs[k]
                g.attrs[k] = v
    r = run([CLI, "merge", "--out", m, s0, s1])
    check(r.returncode == 0, f"merge of a string-attr shard: {r.stderr.strip()}")
    with h5py.File(m, "r") as f, h5py.File(out, "r") as ref:
        for rid, g in f["runs"].items():
            for k in ("L", "seed", "diverged_at"):
                check(attr_kind(g.attrs[k]) in "iu" and int(g.attrs[k]) == int(ref["runs"][rid].attrs[k]),
                      f"merged {rid}@{k} is the number")
    with h5py.File(s1, "r+") as f:
        g = next(iter(f["runs"].values()))
        del g.attrs["L"]
        g.attrs["L"] = "sixteen"
    r = run([CLI, "merge", "--out", os.path.join(tmp, "bad.h5"), s0, s1])
    check(r.returncode == 2 and "@L" in r.stderr and s1 in r.stderr, f"a non-integer L: exit 2 naming it: {r.stderr}")


def check_capture_bpb(tmp):
    for tokens, want in (("1", None), ("8", "finite")):
        out = os.path.join(tmp, f"cap{tokens}.h5")
        r = run([CLI, "capture", "--model", GDN, "--text", TEXT, "--tokens", tokens, "--no-layers", "--out", out])
        check(r.returncode == 0, f"capture --tokens {tokens}: {r.stderr.strip()}")
        with h5py.File(out, "r") as f:
            a = f["meta"].attrs
            if want is None:
                check("bits_per_byte" not in a and "bits_per_byte_absent" in a,
                      "a one-token capture has no bits_per_byte, and says why")
            else:
                check("bits_per_byte" in a and np.isfinite(a["bits_per_byte"]) and a["bits_per_byte"] > 0,
                      "an 8-token capture has a finite bits_per_byte")


def main():
    with tempfile.TemporaryDirectory(prefix="outputs-") as tmp:
        check_lock(tmp)
        check_temps(tmp)
        check_resume_mismatch(tmp)
        check_write_failure(tmp)
        check_metadata(tmp)
        check_capture_bpb(tmp)
    finish("outputs")


if __name__ == "__main__":
    main()
