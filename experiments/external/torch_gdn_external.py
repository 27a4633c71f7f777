#!/usr/bin/env python3
"""An outside kernel checked by `replayssm validate --external`: transformers' own torch GDN recurrence
(`torch_recurrent_gated_delta_rule` from transformers.models.qwen3_5.modeling_qwen3_5) in float32.

Reads a GDN activation dump (datasets/README.md), runs every layer through that function and writes what
`validate --external` reads:
  /layers/<i>/o            [T, Hv, V]  the function's output
  /layers/<i>/final_state  [Hv, V, K]  its final state, transposed from HF/FLA's [Hv, K, V] to replayssm's layout
With --corrupt, also writes a copy whose layer-0 head-0 outputs from position T/2 on are scaled by (1 + 1e-3): a
relative RMS error of about 7e-4, above the default bound 1e-4, so validate must fail on it.

  python3 experiments/external/torch_gdn_external.py --in datasets/external/qwen35_tiny.h5 --out theirs.h5 \
      --corrupt theirs_bad.h5
  replayssm validate --external theirs.h5 --activations datasets/external/qwen35_tiny.h5       # exit 0, PASS
  replayssm validate --external theirs_bad.h5 --activations datasets/external/qwen35_tiny.h5   # exit 1, FAIL

Needs torch, transformers (>= 5, with qwen3_5) and h5py.
"""
import argparse
import os
import shutil

import h5py
import numpy as np
import torch
from transformers.models.qwen3_5 import modeling_qwen3_5

CORRUPT_FACTOR = 1.0 + 1e-3


def pure_torch(fn):
    """The torch function under any hub-kernel decorator (never an FLA kernel)."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def run_layer(g):
    recurrent = pure_torch(modeling_qwen3_5.torch_recurrent_gated_delta_rule)
    q, k, v = (torch.from_numpy(g[n][...].astype(np.float32)) for n in ("q", "k", "v"))
    gg, beta = (torch.from_numpy(g[n][...].astype(np.float32)) for n in ("g", "beta"))
    ratio = v.shape[1] // q.shape[1]  # value head h reads key head h // ratio (as the model's repeat_interleave)
    q, k = q.repeat_interleave(ratio, dim=1), k.repeat_interleave(ratio, dim=1)
    init = None
    if "initial_state" in g:  # replayssm [Hv, V, K] -> HF [1, Hv, K, V]
        init = torch.from_numpy(g["initial_state"][...].astype(np.float32)).transpose(-1, -2)[None].contiguous()
    with torch.no_grad():
        o, state = recurrent(q[None], k[None], v[None], gg[None], beta[None], initial_state=init,
                             output_final_state=True, use_qk_l2norm_in_kernel=False)  # dump q, k are normalised
    return o[0].numpy(), state[0].transpose(-1, -2).contiguous().numpy()


def write_outputs(inp, out_path):
    with h5py.File(inp, "r") as f, h5py.File(out_path, "w") as out:
        if f.attrs.get("arch", f["meta"].attrs.get("arch") if "meta" in f else None) != "gdn":
            raise SystemExit(f"{inp}: /@arch: not a GDN dump")
        K = f["layers"][next(iter(f["layers"]))]["q"].shape[-1]
        if "scale" in f.attrs and abs(float(f.attrs["scale"]) * K ** 0.5 - 1.0) > 1e-7:
            raise SystemExit(f"{inp}: /@scale: the torch function always scales q by 1/sqrt(K)")
        out.attrs["kernel"] = "transformers.models.qwen3_5.modeling_qwen3_5.torch_recurrent_gated_delta_rule"
        out.attrs["dtype"] = "float32"
        out.attrs["input"] = os.path.basename(inp)
        out.attrs["torch"] = str(torch.__version__)
        out.attrs["transformers"] = str(__import__("transformers").__version__)
        for name in sorted(f["layers"], key=int):
            o, s = run_layer(f["layers"][name])
            out[f"layers/{name}/o"] = o
            out[f"layers/{name}/final_state"] = s


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--in", dest="inp", required=True, help="GDN activation dump")
    p.add_argument("--out", required=True, help="outputs of the torch recurrence (validate --external reads it)")
    p.add_argument("--corrupt", help="also write a corrupted copy here")
    a = p.parse_args()
    try:
        write_outputs(a.inp, a.out + ".tmp")
        os.replace(a.out + ".tmp", a.out)  # atomic: never a half-written file under the final name
    finally:
        if os.path.exists(a.out + ".tmp"):
            os.remove(a.out + ".tmp")
    print(f"torch_gdn_external: {a.inp} -> {a.out}")
    if a.corrupt:
        shutil.copyfile(a.out, a.corrupt)
        with h5py.File(a.corrupt, "r+") as f:
            first = sorted(f["layers"], key=int)[0]
            o = f[f"layers/{first}/o"]
            T = o.shape[0]
            o[T // 2:, 0, :] = o[T // 2:, 0, :] * np.float32(CORRUPT_FACTOR)
            f.attrs["corrupted"] = f"layer {first} head 0 positions {T // 2}.. scaled by {CORRUPT_FACTOR}"
        print(f"torch_gdn_external: corrupted copy -> {a.corrupt}")


if __name__ == "__main__":
    main()
