#!/usr/bin/env python3
"""The scaled formats' range edges end to end: `sweep --activations` on a GDN dump whose values sit near the bottom
of the float range (v scaled by 2^-123: row amax far below 448 * FLT_MIN) must give every format the drift it has on
the same dump at ordinary magnitudes (within kRatio), not the O(1) or NaN drift of an overflowing inverse scale; int8
and int8_ef, whose grid there is FLT_MIN (src/formats/README.md, "Range"), only has to stay finite and below 1.
Run with Debian's python3 (numpy + h5py); the CLI comes from $REPLAYSSM_CLI (or argv[1])."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, finish  # noqa: E402  (tests/pycheck.py)

CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]
FORMATS = "fp32,fp8_e4m3:row,fp8_e5m2:block,int8:row,int8_ef:column,nvfp4,mxfp8"
TINY = 2.0 ** -123
K_RATIO = 4.0  # drift on the tiny dump / drift on the ordinary one (the same inputs up to a power of two)


def drifts(tmp, name, scale):
    dump = os.path.join(tmp, name + ".h5")
    subprocess.run([CLI, "synth", "--arch", "gdn", "--tokens", "64", "--heads", "2", "--key-heads", "1",
                    "--key-dim", "32", "--value-dim", "32", "--out", dump], check=True, capture_output=True)
    with h5py.File(dump, "r+") as f:
        v = f["layers/0/v"][...] * scale
        del f["layers/0/v"]
        f["layers/0/v"] = v.astype("f4")
    out = os.path.join(tmp, name + "_res.h5")
    r = subprocess.run([CLI, "sweep", "--activations", dump, "--formats", FORMATS, "--policies",
                        "conventional-shared,replay-split", "--backend", "emulated", "--quiet", "--out", out],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"sweep on the {name} dump: {r.stderr.strip()}")
    with h5py.File(out, "r") as f:
        return {rid.split(".", 1)[1]: float(np.max(g["output_drift"][...])) for rid, g in f["runs"].items()}


def main():
    with tempfile.TemporaryDirectory(prefix="range-sweep-") as tmp:
        ordinary, tiny = drifts(tmp, "ordinary", 1.0), drifts(tmp, "tiny", TINY)
    for run, d in sorted(tiny.items()):
        base = ordinary[run]
        print(f"{run:40s} ordinary {base:.3e}  tiny {d:.3e}")
        if ".fp32-" in run:
            check(d < 1e-4, f"{run}: FP32 drift {d} on the tiny dump")
        elif ".int8-" in run or ".int8_ef-" in run:
            check(np.isfinite(d) and d < 1.0, f"{run}: int8 drift {d} finite and < 1 on the tiny dump")
        else:
            check(np.isfinite(d) and d <= K_RATIO * base, f"{run}: drift {d} on the tiny dump vs {base} ordinary")
    finish("range_sweep")


if __name__ == "__main__":
    main()
