#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_readers (tests/fuzz/corpus/): for each reader, a program in the byte language of
fuzz_file_builder.h that builds the smallest valid file it accepts (selector 0 activation dump, 1 sweep results,
2 tiny model). Deterministic, a few hundred bytes; `python3 tests/fuzz/make_corpus.py` rewrites the folder. The
tables below mirror fuzz_file_builder.h (same order): change both together."""
import math
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

PATHS = [f"/layers/{l}/{f}" for l in ("0", "1", "99999999999999999999999", "x")
         for f in ("q", "k", "v", "g", "beta", "x", "B", "C", "dt", "A", "D", "initial_state", "o")]
PATHS += ["/config/plan", "/bins", "/reference/m/nll", "/runs/r/kl", "/runs/r/nll", "/runs/r/top1",
          "/runs/r/kl_binned", "/runs/r/output_drift", "/runs/r/flush_steps", "/runs/r/state_drift",
          "/embed", "/final_norm", "/lm_head"]
PATHS += ["/layers/0/" + t for t in (
    "norm1", "norm2", "w_gate", "w_up", "w_down", "mixer/in_q", "mixer/in_k", "mixer/in_v", "mixer/in_z",
    "mixer/in_a", "mixer/in_b", "mixer/conv_q", "mixer/conv_k", "mixer/conv_v", "mixer/A_log", "mixer/dt_bias",
    "mixer/norm", "mixer/out", "mixer/in_x", "mixer/in_B", "mixer/in_C", "mixer/in_dt", "mixer/conv_x",
    "mixer/conv_B", "mixer/conv_C", "mixer/conv_bias_x", "mixer/conv_bias_B", "mixer/conv_bias_C", "mixer/D")]
OBJECTS = ["/", "/config", "/meta", "/runs/r", "/reference/m", "/reference/m/nll", "/layers/0", "/layers/0/q"]
ATTRS = ["arch", "scale", "allow_neg_eigval", "config_hash", "id", "index", "elapsed_s", "L", "seed", "diverged_at",
         "vocab", "d_model", "n_layers", "d_ff", "conv_kernel", "norm_eps", "gated_norm_eps", "l2norm_eps", "Hk", "Hv",
         "K", "V", "H", "G", "P", "N", "d_inner", "model"]
STRINGS = ["gdn", "mamba2", "", "1", "-1", "16", "0123456789abcdef", "x", "r", "18446744073709551615",
           "99999999999999999999", "-", "1e3"]
INTS = [0, 1, 2, -1, 16, 256, 1 << 24, (1 << 24) + 1, 128, 4, "max", "min"]
FLOATS = [0.0, 1.0, -1.0, 0.5, -0.5, 1e-6, 2.0, 0.25, "-0", 1.5, "nan", "inf", "-inf", 1e300, 1e38, -1e-38, 256.0,
          0.75]
DIMS = [0, 1, 2, 3, 4, 5, 8, 16, 256, 1 << 20, 1 << 40]
F32, F64, I64, U8, STR = range(5)


def ds(path, dtype, dims, pattern):
    """A dataset; pattern: values (floats from FLOATS, or strings from STRINGS for STR) repeated over the elements."""
    table = STRINGS if dtype == STR else FLOATS
    return [0, PATHS.index(path), dtype, len(dims)] + [DIMS.index(d) for d in dims] + \
        [len(pattern) - 1] + [table.index(v) for v in pattern]


def attr(obj, name, kind, value):
    """kind 0 string, 1 int64, 2 double, 3 uint64 (value: index 0, 1 or 2 -> 0, 1, max)."""
    table = {0: STRINGS, 1: INTS, 2: FLOATS}.get(kind)
    return [1, OBJECTS.index(obj), ATTRS.index(name), kind, table.index(value) if table else value]


def gdn_dump():
    p = attr("/", "arch", 0, "gdn")
    for f, pat in (("q", [1.0, 0.0]), ("k", [0.0, 1.0]), ("v", [1.0, -1.0])):
        p += ds("/layers/0/" + f, F32, [2, 1, 2], pat)
    return [0] + p + ds("/layers/0/g", F32, [2, 1], [-0.5]) + ds("/layers/0/beta", F32, [2, 1], [0.5])


def mamba2_dump():
    p = attr("/", "arch", 0, "mamba2")
    for f in ("x", "B", "C"):
        p += ds("/layers/0/" + f, F64, [2, 1, 2], [1.0, -0.5])
    p += ds("/layers/0/dt", F64, [2, 1], [0.5]) + ds("/layers/0/A", F64, [1], [-0.5]) + ds("/layers/0/D", F64, [1], [1.0])
    return [0] + p


def results():
    p = attr("/config", "config_hash", 0, "0123456789abcdef") + ds("/config/plan", STR, [1], ["r"])
    p += ds("/bins", I64, [3], [0.25, 0.5, 0.75]) + ds("/reference/m/nll", F64, [2], [1.0])
    for f, dims in (("kl", [2]), ("nll", [2]), ("top1", [2]), ("kl_binned", [2, 4]), ("output_drift", [1, 2]),
                    ("state_drift", [1, 2])):
        p += ds("/runs/r/" + f, F64, dims, [0.0])
    p += ds("/runs/r/flush_steps", I64, [2], [0.25, 0.5])
    p += attr("/runs/r", "id", 0, "r") + attr("/runs/r", "index", 1, 0) + attr("/runs/r", "elapsed_s", 2, 0.5)
    p += attr("/runs/r", "L", 1, 16) + attr("/runs/r", "seed", 3, 0) + attr("/runs/r", "diverged_at", 1, -1)
    return [1] + p


def gdn_model():
    p = attr("/config", "arch", 0, "gdn") + attr("/config", "vocab", 1, 256)
    for k in ("d_model", "n_layers", "d_ff", "conv_kernel", "Hk", "Hv", "K", "V"):
        p += attr("/config", k, 1, 1)
    for k in ("norm_eps", "gated_norm_eps", "l2norm_eps"):
        p += attr("/config", k, 2, 1e-6)
    p += ds("/embed", F32, [256, 1], [0.5]) + ds("/lm_head", F32, [256, 1], [0.25]) + ds("/final_norm", F32, [1], [1.0])
    for t in ("norm1", "norm2", "mixer/A_log", "mixer/dt_bias", "mixer/norm"):
        p += ds("/layers/0/" + t, F32, [1], [0.5])
    for t in ("w_gate", "w_up", "w_down", "mixer/in_q", "mixer/in_k", "mixer/in_v", "mixer/in_z", "mixer/in_a",
              "mixer/in_b", "mixer/conv_q", "mixer/conv_k", "mixer/conv_v", "mixer/out"):
        p += ds("/layers/0/" + t, F32, [1, 1], [0.5])
    return [2] + p


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        os.remove(os.path.join(OUT, old))
    for name, prog in (("dump_gdn", gdn_dump()), ("dump_mamba2", mamba2_dump()), ("results", results()),
                       ("model_gdn", gdn_model())):
        assert all(0 <= b < 256 for b in prog), name
        with open(os.path.join(OUT, name), "wb") as fh:
            fh.write(bytes(prog))


if __name__ == "__main__":
    main()
