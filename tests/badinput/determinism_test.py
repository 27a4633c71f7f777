#!/usr/bin/env python3
"""Determinism: two runs of `replayssm validate --backend emulated` both pass (exit 0, a summary with checks and
none failed) and print bit-identical tables (every case's max-abs and rel-RMS to 4 significant digits, with
--verbose), on random cases and on an activation dump. The only line allowed to differ is the final summary's wall
time. A run that exits 1 (a check failed) fails this test even when both runs agree.
(The sweep's determinism, two runs giving bit-identical HDF5 datasets, is tests/sweep/sweep_cli_test.py.)
Run with Debian's /usr/bin/python3; the CLI comes from $REPLAYSSM_CLI (or argv[1])."""
import os
import re
import subprocess
import sys
import tempfile

CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]


SUMMARY = re.compile(r"^validate: (\d+) checks, (\d+) failed \(\d+(\.\d+)? s\)$", re.M)


def table(label, *args):
    r = subprocess.run([CLI, "validate", "--backend", "emulated", "--verbose", *args], capture_output=True, text=True)
    summary = SUMMARY.search(r.stdout)
    if r.returncode != 0 or not summary or int(summary.group(1)) == 0 or int(summary.group(2)) != 0:
        failing = [line for line in r.stdout.splitlines() if " FAIL " in line][:5]
        print(f"FAIL {label}: validate exited {r.returncode} (0 required), summary "
              f"{summary.group(0) if summary else None!r}; failing rows: {failing}\n{r.stdout[-1500:]}{r.stderr}")
        sys.exit(1)
    # "validate: N checks, M failed (12.3 s)": drop the wall time only.
    out = re.sub(r"\(\d+(\.\d+)? s\)", "(<time>)", r.stdout)
    return r.returncode, out


with tempfile.TemporaryDirectory(prefix="determinism-") as tmp:
    acts = os.path.join(tmp, "acts.h5")
    subprocess.run([CLI, "synth", "--arch", "mamba2", "--tokens", "48", "--heads", "4", "--groups", "2",
                    "--key-dim", "32", "--value-dim", "16", "--seed", "5", "--out", acts], check=True,
                   capture_output=True)
    # Mamba-2 only: ~4 s of CPU per run (GDN's small-shape set takes ~20 s, too long twice under ASan). The GDN
    # emulated decode path is covered by the sweep's determinism check (both tiny models) in sweep_cli_test.py.
    runs = [("mamba2, small shapes + activations", ["--arch", "mamba2", "--shapes", "small", "--activations", acts])]
    failed = 0
    for label, args in runs:
        a, b = table(label, *args), table(label, *args)
        rows = len(a[1].splitlines())
        if a != b:
            failed += 1
            la, lb = a[1].splitlines(), b[1].splitlines()
            diff = [(x, y) for x, y in zip(la, lb) if x != y][:3]
            print(f"FAIL {label}: exit {a[0]} vs {b[0]}, {len(la)} vs {len(lb)} lines; first differences: {diff}")
        else:
            print(f"ok   {label}: {rows} identical lines, exit {a[0]}")
    sys.exit(1 if failed else 0)
