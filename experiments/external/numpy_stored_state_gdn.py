#!/usr/bin/env python3
"""An outside low-precision GDN kernel checked by `replayssm validate --external --mode`: a numpy float32 decode
whose state is stored in BF16 or FP16 after every token (the conventional decode of an engine with a low-precision
SSM-state cache), written independently of replayssm from the semantics its docs state (numpy_kernels.py).

  --placement right   the documented conventional mode: a step starts from the stored (decoded) state, its output
                      reads the new state BEFORE it is re-quantised, then the state is stored
  --placement after   a misplaced quantisation: the output reads the state AFTER it is re-quantised
  --placement none    no store at all: a plain float32 kernel that claims a low-precision state

Writes what `validate --external` reads: /layers/<i>/o [T, Hv, V] and /layers/<i>/final_state [Hv, V, K] (the
stored state, decoded; replayssm's [V, K] layout, the transpose of FLA's [K, V]).

  python3 experiments/external/numpy_stored_state_gdn.py --in datasets/external/qwen3_5_tiny.h5 --out right.h5
  replayssm validate --external right.h5 --activations datasets/external/qwen3_5_tiny.h5 \\
      --mode conventional_shared/bf16                                                        # exit 0, PASS
  python3 experiments/external/numpy_stored_state_gdn.py --in datasets/external/qwen3_5_tiny.h5 --out after.h5 \\
      --placement after
  replayssm validate --external after.h5 --activations datasets/external/qwen3_5_tiny.h5 \\
      --mode conventional_shared/bf16                                                        # exit 1, FAIL

Needs numpy and h5py only.
"""
import argparse
import os

import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_kernels import gdn_decode  # noqa: E402  (this folder)


def run_layer(g, scale, state_format, placement):
    init = g["initial_state"][...] if "initial_state" in g else None
    return gdn_decode(g["q"][...], g["k"][...], g["v"][...], g["g"][...], g["beta"][...], scale, init,
                      state_format, placement)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--in", dest="inp", required=True, help="GDN activation dump")
    p.add_argument("--out", required=True, help="outputs (validate --external reads them)")
    p.add_argument("--format", choices=("bf16", "fp16"), default="bf16", help="the stored state's format")
    p.add_argument("--placement", choices=("right", "after", "none"), default="right")
    a = p.parse_args()
    tmp = a.out + ".tmp"
    try:
        with h5py.File(a.inp, "r") as f, h5py.File(tmp, "w") as out:
            if f.attrs.get("arch") != "gdn":
                raise SystemExit(f"{a.inp}: /@arch: not a GDN dump")
            K = f["layers"][next(iter(f["layers"]))]["q"].shape[-1]
            scale = float(f.attrs["scale"]) if "scale" in f.attrs else K ** -0.5
            out.attrs["kernel"] = f"numpy float32 GDN, state stored in {a.format}, placement {a.placement}"
            out.attrs["input"] = os.path.basename(a.inp)
            for name in sorted(f["layers"], key=int):
                o, S = run_layer(f["layers"][name], scale, a.format, a.placement)
                out[f"layers/{name}/o"] = o
                out[f"layers/{name}/final_state"] = S
        os.replace(tmp, a.out)  # atomic: never a half-written file under the final name
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print(f"numpy_stored_state_gdn: {a.inp} -> {a.out} ({a.format}, placement {a.placement})")


if __name__ == "__main__":
    main()
