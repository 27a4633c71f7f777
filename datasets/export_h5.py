#!/usr/bin/python3
"""Convert the npz outputs of train_tiny.py into the committed HDF5 files (needs only numpy + h5py).

  /usr/bin/python3 datasets/export_h5.py IN_DIR datasets/models

writes, per arch found in IN_DIR:
  tiny_<arch>.h5         /config (attrs), every tensor as float32 (bf16-exact values), gzip+shuffle;
                         root attrs: format, arch, lm_head ("untied"), training metrics (bits/byte etc.)
  tiny_<arch>.golden.h5  /tokens uint8 [n], /logprobs float64 [n, 256] (row t: log p(byte t+1 | bytes 0..t)),
                         attrs: model, text (book file), offset, n_tokens, form
"""
import json
import os
import sys

import h5py
import numpy as np


def export(in_dir, out_dir, arch):
    npz = np.load(os.path.join(in_dir, f"tiny_{arch}.npz"))
    cfg = json.loads(str(npz["__config__"]))
    mpath = os.path.join(in_dir, f"tiny_{arch}.metrics.json")
    metrics = json.load(open(mpath)) if os.path.exists(mpath) else {}
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"tiny_{arch}.h5")
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        f.attrs["format"] = "replayssm-tiny-lm-v1"
        f.attrs["arch"] = arch
        f.attrs["lm_head"] = "untied"
        f.attrs["weight_layout"] = "linear weights [out, in] (y = x W^T); conv [channels, kernel], causal"
        for k in ("params", "steps", "seq", "batch", "lr", "seed", "train_seconds", "train_bytes", "train_books",
                  "test_bpb", "eval_seq", "unigram_bpb", "long_book", "long_n", "long_bpb", "torch", "device"):
            if k in metrics:
                f.attrs["train." + k] = metrics[k]
        g = f.create_group("config")
        for k, v in cfg.items():
            g.attrs[k] = v
        for name in sorted(npz.files):
            if name == "__config__":
                continue
            a = np.asarray(npz[name], dtype=np.float32)
            bits = a.view(np.uint32)
            assert not np.any(bits & 0xFFFF), f"{name}: not bf16-exact"
            kw = dict(compression="gzip", compression_opts=9, shuffle=True) if a.size >= 1024 else {}
            f.create_dataset(name, data=a, **kw)
    os.replace(tmp, path)
    gz = np.load(os.path.join(in_dir, f"tiny_{arch}.golden.npz"))
    gpath = os.path.join(out_dir, f"tiny_{arch}.golden.h5")
    with h5py.File(gpath + ".tmp", "w") as f:
        f.attrs["model"] = f"tiny_{arch}.h5"
        f.attrs["text"] = "pg19/test/" + str(gz["book"])
        f.attrs["offset"] = int(gz["offset"])
        f.attrs["n_tokens"] = int(len(gz["tokens"]))
        f.attrs["form"] = "PyTorch float64, recurrent form, CPU (datasets/train_tiny.py golden())"
        f.create_dataset("tokens", data=np.asarray(gz["tokens"], dtype=np.uint8))
        f.create_dataset("logprobs", data=np.asarray(gz["logprobs"], dtype=np.float64))
    os.replace(gpath + ".tmp", gpath)
    print(f"{path}: {os.path.getsize(path)} bytes; {gpath}: {os.path.getsize(gpath)} bytes")


def main():
    in_dir, out_dir = sys.argv[1], sys.argv[2]
    for arch in ("gdn", "mamba2"):
        if os.path.exists(os.path.join(in_dir, f"tiny_{arch}.npz")):
            export(in_dir, out_dir, arch)


if __name__ == "__main__":
    main()
