"""replayssm.compare and the named tolerances: the C++ compare()'s numbers and verdicts."""
import math

import numpy as np
import pytest

import replayssm


def test_numbers_and_first_bad_index():
    e = np.array([1.0, -2.0, 3.0, 0.5])
    a = e.copy()
    a[2] += 0.3
    c = replayssm.compare(a, e, rel_rms=1.0, max_abs_rel=0.05)
    assert c.max_abs == pytest.approx(0.3) and c.ref_max_abs == 3.0
    assert c.rel_rms == pytest.approx(0.3 / math.sqrt(1 + 4 + 9 + 0.25))
    assert c.first_bad == 2 and c.n_bad == 1 and not c.passed and not c
    assert replayssm.compare(a, e, rel_rms=0.1, max_abs_rel=0.2).passed


def test_nan_and_inf_never_pass():
    e = np.ones(8)
    for bad in (np.nan, np.inf, -np.inf):
        a = e.copy()
        a[5] = bad
        c = replayssm.compare(a, e, rel_rms=math.inf)
        assert not c.passed and c.n_nonfinite == 1 and c.first_bad == 5
    c = replayssm.compare(np.zeros(8), e, rel_rms=0.99)
    assert not c.passed and c.rel_rms == 1.0


def test_shapes_and_types():
    with pytest.raises(ValueError, match=r"actual: shape \[3\]"):
        replayssm.compare(np.zeros(3), np.zeros(4))
    assert replayssm.compare([[1, 2], [3, 4]], np.array([1.0, 2, 3, 4])).rel_rms == 0.0


def test_tolerances_are_the_named_ones():
    t = replayssm.tolerance("gdn", "conventional_shared/fp32", K=64, V=32, tokens=128)
    assert t.rel_rms == pytest.approx(2 * 2.0 ** -24 * 8 * math.sqrt(129))
    assert t.max_abs_rel == pytest.approx(16 * t.rel_rms)
    bf = replayssm.tolerance("gdn", "conventional_shared/bf16", K=64, V=32, tokens=128)
    assert bf.rel_rms > 100 * t.rel_rms
    ma = replayssm.tolerance("gdn", "conventional_shared/bf16", K=64, V=32, tokens=128, against="mode_aware")
    assert ma.rel_rms == pytest.approx(t.rel_rms)
    assert replayssm.tolerance("gdn", "replay_shared/nvfp4", 64, 32, 10, against="emulation").rel_rms == 0.0
    mem = replayssm.memory_of(np.array([0.5, 0.9]))
    assert mem == pytest.approx(10.0) and replayssm.memory_of([1.0]) == math.inf
    short = replayssm.tolerance("gdn", "conventional_shared/fp32", K=64, V=32, tokens=128, memory=mem)
    assert short.rel_rms == pytest.approx(2 * 2.0 ** -24 * 8 * math.sqrt(10))
    with pytest.raises(ValueError, match="against: expected one of"):
        replayssm.tolerance("gdn", "conventional_shared/fp32", 64, 32, 1, against="close")
