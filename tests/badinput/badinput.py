#!/usr/bin/env python3
"""Bad-input corpus: `badinput.py CASE` runs one case (one CTest test each), `badinput.py --list` prints the names.

Every case builds its inputs in a fresh temporary folder (with `replayssm synth` and h5py), runs one command and
checks the CLI's input contract (README "Commands"):
  - the documented exit code (2 for bad input), not killed by a signal, no "internal error";
  - exactly one line on stderr, naming the file and the field (or the option);
  - nothing new in the folder afterwards: no file under the output name, no temporary file, no work folder;
  - the inputs unchanged (byte for byte), which is what matters when the output path names an input.
A few cases are deliberately *valid* input that looks odd (non-UTF-8 text: the models are byte-level, so any byte
is a token) and expect exit 0 and an output file.

Run with Debian's /usr/bin/python3 (numpy + h5py). The CLI comes from $REPLAYSSM_CLI (or argv[2]).
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(SRC, "datasets", "models")
TEXT = os.path.join(SRC, "datasets", "pg19", "test", "10146.txt")
CLI = None

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class Expect:
    """What a case expects. `needles`: strings the one error line must contain (file and field/option)."""

    def __init__(self, argv, needles, code=2, out=None, ok_outputs=()):
        self.argv, self.needles, self.code, self.out, self.ok_outputs = argv, needles, code, out, ok_outputs


# ---------------------------------------------------------------------------------------------------------- helpers

def cli(*args, check=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, errors="replace")
    if check and r.returncode != 0:
        raise RuntimeError(f"setup command failed ({r.returncode}): {' '.join(map(str, args))}\n{r.stderr}")
    return r


def synth(tmp, arch="gdn", name="acts.h5", **kw):
    path = os.path.join(tmp, name)
    opts = {"tokens": 16, "heads": 2, "key-heads": 1, "groups": 1, "key-dim": 8, "value-dim": 8}
    opts.update({k.replace("_", "-"): v for k, v in kw.items()})
    cli("synth", "--arch", arch, "--out", path, *[x for k, v in opts.items() for x in ("--" + k, v)])
    return path


def replace_dataset(path, name, data, dtype=None):
    with h5py.File(path, "r+") as f:
        del f[name]
        f.create_dataset(name, data=np.asarray(data, dtype=dtype))


def copy_model(tmp, arch="gdn"):
    dst = os.path.join(tmp, f"tiny_{arch}.h5")
    shutil.copy(os.path.join(MODELS, f"tiny_{arch}.h5"), dst)
    return dst


def poke_weight(path, name, value):
    """Sets one element of a model tensor (in place, keeping dtype, shape and filters)."""
    with h5py.File(path, "r+") as f:
        d = f[name]
        a = d[...]
        a.flat[a.size // 2] = value
        d[...] = a


def text_file(tmp, data, name="text.txt"):
    p = os.path.join(tmp, name)
    with open(p, "wb") as fh:
        fh.write(data)
    return p


def out_in(tmp, name="out.h5"):
    return os.path.join(tmp, name)


# Small, fast sweep options (one model, 8 positions, one run).
def sweep_args(model, out, **over):
    o = {"--model": model, "--tokens": "8", "--offset": "0", "--formats": "fp32", "--policies": "conventional-shared",
         "--L": "4", "--backend": "emulated", "--jobs": "1", "--out": out}
    o.update({"--" + k.replace("_", "-"): v for k, v in over.items()})
    return ["sweep", "--quiet"] + [x for kv in o.items() for x in kv]


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


# ----------------------------------------------------------------------------------------------------- the driver

def snapshot(tmp):
    out = {}
    for root, dirs, files in os.walk(tmp):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), tmp) + "/"] = "dir"
        for n in files:
            p = os.path.join(root, n)
            if not os.path.isfile(p):  # a pipe or socket a case made: opening it would block
                out[os.path.relpath(p, tmp)] = "special"
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, tmp)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def run_case(name):
    errors = []
    with tempfile.TemporaryDirectory(prefix="badinput-") as tmp:
        e = CASES[name](tmp)
        before = snapshot(tmp)
        argv = [str(a) for a in e.argv]
        r = subprocess.run([CLI, *argv], capture_output=True, text=True, errors="replace", timeout=300)
        after = snapshot(tmp)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        print("$ replayssm", " ".join(argv).replace(tmp, "$TMP"))
        print(f"exit {r.returncode}; stderr:", r.stderr.strip().replace(tmp, "$TMP") or "(empty)")
        if r.returncode < 0:
            errors.append(f"killed by signal {-r.returncode}")
        if r.returncode != e.code:
            errors.append(f"exit code {r.returncode}, expected {e.code}")
        if "internal error" in r.stderr or "AddressSanitizer" in r.stderr or "runtime error" in r.stderr:
            errors.append("internal error / sanitizer report on stderr")
        if e.code != 0:
            if len(lines) != 1:
                errors.append(f"expected exactly one line on stderr, got {len(lines)}")
            for needle in e.needles:
                if needle not in r.stderr:
                    errors.append(f"error line does not name {needle!r}")
            new = sorted(set(after) - set(before))
            if new:
                errors.append(f"left behind: {new}")
            if e.out and os.path.exists(e.out):
                errors.append(f"output file exists: {e.out}")
            changed = sorted(k for k in before if after.get(k) != before[k])
            if changed:
                errors.append(f"inputs changed or removed: {changed}")
        else:
            for p in e.ok_outputs:
                if not os.path.isfile(p):
                    errors.append(f"expected output {p}")
            stray = [k for k in after if ".tmp-" in k or k.endswith(".runs/")]
            if stray:
                errors.append(f"temporary files left: {stray}")
    for msg in errors:
        print("FAIL:", msg)
    print("PASS" if not errors else f"{len(errors)} problem(s)")
    return 1 if errors else 0


def main():
    global CLI
    if len(sys.argv) >= 2 and sys.argv[1] == "--list":
        print(";".join(CASES))
        return 0
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        print(f"usage: {sys.argv[0]} CASE [CLI] | --list", file=sys.stderr)
        return 2
    CLI = os.environ.get("REPLAYSSM_CLI") or (sys.argv[2] if len(sys.argv) > 2 else None)
    if not CLI:
        print("set REPLAYSSM_CLI", file=sys.stderr)
        return 2
    return run_case(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
