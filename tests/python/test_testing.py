"""replayssm.testing: an independent numpy kernel (experiments/external/numpy_kernels.py) passes against the FP64
reference as FP32 and against the mode-aware reference with its BF16 / FP16 state; a misplaced or missing
quantisation, a wrong format and a corrupted output fail with a message naming case, field, head and index."""
import os
import sys

import numpy as np
import pytest

from replayssm import testing as rt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "experiments", "external"))
import numpy_kernels as nk  # noqa: E402


def gdn_kernel(state_format=None, placement="right"):
    return lambda initial_state, **inp: nk.gdn_decode(initial_state=initial_state, state_format=state_format,
                                                      placement=placement, **inp)


def mamba2_kernel(state_format=None, placement="right"):
    return lambda initial_state, **inp: nk.mamba2_decode(initial_state=initial_state, state_format=state_format,
                                                         placement=placement, **inp)


def test_fp32_kernels_pass_against_fp64():
    rt.assert_close_to_reference(gdn_kernel(), arch="gdn")
    rt.assert_close_to_reference(mamba2_kernel(), arch="mamba2")


@pytest.mark.parametrize("fmt", ["bf16", "fp16"])
def test_stored_state_kernels_pass_their_mode(fmt):
    rt.assert_close_to_reference(gdn_kernel(fmt), arch="gdn", mode=f"conventional_shared/{fmt}")
    rt.assert_close_to_reference(mamba2_kernel(fmt), arch="mamba2", mode=f"conventional_shared/{fmt}")


def test_real_head_shapes():
    cs = [c for c in rt.cases("gdn", shape="qwen3.5") if c.name in ("T=1", "T=17")]
    rt.assert_close_to_reference(gdn_kernel("bf16"), arch="gdn", mode="conventional_shared/bf16", cases_=cs)
    cs = [c for c in rt.cases("mamba2", shape="nemotron-h") if c.name == "T=15"]
    rt.assert_close_to_reference(mamba2_kernel(), arch="mamba2", cases_=cs)


@pytest.mark.parametrize("arch,kernel,mode", [
    ("gdn", gdn_kernel("bf16", "after"), "conventional_shared/bf16"),     # output reads the re-quantised state
    ("gdn", gdn_kernel(None), "conventional_shared/bf16"),                # never quantised
    ("gdn", gdn_kernel("fp16"), "conventional_shared/bf16"),              # another format
    ("gdn", gdn_kernel("bf16"), None),                                    # a BF16 state judged as FP32
    ("mamba2", mamba2_kernel("bf16", "after"), "conventional_shared/bf16"),
    ("mamba2", mamba2_kernel("fp16"), "conventional_shared/bf16"),
])
def test_wrong_kernels_fail(arch, kernel, mode):
    with pytest.raises(AssertionError, match=r"case '.*': (o|final_state) head \d+: rel-RMS .* > bound"):
        rt.assert_close_to_reference(kernel, arch=arch, mode=mode)


def test_failure_message_names_the_first_bad_index():
    case = next(c for c in rt.cases("gdn") if c.name == "T=17")

    def corrupt(initial_state, **inp):
        o, s = nk.gdn_decode(initial_state=initial_state, **inp)
        o[9, 3, 5] += 1.0
        return o, s
    with pytest.raises(AssertionError) as e:
        rt.assert_close_to_reference(corrupt, arch="gdn", cases_=[case])
    msg = str(e.value)
    assert "case 'T=17': o head 3:" in msg and "first bad index (9, 5)" in msg, msg


def test_nan_and_transposed_state_fail():
    case = next(c for c in rt.cases("gdn") if c.name == "T=16")

    def nan_out(initial_state, **inp):
        o, s = nk.gdn_decode(initial_state=initial_state, **inp)
        o[0, 0, 0] = np.nan
        return o, s
    with pytest.raises(AssertionError, match="NaN/Inf"):
        rt.assert_close_to_reference(nan_out, arch="gdn", cases_=[case])

    def fla_layout(initial_state, **inp):
        o, s = nk.gdn_decode(initial_state=initial_state, **inp)
        return o, np.swapaxes(s, -1, -2)
    with pytest.raises(AssertionError, match=r"final_state has shape \[4, 64, 32\], expected \[4, 32, 64\]"):
        rt.assert_close_to_reference(fla_layout, arch="gdn", cases_=[case])


def test_cases_cover_the_awkward_shapes():
    names = [c.name for c in rt.cases("gdn", L=16)]
    for n in ("T=1", "T=15", "T=16", "T=17", "decay near 0", "decay exactly 1", "beta 0", "beta 1", "initial state"):
        assert n in names
    exact = next(c for c in rt.cases("gdn") if c.name == "decay exactly 1")
    assert np.all(exact.inputs["g"] == 0.0)
    assert "beta 0" not in [c.name for c in rt.cases("mamba2")]
    with pytest.raises(ValueError, match="shape: expected one of"):
        list(rt.cases("gdn", shape="llama"))
