"""replayssm.formats: equal to `replayssm quantize` bit for bit for every format x scaling x rounding, and to the
ml_dtypes oracle where one exists."""
import numpy as np
import pytest

import replayssm
from replayssm import formats, io

COMBOS = [(f, s, r) for f in formats.names() for s in formats.scalings(f) for r in ("rne", "sr", "philox")
          if not (f in ("fp32", "bf16x2", "int8_ef") and r != "rne")]  # rne only: fp32, bf16x2, int8_ef


@pytest.fixture(scope="module")
def states(tmp_path_factory):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((2, 3, 8, 64)) * np.exp(rng.uniform(-4, 4, (2, 3, 8, 1)))).astype(np.float32)
    x[0, 0, 0, :3] = [0.0, -0.0, 1e-30]
    path = tmp_path_factory.mktemp("fmt") / "x.h5"
    io.write_arrays(path, {"/x": x})
    return x, path


@pytest.mark.parametrize("fmt,scaling,rounding", COMBOS)
def test_quantize_equals_cli(fmt, scaling, rounding, states, cli, tmp_path):
    x, path = states
    out = tmp_path / "q.h5"
    cli("quantize", "--format", fmt, "--scaling", scaling, "--rounding", rounding, "--seed", 11, "--in",
        f"{path}:/x", "--out", out)
    q = formats.quantize(x, fmt, scaling=scaling, rounding=rounding, seed=11)
    assert q.format == fmt and q.scaling == scaling and q.rounding == rounding
    assert np.array_equal(q.codes, io.read_array(out, "/codes").astype(np.uint8))
    assert np.array_equal(q.scales, io.read_array(out, "/scales").astype(np.uint8))
    deq = io.read_array(out, "/dequantized")
    assert np.array_equal(q.dequantized.astype(np.float64), deq, equal_nan=True)
    assert q.dequantized.shape == x.shape
    assert q.bytes_per_head == formats.bytes_per_state(fmt, 8, 64, scaling)


def test_unscaled_formats_match_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 16, 32)) * 3).astype(np.float32)
    for fmt, dt in (("bf16", ml_dtypes.bfloat16), ("fp16", np.float16)):
        q = formats.quantize(x, fmt, scaling="none")
        assert np.array_equal(q.dequantized, x.astype(dt).astype(np.float32)), fmt


def test_sr_depends_on_seed_and_step_and_is_unbiased():
    x = np.full((1, 4, 256), 1.0 + 2.0 ** -10, np.float32)  # between two bf16 codes, 1/8 of a step above 1
    a = formats.quantize(x, "bf16", rounding="sr", seed=1).dequantized
    b = formats.quantize(x, "bf16", rounding="sr", seed=2).dequantized
    c = formats.quantize(x, "bf16", rounding="sr", seed=1, step=5).dequantized
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.array_equal(a, formats.quantize(x, "bf16", rounding="sr", seed=1).dequantized)
    assert set(np.unique(a)) <= {1.0, np.float32(1.0 + 2.0 ** -7)}
    assert abs(a.mean() - x.mean()) < 4 * 2.0 ** -7 / np.sqrt(x.size)


@pytest.mark.parametrize("kw,match", [
    (dict(format="fp7"), r"unknown format 'fp7'"),
    (dict(format="bf16", scaling="row"), r"scaling 'row' is not valid for format 'bf16'"),
    (dict(format="fp32", rounding="sr"), r"rounding 'sr' is not valid for format 'fp32'"),
    (dict(format="nvfp4", seed=-1), r"seed: expected an integer >= 0"),
])
def test_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        formats.quantize(np.zeros((4, 32), np.float32), **kw)
    with pytest.raises(ValueError, match=r"x: expected shape \[..., V, K\]"):
        formats.quantize(np.zeros(32, np.float32), "bf16")


def test_names():
    assert formats.names()[:3] == ["fp32", "bf16", "fp16"] and "nvfp4" in formats.names()
    assert "block" in formats.scalings("nvfp4") and formats.scalings("fp32") == ["none"]
    assert replayssm.formats.bytes_per_state("fp32", 2, 4) == 32


def test_int8_ef_is_int8_plus_a_residual():
    """A quantize is a first store: the INT8 part, the scales and the decoded values are int8's; the 4-bit residuals
    (1/15 of a step, [-8, 7]) follow the V*K codes and hold the error of that store."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 8, 64)) * 2).astype(np.float32)
    ef, i8 = formats.quantize(x, "int8_ef", scaling="column"), formats.quantize(x, "int8", scaling="column")
    assert formats.scalings("int8_ef") == ["head", "row", "block", "column"]
    assert _core_default("int8_ef") == "column" and formats.quantize(x, "int8_ef").scaling == "column"
    n = 8 * 64
    assert ef.codes.shape == (3, n + n // 2) and formats.bytes_per_state("int8_ef", 8, 64) == n + n // 2 + 64 * 4
    assert np.array_equal(ef.codes[:, :n], i8.codes) and np.array_equal(ef.scales, i8.scales)
    assert np.array_equal(ef.dequantized, i8.dequantized)
    nib = np.stack([ef.codes[:, n:] & 0xF, ef.codes[:, n:] >> 4], axis=-1).reshape(3, 8, 64).astype(np.int64)
    res = np.where(nib >= 8, nib - 16, nib)
    scale = ef.scales.view("<f4").reshape(3, 1, 64).astype(np.float64)
    err = x.astype(np.float64) - ef.dequantized  # the error of this store, within half a step
    assert np.all(np.abs(err - res * scale / 15) <= scale / 30 * (1 + 1e-5))
    assert res.min() >= -8 and res.max() <= 7 and np.any(res != 0)
    with pytest.raises(ValueError, match=r"rounding 'sr' is not valid for format 'int8_ef'"):
        formats.quantize(x, "int8_ef", rounding="sr")


def _core_default(fmt):
    from replayssm import _core
    return _core.default_scaling(fmt)


def _ef_store(x, prev):
    """One int8_ef store, column scaling, from the documented rule (src/formats/README.md), float32 throughout:
    y = x + res' * (scale' / 15); scale = amax(y) / 127 per column; q = rint(y / scale); res = rint(15 e / scale)."""
    f32 = np.float32
    y = x if prev is None else (x + (prev[1].astype(f32) * (prev[2] / f32(15)).astype(f32)).astype(f32)).astype(f32)
    amax = np.abs(y).max(axis=-2, keepdims=True)
    sc = np.where(amax == 0, f32(1), (amax / f32(127)).astype(f32)).astype(f32)
    inv = (f32(1) / sc).astype(f32)
    q = np.clip(np.rint((y * inv).astype(f32)), -127, 127)
    e = (y - (q.astype(f32) * sc).astype(f32)).astype(f32)
    res = np.clip(np.rint(((e * inv).astype(f32) * f32(15)).astype(f32)), -8, 7).astype(np.int64)
    return q.astype(np.int64), res, sc


def test_int8_ef_prev_feeds_the_residual_into_the_next_store():
    rng = np.random.default_rng(9)
    V, K, n = 8, 32, 8 * 32
    x = rng.standard_normal((2, V, K)).astype(np.float32)
    q, ref = None, None
    for t in range(6):  # a chain of stores, each after the previous: the Python API against the rule
        q = formats.quantize(x, "int8_ef", prev=q)
        ref = _ef_store(x, ref)
        nib = np.stack([q.codes[:, n:] & 0xF, q.codes[:, n:] >> 4], axis=-1).reshape(2, V, K).astype(np.int64)
        assert np.array_equal(q.codes[:, :n].view(np.int8).reshape(2, V, K), ref[0]), t
        assert np.array_equal(np.where(nib >= 8, nib - 16, nib), ref[1]), t
        assert np.array_equal(q.scales.view("<f4").reshape(2, 1, K), ref[2]), t
        x = (q.dequantized + rng.standard_normal(x.shape).astype(np.float32) * np.float32(0.002)).astype(np.float32)
    assert not np.array_equal(formats.quantize(x, "int8_ef", prev=q).codes, formats.quantize(x, "int8_ef").codes)
    # a stateless format ignores prev; a mismatched prev is refused
    b = formats.quantize(x, "bf16")
    assert np.array_equal(formats.quantize(x, "bf16", prev=b).codes, b.codes)
    with pytest.raises(ValueError, match=r"prev: a int8_ef/column state"):
        formats.quantize(x, "int8_ef", scaling="row", prev=q)
