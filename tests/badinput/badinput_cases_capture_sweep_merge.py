"""Bad-input cases of `replayssm capture`, `sweep` and `merge` on the tiny models: broken weights and configs, text
that is empty, too short or not a file, out-of-range options, outputs that name an input, and broken shards.
"""
import os

import h5py
import numpy as np

from badinput_driver import (MODELS, TEXT, Expect, case, cli, copy_model, out_in, poke_weight, replace_dataset,
    sweep_args, synth, text_file)


# ------------------------------------------------------------------------------------------- capture (tiny models)

def capture_args(model, text, out, tokens=8, offset=0):
    return ["capture", "--model", model, "--text", text, "--offset", offset, "--tokens", tokens, "--out", out,
            "--threads", "1"]


@case
def capture_nan_weight(tmp):
    m = copy_model(tmp, "gdn")
    poke_weight(m, "layers/1/mixer/in_v", np.nan)
    return Expect(capture_args(m, TEXT, out_in(tmp)), [m, "/layers/1/mixer/in_v", "NaN"], out=out_in(tmp))


@case
def capture_inf_weight(tmp):
    m = copy_model(tmp, "mamba2")
    poke_weight(m, "layers/0/mixer/A_log", np.inf)
    return Expect(capture_args(m, TEXT, out_in(tmp)), [m, "/layers/0/mixer/A_log", "Inf"], out=out_in(tmp))


@case
def capture_missing_tensor(tmp):
    m = copy_model(tmp, "gdn")
    with h5py.File(m, "r+") as f:
        del f["layers/2/w_up"]
    return Expect(capture_args(m, TEXT, out_in(tmp)), [m, "/layers/2/w_up", "missing"], out=out_in(tmp))


@case
def capture_wrong_shape_tensor(tmp):
    m = copy_model(tmp, "mamba2")
    with h5py.File(m, "r+") as f:
        a = f["layers/0/mixer/in_dt"][...]
        del f["layers/0/mixer/in_dt"]
        f["layers/0/mixer/in_dt"] = a[:-1]
    return Expect(capture_args(m, TEXT, out_in(tmp)), [m, "/layers/0/mixer/in_dt", "shape"], out=out_in(tmp))


@case
def capture_missing_config_attr(tmp):
    m = copy_model(tmp, "gdn")
    with h5py.File(m, "r+") as f:
        del f["config"].attrs["Hv"]
    return Expect(capture_args(m, TEXT, out_in(tmp)), [m, "/config", "Hv"], out=out_in(tmp))


@case
def capture_heads_mismatch_config(tmp):
    # Hv = 3 value heads with Hk = 1 would be fine, but the tensors are sized for Hv = 2: the first tensor whose
    # shape disagrees with the config is named.
    m = copy_model(tmp, "gdn")
    with h5py.File(m, "r+") as f:
        f["config"].attrs["Hv"] = np.int64(3)
    return Expect(capture_args(m, TEXT, out_in(tmp)), [m, "/layers/0/"], out=out_in(tmp))


@case
def capture_corrupt_compressed_tensor(tmp):
    # The file opens and the tensor's header is fine, but its gzip stream is garbage: the read fails cleanly.
    m = copy_model(tmp, "gdn")
    with h5py.File(m, "r") as f:
        info = f["layers/3/w_down"].id.get_chunk_info(0)
    with open(m, "r+b") as fh:
        fh.seek(info.byte_offset + 16)
        fh.write(b"\xde\xad\xbe\xef" * 64)
    return Expect(capture_args(m, TEXT, out_in(tmp)), [m, "/layers/3/w_down"], out=out_in(tmp))


@case
def capture_truncated_model(tmp):
    m = copy_model(tmp, "gdn")
    with open(m, "r+b") as fh:
        fh.truncate(os.path.getsize(m) // 2)
    return Expect(capture_args(m, TEXT, out_in(tmp)), [m], out=out_in(tmp))


@case
def capture_empty_text(tmp):
    t = text_file(tmp, b"", "empty.txt")
    return Expect(capture_args(os.path.join(MODELS, "tiny_gdn.h5"), t, out_in(tmp)), [t], out=out_in(tmp))


@case
def capture_tokens_beyond_text(tmp):
    t = text_file(tmp, b"0123456789", "short.txt")
    return Expect(capture_args(os.path.join(MODELS, "tiny_gdn.h5"), t, out_in(tmp), tokens=8, offset=5),
                  [t, "past the end"], out=out_in(tmp))


@case
def capture_offset_overflow(tmp):
    t = text_file(tmp, b"0123456789", "short.txt")
    return Expect(capture_args(os.path.join(MODELS, "tiny_gdn.h5"), t, out_in(tmp), tokens=8,
                               offset=2**63 - 4), [t], out=out_in(tmp))


@case
def capture_text_is_directory(tmp):
    d = os.path.join(tmp, "books")
    os.mkdir(d)
    return Expect(capture_args(os.path.join(MODELS, "tiny_gdn.h5"), d, out_in(tmp)), [d], out=out_in(tmp))


@case
def capture_tokens_zero(tmp):
    return Expect(capture_args(os.path.join(MODELS, "tiny_gdn.h5"), TEXT, out_in(tmp), tokens=0), ["--tokens"],
                  out=out_in(tmp))


@case
def capture_nonutf8_text_ok(tmp):
    # Byte-level models: every byte is a token, so invalid UTF-8 is valid input (exit 0, tokens stored verbatim).
    data = bytes([0xff, 0xfe, 0x80, 0xc3, 0x28, 0x00, 0xa0, 0xa1, 0xe2, 0x82])
    t = text_file(tmp, data, "latin.txt")
    return Expect(capture_args(os.path.join(MODELS, "tiny_gdn.h5"), t, out_in(tmp), tokens=10), [], code=0,
                  ok_outputs=[out_in(tmp)])


@case
def capture_out_equals_model(tmp):
    m = copy_model(tmp, "gdn")
    return Expect(capture_args(m, TEXT, m), ["tiny_gdn.h5", "--out"])


@case
def capture_out_equals_text(tmp):
    t = text_file(tmp, open(TEXT, "rb").read(4096), "book.txt")
    return Expect(capture_args(os.path.join(MODELS, "tiny_gdn.h5"), t, t), ["book.txt", "--out"])


# ---------------------------------------------------------------------------------------------------------- sweep

GDN = os.path.join(MODELS, "tiny_gdn.h5")


@case
def sweep_L_zero(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), L="0"), ["--L", "'0'"], out=out_in(tmp))


@case
def sweep_L_too_large(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), L="4,257"), ["--L", "257"], out=out_in(tmp))


@case
def sweep_L_overflow(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), L="99999999999"), ["--L", "99999999999"], out=out_in(tmp))


@case
def sweep_L_not_a_number(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), L="sixteen"), ["--L", "sixteen"], out=out_in(tmp))


@case
def sweep_tokens_zero(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), tokens="0"), ["--tokens"], out=out_in(tmp))


@case
def sweep_checkpoint_every_negative(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), checkpoint_every="-1"), ["--checkpoint-every"], out=out_in(tmp))


@case
def sweep_activations_with_checkpoint_every(tmp):
    # a dump sweep has no model runs to checkpoint: an explicit interval is refused, not silently dropped
    return Expect(["sweep", "--quiet", "--activations", out_in(tmp) + ".acts.h5", "--checkpoint-every", "64",
                   "--out", out_in(tmp)], ["--activations", "--checkpoint-every"], out=out_in(tmp))


@case
def sweep_tree_unknown(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), tree="bush"), ["--tree", "bush"], out=out_in(tmp))


@case
def sweep_tree_too_many_nodes(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), tree="binary:6"), ["--tree", "126 nodes", "64"], out=out_in(tmp))


@case
def sweep_tree_with_shard(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), tree="2,2", shard="0/2"), ["--tree", "--shard"], out=out_in(tmp))


@case
def sweep_tokens_beyond_text(tmp):
    t = text_file(tmp, b"abcdefgh", "short.txt")
    return Expect(sweep_args(GDN, out_in(tmp), text=t, tokens="8"), [t, "beyond the end"], out=out_in(tmp))


@case
def sweep_offset_overflow(tmp):
    t = text_file(tmp, b"abcdefghijklmnop", "short.txt")
    return Expect(sweep_args(GDN, out_in(tmp), text=t, offset=str(2**63 - 4)), [t, "--offset"], out=out_in(tmp))


@case
def sweep_empty_text(tmp):
    t = text_file(tmp, b"", "empty.txt")
    return Expect(sweep_args(GDN, out_in(tmp), text=t), [t, "empty"], out=out_in(tmp))


@case
def sweep_text_is_directory(tmp):
    d = os.path.join(tmp, "books")
    os.mkdir(d)
    return Expect(sweep_args(GDN, out_in(tmp), text=d), [d], out=out_in(tmp))


@case
def sweep_nonutf8_text_ok(tmp):
    t = text_file(tmp, bytes(range(256))[::-1] * 2, "bytes.bin")
    return Expect(sweep_args(GDN, out_in(tmp), text=t), [], code=0, ok_outputs=[out_in(tmp)])


@case
def sweep_unknown_format(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), formats="fp32,fp7"), ["--formats", "fp7"], out=out_in(tmp))


@case
def sweep_unknown_policy(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), policies="replay-sideways"), ["--policies", "replay-sideways"],
                  out=out_in(tmp))


@case
def sweep_unknown_rounding(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), formats="bf16", rounding="stochastic"), ["--rounding", "stochastic"],
                  out=out_in(tmp))


@case
def sweep_unknown_usource(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), u_source="magic"), ["--u-source", "magic"], out=out_in(tmp))


@case
def sweep_unknown_backend(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), backend="tpu"), ["--backend", "tpu"], out=out_in(tmp))


@case
def sweep_unknown_fp64(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), fp64="tpu"), ["--fp64", "tpu"], out=out_in(tmp))


@case
def sweep_tree_fp64_cuda(tmp):
    # tree rounds keep the FP64 model on the CPU: refused before any device is looked for
    return Expect(sweep_args(GDN, out_in(tmp), tree="2", fp64="cuda", checkpoint_every="0"), ["--fp64", "tree"],
                  out=out_in(tmp))


@case
def sweep_bad_shard(tmp):
    return Expect(sweep_args(GDN, out_in(tmp), shard="3/2"), ["--shard", "3/2"], out=out_in(tmp))


@case
def sweep_nan_weight(tmp):
    m = copy_model(tmp, "mamba2")
    poke_weight(m, "lm_head", np.nan)
    return Expect(sweep_args(m, out_in(tmp)), [m, "/lm_head", "NaN"], out=out_in(tmp))


@case
def sweep_model_not_hdf5(tmp):
    m = text_file(tmp, b"not a model", "model.h5")
    return Expect(sweep_args(m, out_in(tmp)), [m, "HDF5"], out=out_in(tmp))


@case
def sweep_missing_model_existing_out(tmp):
    # A rerun with an old results file in place and a typo in --model: the old file stays untouched.
    out = out_in(tmp, "results.h5")
    with h5py.File(out, "w") as f:
        f.attrs["old"] = 1
    m = os.path.join(tmp, "nope.h5")
    return Expect(sweep_args(m, out), [m])


@case
def sweep_out_equals_model(tmp):
    m = copy_model(tmp, "gdn")
    return Expect(sweep_args(m, m), ["tiny_gdn.h5", "--out"])


@case
def sweep_out_equals_text(tmp):
    t = text_file(tmp, open(TEXT, "rb").read(4096), "book.txt")
    return Expect(sweep_args(GDN, t, text=t), ["book.txt", "--out"])


@case
def sweep_unwritable_out(tmp):
    out = os.path.join(tmp, "no_dir", "results.h5")
    return Expect(sweep_args(GDN, out), [out])


@case
def sweep_out_in_proc(tmp):
    # A directory that exists but cannot hold files, even for root: refused before any work, exit 2.
    out = "/proc/replayssm_badinput_results.h5"
    return Expect(sweep_args(GDN, out), [out])


@case
def sweep_config_unknown_option(tmp):
    ini = text_file(tmp, b"tokens = 8\nflavour = vanilla\n", "exp.ini")
    return Expect(sweep_args(GDN, out_in(tmp), config=ini), [ini, "flavour"], out=out_in(tmp))


# ---------------------------------------------------------------------------------------------------------- merge

def make_shards(tmp, n=2):
    shards = []
    for i in range(n):
        s = os.path.join(tmp, f"shard{i}.h5")
        cli(*sweep_args(GDN, s, formats="fp32,bf16", shard=f"{i}/{n}"))
        shards.append(s)
    return shards


@case
def merge_not_hdf5(tmp):
    s0, _ = make_shards(tmp)
    bad = text_file(tmp, b"garbage", "shard1.h5")
    return Expect(["merge", "--out", out_in(tmp), s0, bad], [bad, "HDF5"], out=out_in(tmp))


@case
def merge_not_a_sweep(tmp):
    s0, _ = make_shards(tmp)
    acts = synth(tmp)
    return Expect(["merge", "--out", out_in(tmp), s0, acts], [acts, "/config"], out=out_in(tmp))


@case
def merge_incomplete(tmp):
    s0, _ = make_shards(tmp)
    return Expect(["merge", "--out", out_in(tmp), s0], ["missing"], out=out_in(tmp))


@case
def merge_wrong_run_shape(tmp):
    # A run whose state_drift disagrees with its flush_steps: refused, never written from a short buffer.
    s0, s1 = make_shards(tmp)
    with h5py.File(s1, "r+") as f:
        run = sorted(f["runs"])[0]
        replace_dataset(s1, f"runs/{run}/state_drift", np.zeros((1, 1)))
    return Expect(["merge", "--out", out_in(tmp), s0, s1], [s1, "state_drift"], out=out_in(tmp))


@case
def merge_out_equals_input_alias(tmp):
    s0, s1 = make_shards(tmp)
    alias = os.path.join(tmp, ".", "shard0.h5")
    return Expect(["merge", "--out", alias, s0, s1], ["shard0.h5", "--out"])
