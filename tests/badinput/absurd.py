#!/usr/bin/env python3
"""Absurd-input corpus: values that parse but mean nothing, sizes no machine holds, sources that never end.

Same driver and contract as badinput.py (one CTest test per case, label `badinput`; `absurd.py --list`): exit 2 with
one line naming the file and the field (or the option), nothing left behind. A few cases are valid input that looks
odd (a text source that never ends is read only as far as the slice needs) and expect exit 0 and an output.
"""
import os
import sys

import h5py
import numpy as np

import badinput as b
from badinput import Expect, case, cli, out_in, synth, sweep_args, text_file

GDN = os.path.join(b.MODELS, "tiny_gdn.h5")
HUGE_TOKENS = "2000000000"


# -------------------------------------------------------------------------- sizes: estimate before allocating

@case
def ref_huge_declared_shape(tmp):
    """A tiny file declaring unwritten (fill-value) datasets of terabytes: refused before any allocation."""
    p = os.path.join(tmp, "huge.h5")
    with h5py.File(p, "w") as f:
        f.attrs["arch"] = "gdn"
        for n, s in [("q", (10**6, 1000, 1000)), ("k", (10**6, 1000, 1000)), ("v", (10**6, 1000, 1000)),
                     ("g", (10**6, 1000)), ("beta", (10**6, 1000))]:
            f.create_dataset("layers/0/" + n, shape=s, dtype="f4")
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers", "memory"], out=out_in(tmp))


@case
def ref_layer_name_beyond_int64(tmp):
    """Layers are named by integers of any length: one that fits no integer type is still ordered, not an error."""
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        f.copy("layers/0", "layers/99999999999999999999999")
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [], code=0, ok_outputs=[out_in(tmp)])


@case
def synth_tokens_huge(tmp):
    return Expect(["synth", "--arch", "gdn", "--tokens", HUGE_TOKENS, "--out", out_in(tmp)], ["--tokens", "memory"],
                  out=out_in(tmp))


@case
def capture_text_never_ends_ok(tmp):
    """/dev/zero never ends: only the slice is read (zero bytes are tokens like any other)."""
    return Expect(["capture", "--model", GDN, "--text", "/dev/zero", "--tokens", "8", "--out", out_in(tmp)], [],
                  code=0, ok_outputs=[out_in(tmp)])


@case
def sweep_text_never_ends_ok(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), text="/dev/zero"), [], code=0, ok_outputs=[out_in(tmp)])


@case
def sweep_text_never_ends_huge_tokens(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), text="/dev/zero", tokens=HUGE_TOKENS), ["/dev/zero", "--tokens"],
                  out=out_in(tmp))


@case
def capture_text_never_ends_huge_offset(tmp):
    return Expect(["capture", "--model", GDN, "--text", "/dev/zero", "--offset", str(2**62), "--tokens", "8",
                   "--out", out_in(tmp)], ["/dev/zero", "--offset"], out=out_in(tmp))


# ----------------------------------------------------------------- values Boost parses but no option means

@case
def synth_decay_nan(tmp):
    return Expect(["synth", "--arch", "gdn", "--decay-log-min", "nan", "--out", out_in(tmp)], ["--decay-log-min"],
                  out=out_in(tmp))


@case
def synth_decay_inf(tmp):
    return Expect(["synth", "--arch", "mamba2", "--decay-log-max", "inf", "--out", out_in(tmp)], ["--decay-log-max"],
                  out=out_in(tmp))


@case
def synth_decay_overflows_float32(tmp):
    return Expect(["synth", "--arch", "gdn", "--decay-log-min", "89", "--decay-log-max", "1000", "--out",
                   out_in(tmp)], ["--decay-log-min"], out=out_in(tmp))


@case
def synth_seed_negative(tmp):
    return Expect(["synth", "--arch", "gdn", "--seed", "-1", "--out", out_in(tmp)], ["--seed", "-1"], out=out_in(tmp))


@case
def synth_value_dim_negative(tmp):
    return Expect(["synth", "--arch", "gdn", "--value-dim", "-8", "--out", out_in(tmp)], ["--value-dim"],
                  out=out_in(tmp))


@case
def sweep_seed_negative(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), seed="-3"), ["--seed", "-3"], out=out_in(tmp))


@case
def sweep_config_seed_negative(tmp):
    ini = text_file(tmp, b"seed = -1\n", "exp.ini")
    return Expect(sweep_args(GDN, out_in(tmp), config=ini), [ini, "--seed"], out=out_in(tmp))


@case
def sweep_jobs_negative(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), jobs="-1"), ["--jobs"], out=out_in(tmp))


@case
def sweep_list_empty_item(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), formats="fp32,,bf16"), ["--formats", "empty item"], out=out_in(tmp))


@case
def sweep_list_trailing_comma(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), L="4,"), ["--L", "empty item"], out=out_in(tmp))


@case
def quantize_seed_negative(tmp):
    p = os.path.join(tmp, "x.h5")
    with h5py.File(p, "w") as f:
        f["x"] = np.ones((1, 2, 32), dtype="f4")
    return Expect(["quantize", "--format", "fp8_e4m3", "--rounding", "sr", "--seed", "-5", "--in", p + ":/x",
                   "--out", out_in(tmp)], ["--seed"], out=out_in(tmp))


@case
def sweep_list_repeated_item(tmp):
    """fp8_e4m3 is fp8_e4m3:row (its default scaling): the plan would silently hold one run, not two."""
    return Expect(sweep_args(GDN, out_in(tmp), formats="fp8_e4m3,fp8_e4m3:row"), ["--formats", "repeats"],
                  out=out_in(tmp))


@case
def sweep_models_same_name(tmp):
    d = os.path.join(tmp, "other")
    os.mkdir(d)
    other = b.copy_model(d)
    argv = sweep_args(GDN, out_in(tmp))
    i = argv.index("--model")
    argv[i + 1:i + 2] = [GDN, other]
    return Expect(argv, ["--model", "tiny_gdn"], out=out_in(tmp))


@case
def sweep_config_never_ends(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), config="/dev/zero"), ["/dev/zero", "--config"], out=out_in(tmp))


@case
def bench_list_empty_item(tmp):
    return Expect(["bench", "--formats", "fp32,,fp8_e4m3", "--out", "", "--csv", ""], ["--formats", "empty item"])


# ------------------------------------------------------------------------------- dump fields and their ranges

def set_field(path, name, fn):
    with h5py.File(path, "r+") as f:
        a = f[name][...]
        a = fn(a)
        del f[name]
        f[name] = a


@case
def ref_beta_above_one(tmp):
    p = synth(tmp)
    set_field(p, "layers/0/beta", lambda a: a + 1.0)
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/beta", "allow_neg_eigval"],
                  out=out_in(tmp))


@case
def ref_beta_negative(tmp):
    p = synth(tmp)
    set_field(p, "layers/0/beta", lambda a: a - 1.0)
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/beta"], out=out_in(tmp))


@case
def ref_beta_neg_eigval_ok(tmp):
    """FLA's negative-eigenvalue variant: beta in [0, 2] where the dump asks for it."""
    p = synth(tmp)
    set_field(p, "layers/0/beta", lambda a: a * 2.0)
    with h5py.File(p, "r+") as f:
        f.attrs["allow_neg_eigval"] = 1
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [], code=0, ok_outputs=[out_in(tmp)])


@case
def ref_beta_above_two_neg_eigval(tmp):
    p = synth(tmp)
    set_field(p, "layers/0/beta", lambda a: a + 2.0)
    with h5py.File(p, "r+") as f:
        f.attrs["allow_neg_eigval"] = 1
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/beta"], out=out_in(tmp))


@case
def ref_neg_eigval_attr_bad(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        f.attrs["allow_neg_eigval"] = 3
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "allow_neg_eigval"], out=out_in(tmp))


@case
def ref_q_not_normalised(tmp):
    p = synth(tmp)
    set_field(p, "layers/0/q", lambda a: a * 2.0)
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/q", "norm"], out=out_in(tmp))


@case
def ref_k_not_normalised(tmp):
    p = synth(tmp)
    set_field(p, "layers/0/k", lambda a: a * (1.0 + 1e-3))
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "/layers/0/k", "norm"], out=out_in(tmp))


# ---------------------------------------------------------------------- found by fuzz_readers (tests/fuzz)

@case
def capture_model_config_uint64_max(tmp):
    """An integer attribute beyond int64 (uint64 max) was cast from double to int64: undefined behaviour."""
    m = b.copy_model(tmp)
    with h5py.File(m, "r+") as f:
        del f["config"].attrs["conv_kernel"]
        f["config"].attrs.create("conv_kernel", np.uint64(2**64 - 1), dtype=np.uint64)
    t = text_file(tmp, b"abcdefgh")
    return Expect(["capture", "--model", m, "--text", t, "--tokens", "4", "--out", out_in(tmp)],
                  [m, "/config/@conv_kernel", "out of range"], out=out_in(tmp))


@case
def ref_neg_eigval_attr_uint64_max(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        f.attrs.create("allow_neg_eigval", np.uint64(2**64 - 1), dtype=np.uint64)
    return Expect(["reference", "--in", p, "--out", out_in(tmp)], [p, "allow_neg_eigval", "out of range"],
                  out=out_in(tmp))


# --------------------------------------------------------------------------------- outputs checked up front

@case
def sweep_out_empty(tmp):
    return Expect(sweep_args(GDN, "", tokens="4096"), ["--out"])


@case
def sweep_activations_out_empty(tmp):
    return Expect(["sweep", "--activations", synth(tmp), "--formats", "fp32", "--out", ""], ["--out"])


@case
def synth_out_empty(tmp):
    return Expect(["synth", "--arch", "gdn", "--out", ""], ["--out"])


@case
def synth_out_is_a_pipe(tmp):
    """The atomic rename would replace whatever --out names: never a pipe or a device (think /dev/null as root)."""
    p = os.path.join(tmp, "pipe")
    os.mkfifo(p)
    return Expect(["synth", "--arch", "gdn", "--tokens", "4", "--out", p], [p, "--out"])


@case
def sweep_out_is_directory(tmp):
    d = os.path.join(tmp, "res.h5")
    os.mkdir(d)
    return Expect(sweep_args(GDN, d), [d, "--out"])


if __name__ == "__main__":
    # Only this file's cases: badinput.py lists its own.
    own = {k: v for k, v in b.CASES.items() if v.__module__ == __name__ or v.__module__ == "__main__"}
    b.CASES.clear()
    b.CASES.update(own)
    sys.exit(b.main())
