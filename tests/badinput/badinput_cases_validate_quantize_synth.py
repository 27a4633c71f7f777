"""Bad-input cases of `replayssm validate`, `bench` (speculative trees), `quantize` and `synth`: unknown names,
impossible shapes and options, broken activation files, and outputs that cannot be written.
"""
import os

import h5py
import numpy as np

from badinput_driver import Expect, case, out_in, replace_dataset, synth


# ------------------------------------------------------------------------------------------------------- validate

@case
def validate_unknown_arch(tmp):
    return Expect(["validate", "--arch", "rwkv7", "--backend", "emulated"], ["--arch", "rwkv7"])


@case
def validate_unknown_backend(tmp):
    return Expect(["validate", "--backend", "tpu"], ["--backend", "tpu"])


@case
def validate_unknown_shapes(tmp):
    return Expect(["validate", "--backend", "emulated", "--shapes", "gpt5"], ["--shapes", "gpt5"])


@case
def validate_tree_unknown(tmp):
    return Expect(["validate", "--backend", "emulated", "--tree", "bush"], ["--tree", "bush"])


@case
def bench_tree_unknown(tmp):
    return Expect(["bench", "--tree", "bush"], ["--tree", "bush"])


@case
def bench_tree_too_many_nodes(tmp):
    return Expect(["bench", "--tree", "chain:4", "--tree", "star:65"], ["--tree", "65 nodes", "64"])


@case
def validate_tree_too_many_nodes(tmp):
    return Expect(["validate", "--backend", "emulated", "--tree", "binary:6"], ["--tree", "126 nodes", "64"])


@case
def validate_tree_zero_branching(tmp):
    return Expect(["validate", "--backend", "emulated", "--tree", "4,0,2"], ["--tree", "'0'"])


@case
def validate_acts_nan(tmp):
    p = synth(tmp)
    with h5py.File(p, "r+") as f:
        a = f["layers/0/q"][...]
        a[0, 0, 0] = np.nan
        f["layers/0/q"][...] = a
    return Expect(["validate", "--backend", "emulated", "--arch", "gdn", "--activations", p],
                  [p, "/layers/0/q", "NaN"])


@case
def validate_acts_truncated(tmp):
    p = synth(tmp, tokens=256)
    with open(p, "r+b") as fh:
        fh.truncate(os.path.getsize(p) // 3)
    return Expect(["validate", "--backend", "emulated", "--arch", "gdn", "--activations", p], [p])


@case
def validate_acts_wrong_shape(tmp):
    p = synth(tmp, arch="mamba2", heads=4, groups=2)
    replace_dataset(p, "layers/0/A", np.full((3,), -1.0, np.float32))
    return Expect(["validate", "--backend", "emulated", "--arch", "mamba2", "--activations", p],
                  [p, "/layers/0/A", "shape"])


@case
def validate_max_tokens_negative(tmp):
    p = synth(tmp)
    return Expect(["validate", "--backend", "emulated", "--arch", "gdn", "--activations", p, "--max-tokens", "-3"],
                  ["--max-tokens"])


# ------------------------------------------------------------------------------------------------------- quantize

def state_file(tmp, shape=(2, 4, 32)):
    p = os.path.join(tmp, "state.h5")
    with h5py.File(p, "w") as f:
        f["s"] = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    return p


@case
def quantize_unknown_format(tmp):
    p = state_file(tmp)
    return Expect(["quantize", "--format", "fp7", "--in", p + ":/s", "--out", out_in(tmp)], ["fp7", "format"],
                  out=out_in(tmp))


@case
def quantize_invalid_scaling(tmp):
    p = state_file(tmp)
    return Expect(["quantize", "--format", "nvfp4", "--scaling", "row", "--in", p + ":/s", "--out", out_in(tmp)],
                  ["nvfp4", "row"], out=out_in(tmp))


@case
def quantize_unknown_rounding(tmp):
    p = state_file(tmp)
    return Expect(["quantize", "--format", "bf16", "--rounding", "up", "--in", p + ":/s", "--out", out_in(tmp)],
                  ["rounding", "up"], out=out_in(tmp))


@case
def quantize_missing_dataset(tmp):
    p = state_file(tmp)
    return Expect(["quantize", "--format", "bf16", "--in", p + ":/nope", "--out", out_in(tmp)], [p, "/nope"],
                  out=out_in(tmp))


@case
def quantize_rank1(tmp):
    p = state_file(tmp, shape=(64,))
    return Expect(["quantize", "--format", "bf16", "--in", p + ":/s", "--out", out_in(tmp)], [p, "/s", "rank"],
                  out=out_in(tmp))


@case
def quantize_empty_array(tmp):
    p = state_file(tmp, shape=(0, 4, 32))
    return Expect(["quantize", "--format", "nvfp4", "--in", p + ":/s", "--out", out_in(tmp)], [p, "/s", "empty"],
                  out=out_in(tmp))


@case
def quantize_no_dataset_spec(tmp):
    p = state_file(tmp)
    return Expect(["quantize", "--format", "bf16", "--in", p, "--out", out_in(tmp)], [p, "--in"], out=out_in(tmp))


@case
def quantize_out_equals_in(tmp):
    p = state_file(tmp)
    return Expect(["quantize", "--format", "bf16", "--in", p + ":/s", "--out", p], ["state.h5", "--out"])


# ---------------------------------------------------------------------------------------------------------- synth

@case
def synth_unknown_arch(tmp):
    return Expect(["synth", "--arch", "rwkv7", "--out", out_in(tmp)], ["rwkv7", "arch"], out=out_in(tmp))


@case
def synth_tokens_zero(tmp):
    return Expect(["synth", "--arch", "gdn", "--tokens", "0", "--out", out_in(tmp)], ["--tokens"], out=out_in(tmp))


@case
def synth_heads_not_multiple(tmp):
    return Expect(["synth", "--arch", "gdn", "--heads", "3", "--key-heads", "2", "--tokens", "4", "--key-dim", "8",
                   "--value-dim", "8", "--out", out_in(tmp)], ["--heads", "--key-heads"], out=out_in(tmp))


@case
def synth_unwritable_out(tmp):
    out = os.path.join(tmp, "missing_dir", "acts.h5")
    return Expect(["synth", "--arch", "gdn", "--tokens", "4", "--out", out], [out])
