"""Bad-input cases of `replayssm reference`: activation dumps that are missing, truncated, corrupt, of the wrong
shape or type, holding NaN/Inf, and output paths that name an input or cannot be written.
"""
import os

import h5py
import numpy as np

from badinput_driver import Expect, case, out_in, replace_dataset, synth, text_file


# ------------------------------------------------------------------------------------- activation dumps (reference)

@case
def ref_missing_file(tmp):
    p = os.path.join(tmp, "nope.h5")
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "no such file"], out=out_in(tmp))


@case
def ref_empty_file(tmp):
    p = text_file(tmp, b"", "empty.h5")
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "not an HDF5 file"], out=out_in(tmp))


@case
def ref_not_hdf5(tmp):
    p = text_file(tmp, b"this is plain text, not HDF5\n" * 100, "text.h5")
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "not an HDF5 file"], out=out_in(tmp))


@case
def ref_truncated_h5(tmp):
    p = synth(tmp, tokens=256)
    size = os.path.getsize(p)
    with open(p, "r+b") as fh:
        fh.truncate(size // 2)
    # Truncation is caught at open (EOF check) or at the first read; either way the file is named.
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p], out=out_in(tmp))


@case
def ref_truncated_superblock(tmp):
    p = synth(tmp)
    with open(p, "r+b") as fh:
        fh.truncate(40)
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "HDF5"], out=out_in(tmp))


@case
def ref_corrupt_data(tmp):
    # Valid header, garbage in the middle of the file (object headers, B-trees, data): must not crash.
    p = synth(tmp, tokens=128)
    size = os.path.getsize(p)
    rng = np.random.default_rng(7)
    with open(p, "r+b") as fh:
        fh.seek(size // 4)
        fh.write(rng.integers(0, 256, size // 2, dtype=np.uint8).tobytes())
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p], out=out_in(tmp))


@case
def ref_missing_dataset(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        del f["layers/0/k"]
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/k", "missing"], out=out_in(tmp))


@case
def ref_missing_arch_attr(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        del f.attrs["arch"]
        del f["meta"].attrs["arch"]  # the reader falls back to /meta@arch
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "arch", "missing"], out=out_in(tmp))


@case
def ref_unknown_arch_attr(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        f.attrs["arch"] = "rwkv7"
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "arch", "rwkv7"], out=out_in(tmp))


@case
def ref_no_layers(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        del f["layers/0"]
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers", "no layers"], out=out_in(tmp))


@case
def ref_wrong_rank(tmp):
    p = synth(tmp)
    replace_dataset(p, "layers/0/q", np.zeros((16, 8), np.float32))
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/q", "rank"], out=out_in(tmp))


@case
def ref_wrong_shape(tmp):
    p = synth(tmp)
    replace_dataset(p, "layers/0/k", np.zeros((16, 1, 4), np.float32))
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/k", "shape"], out=out_in(tmp))


@case
def ref_scalar_dataset(tmp):
    p = synth(tmp)
    replace_dataset(p, "layers/0/q", np.float32(1.0))
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/q", "rank"], out=out_in(tmp))


@case
def ref_string_dataset(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        del f["layers/0/q"]
        f["layers/0/q"] = np.array([b"abc", b"def"])
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/q", "numeric"], out=out_in(tmp))


@case
def ref_gdn_heads_mismatch(tmp):
    # Hv = 3 value heads cannot share Hk = 2 key heads.
    p = synth(tmp, heads=4, key_heads=2)
    with h5py.File(p, "r+") as f:
        for n in ("v", "g", "beta"):
            a = f["layers/0/" + n][...]
            del f["layers/0/" + n]
            f["layers/0/" + n] = a[:, :3]
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/v", "multiple of key heads"],
                  out=out_in(tmp))


@case
def ref_mamba2_groups_mismatch(tmp):
    p = synth(tmp, arch="mamba2", heads=4, groups=2)
    with h5py.File(p, "r+") as f:
        for n in ("B", "C"):
            a = f["layers/0/" + n][...]
            del f["layers/0/" + n]
            f["layers/0/" + n] = np.concatenate([a, a[:, :1]], axis=1)  # G = 3
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/B", "multiple of groups"],
                  out=out_in(tmp))


@case
def ref_dt_heads_mismatch(tmp):
    p = synth(tmp, arch="mamba2", heads=4, groups=2)
    replace_dataset(p, "layers/0/dt", np.full((16, 3), 0.1, np.float32))
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/dt", "shape"], out=out_in(tmp))


@case
def ref_nan_activation(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        a = f["layers/0/v"][...]
        a[3, 1, 2] = np.nan
        f["layers/0/v"][...] = a
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/v", "NaN"], out=out_in(tmp))


@case
def ref_inf_activation(tmp):
    p = synth(tmp, arch="mamba2", heads=4, groups=2)
    with h5py.File(p, "r+") as f:
        a = f["layers/0/dt"][...]
        a[5, 0] = np.inf
        f["layers/0/dt"][...] = a
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/dt", "Inf"], out=out_in(tmp))


@case
def ref_positive_log_decay(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        a = f["layers/0/g"][...]
        a[0, 0] = 0.5
        f["layers/0/g"][...] = a
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/g", "out of range"], out=out_in(tmp))


@case
def ref_bad_scale_attr(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        f.attrs["scale"] = -1.0
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "scale"], out=out_in(tmp))


@case
def ref_out_equals_in(tmp):
    p = synth(tmp)
    return Expect(["reference", "--in", p, "--out", p], [p, "--out"])


@case
def ref_out_equals_in_alias(tmp):
    # The same file under another spelling: must still be refused (and the input left intact).
    p = synth(tmp)
    alias = os.path.join(tmp, ".", "acts.h5")
    return Expect(["reference", "--in", p, "--out", alias], ["acts.h5", "--out"])


@case
def ref_unwritable_out(tmp):
    p = synth(tmp)
    out = os.path.join(tmp, "no_such_dir", "out.h5")
    return Expect(["reference", "--in", p, "--out", out], [out])


@case
def ref_out_is_directory(tmp):
    p = synth(tmp)
    d = os.path.join(tmp, "adir")
    os.mkdir(d)
    return Expect(["reference", "--in", p, "--out", d], [d])


@case
def ref_L_zero(tmp):
    p = synth(tmp)
    return Expect(["reference", "--in", p, "--out", out_in(tmp), "--check-forms", "--L", "0"], ["--L"],
                  out=out_in(tmp))
