#!/usr/bin/env python3
"""`replayssm sweep` streaming and its FP64 reference cache end to end: results do not depend on --chunk (bit for
bit); --reference-cache computes each model's reference once and reuses it (also across shards, whose merge equals
the unsharded run); a cache file of other inputs or shapes is refused (one line naming the file and the field,
exit 2); without the option no reference file outlives the sweep; `replayssm reference-cache` fills a directory that
sweeps then only reuse."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, finish  # noqa: E402  (tests/pycheck.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_files import datasets, same  # noqa: E402  (tests/sweep/sweep_files.py)

CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]
BASE = ["sweep", "--tokens", "150", "--offset", "3000", "--formats", "fp32,nvfp4", "--policies",
        "conventional-shared,replay-split", "--L", "16", "--backend", "emulated"]


def run(*args):
    return subprocess.run([CLI, *BASE, *args], capture_output=True, text=True)


def reference_lines(stderr, verb):
    return re.findall(r"reference: " + verb + r" .*?(\S+\.h5)$", stderr, re.M)


with tempfile.TemporaryDirectory() as tmp:
    out = lambda name: os.path.join(tmp, name)  # noqa: E731
    # One chunk covering every position is the in-memory computation; 7 and 1 cut it everywhere.
    r = run("--quiet", "--chunk", "150", "--out", out("whole.h5"))
    check(r.returncode == 0, f"one-chunk sweep: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    whole = datasets(out("whole.h5"))
    for chunk in ("7", "1"):
        r = run("--quiet", "--chunk", chunk, "--out", out(f"c{chunk}.h5"))
        check(r.returncode == 0 and same(whole, datasets(out(f"c{chunk}.h5"))),
              f"--chunk {chunk} gives the one-chunk results bit for bit")
    check(not [n for n in os.listdir(tmp) if "reference" in n or n.endswith(".runs")],
          "without --reference-cache no reference file outlives the sweep")

    # A cache directory: computed once per model, then reused, the results unchanged.
    cache = out("cache")
    os.mkdir(cache)
    r = run("--out", out("first.h5"), "--reference-cache", cache)
    computed = reference_lines(r.stderr, "computed")
    check(r.returncode == 0 and len(computed) == 2 and not reference_lines(r.stderr, "reused"),
          f"first sweep computes both references: {r.stderr.strip()[-400:]}")
    check(sorted(os.path.basename(p) for p in computed) == sorted(os.listdir(cache)),
          f"the cache holds the files the log names: {os.listdir(cache)}")
    r = run("--out", out("second.h5"), "--reference-cache", cache, "--chunk", "64")
    check(r.returncode == 0 and sorted(reference_lines(r.stderr, "reused")) == sorted(computed)
          and not reference_lines(r.stderr, "computed"), f"second sweep reuses both: {r.stderr.strip()[-400:]}")
    check(same(whole, datasets(out("first.h5"))) and same(whole, datasets(out("second.h5"))),
          "computed and reused references give the results of a sweep without a cache")
    with h5py.File(computed[0], "r") as f:
        for attr in ("model_hash", "text_hash", "tool_version", "tokens", "tool_version", "git_sha", "command"):
            check(attr in f.attrs, f"reference cache attribute {attr}")
        check(f["logprobs"].shape == (150, 256) and f["nll"].shape == (150,), "reference cache shapes")

    # Two shards sharing a fresh cache: one computation in all, and the merge equals the unsharded run.
    shared = out("shared")
    os.mkdir(shared)
    logs = []
    for i in (0, 1):
        r = run("--out", out(f"s{i}.h5"), "--shard", f"{i}/2", "--reference-cache", shared)
        check(r.returncode == 0, f"shard {i}/2: exit {r.returncode}: {r.stderr.strip()[-300:]}")
        logs.append(r.stderr)
    check(len(reference_lines(logs[0], "computed")) == 2 and len(reference_lines(logs[1], "reused")) == 2
          and not reference_lines(logs[1], "computed"), "the second shard reuses what the first computed")
    m = subprocess.run([CLI, "merge", "--out", out("merged.h5"), out("s0.h5"), out("s1.h5")], capture_output=True,
                       text=True)
    check(m.returncode == 0 and same(whole, datasets(out("merged.h5"))),
          f"merged shards equal the unsharded run: {m.stderr.strip()}")

    # `replayssm reference-cache` fills a directory before the shards start: the sweep then only reuses it.
    filled = out("filled")
    pre = subprocess.run([CLI, "reference-cache", "--dir", filled, "--tokens", "150", "--offset", "3000", "--chunk",
                          "40"], capture_output=True, text=True)
    pre_files = reference_lines(pre.stdout, "computed")
    check(pre.returncode == 0 and len(pre_files) == 2, f"reference-cache computes both models: {pre.stdout}{pre.stderr}")
    r = run("--out", out("filled.h5"), "--reference-cache", filled)
    check(r.returncode == 0 and sorted(reference_lines(r.stderr, "reused")) == sorted(pre_files)
          and not reference_lines(r.stderr, "computed") and same(whole, datasets(out("filled.h5"))),
          f"a sweep on the filled directory reuses both and gives the same results: {r.stderr.strip()[-300:]}")
    again = subprocess.run([CLI, "reference-cache", "--dir", filled, "--tokens", "150", "--offset", "3000"],
                           capture_output=True, text=True)
    check(again.returncode == 0 and sorted(reference_lines(again.stdout, "reused")) == sorted(pre_files),
          "reference-cache on a filled directory reuses its files")
    bad = subprocess.run([CLI, "reference-cache", "--tokens", "150"], capture_output=True, text=True)
    check(bad.returncode == 2 and "--dir" in bad.stderr, "reference-cache without --dir: exit 2 naming --dir")
    bad = subprocess.run([CLI, "reference-cache", "--dir", out("x"), "--tokens", "150", "--fp64", "tpu"],
                         capture_output=True, text=True)
    check(bad.returncode == 2 and "--fp64" in bad.stderr and "tpu" in bad.stderr,
          f"reference-cache --fp64 tpu: exit 2 naming the option: {bad.returncode} {bad.stderr.strip()}")
    # The FP64 model on the CPU on request, with the same bits as the directory filled under the default
    cpu = subprocess.run([CLI, "reference-cache", "--dir", out("cpu"), "--tokens", "150", "--offset", "3000",
                          "--fp64", "cpu"], capture_output=True, text=True)
    cpu_files = reference_lines(cpu.stdout, "computed")
    def ref_data(path):
        with h5py.File(path, "r") as f:
            return f["logprobs"][...].tobytes() + f["nll"][...].tobytes()
    check(cpu.returncode == 0 and "FP64 model on cpu" in cpu.stdout and len(cpu_files) == 2 and
          all(ref_data(a) == ref_data(b) for a, b in zip(sorted(cpu_files), sorted(pre_files))),
          f"reference-cache --fp64 cpu: the same log-probs: {cpu.stdout}{cpu.stderr}")

    # A file under the right name with other contents is refused: one line naming the file and the field, exit 2.
    def refused(label, tamper, field):
        bad = out("bad_" + label)
        shutil.copytree(cache, bad)
        victim = os.path.join(bad, os.path.basename(computed[0]))
        with h5py.File(victim, "r+") as f:
            tamper(f)
        r = run("--out", out(label + ".h5"), "--reference-cache", bad)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2, f"{label}: exit {r.returncode}")
        check(len(lines) >= 1 and victim in lines[-1] and field in lines[-1], f"{label}: message {lines[-1:]}")
        check(len([x for x in lines if "error" in x.lower() or victim in x]) == 1, f"{label}: one error line")
        check(not os.path.exists(out(label + ".h5")), f"{label}: no output left behind")

    def other_text(f):
        f.attrs["text_hash"] = "0123456789abcdef"

    def short_nll(f):
        nll = f["nll"][...]
        del f["nll"]
        f["nll"] = nll[:100]

    refused("key", other_text, "text_hash")
    refused("shape", short_nll, "nll")
    # a missing cache directory is created (shards share a new one); a path that is a file is refused, naming it
    r = run("--out", out("newdir.h5"), "--reference-cache", out("missing"))
    check(r.returncode == 0 and len(glob.glob(os.path.join(out("missing"), "reference-*.h5"))) == 2,
          f"a missing cache directory is created and filled: {r.returncode} {r.stderr.strip()[-300:]}")
    with open(out("afile"), "w") as fh:
        fh.write("not a directory")
    r = run("--out", out("nodir.h5"), "--reference-cache", out("afile"))
    check(r.returncode == 2 and "afile" in r.stderr and "--reference-cache" in r.stderr,
          f"a cache path that is a file: {r.returncode} {r.stderr.strip()}")

finish("sweep_reference_cache")
