"""Outside torch kernels checked through the Python package with pytest (the way a kernel author would): transformers'
own GDN recurrences (the Qwen3.5 torch paths, token by token and chunked) and flash-linear-attention's pure-torch
naive reference, on replayssm.testing's awkward cases against the FP64 reference, float32.

Needs torch (a CPU build is enough) and transformers >= 5 (qwen3_5) / flash-linear-attention; each test skips with the
reason where its package is missing. CTest runs this file with the package's tests (label python)."""
import numpy as np
import pytest

from replayssm import testing as rt


def _unwrap(fn):
    while hasattr(fn, "__wrapped__"):  # under any hub-kernel decorator: the torch function itself
        fn = fn.__wrapped__
    return fn


def _torch_gdn(fn, chunked=False):
    """Adapts a [B, T, H, K]-layout torch GDN function (HF / FLA convention: state [B, H, K, V]) to replayssm's
    testing signature: numpy [T, Hk, K] ... in, (o [T, Hv, V], final_state [Hv, V, K]) out."""
    torch = pytest.importorskip("torch")

    def kernel(q, k, v, g, beta, scale, initial_state=None):
        ratio = v.shape[1] // q.shape[1]
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))[None]  # noqa: E731
        q_, k_ = t(q).repeat_interleave(ratio, dim=2), t(k).repeat_interleave(ratio, dim=2)
        init = None
        if initial_state is not None:
            init = t(initial_state).transpose(-1, -2).contiguous()  # replayssm [H, V, K] -> [1, H, K, V]
        kw = dict(initial_state=init, output_final_state=True)
        with torch.no_grad():
            if chunked is None:  # FLA naive: (q, k, v, beta, g, scale=...)
                o, s = fn(q_ * scale * q.shape[-1] ** 0.5, k_, t(v), t(beta), t(g), scale=q.shape[-1] ** -0.5, **kw)
            else:
                o, s = fn(q_ * scale * q.shape[-1] ** 0.5, k_, t(v), t(g), t(beta), use_qk_l2norm_in_kernel=False,
                          **kw)
        return o[0].float().numpy(), s[0].transpose(-1, -2).float().numpy()
    return kernel


def _hf_qwen35(name):
    pytest.importorskip("torch")
    try:
        from transformers.models.qwen3_5 import modeling_qwen3_5 as m
    except ImportError as e:
        pytest.skip(f"transformers with qwen3_5 is not installed ({e})")
    if not hasattr(m, name):
        pytest.skip(f"transformers.models.qwen3_5.modeling_qwen3_5 has no {name}")
    return _unwrap(getattr(m, name))


def test_transformers_recurrent_gdn():
    rt.assert_close_to_reference(_torch_gdn(_hf_qwen35("torch_recurrent_gated_delta_rule")), arch="gdn")


def test_transformers_chunked_gdn():
    # the chunked form pads T to its chunk (64) and sums in another order: the FP32 bound still holds
    cases = [c for c in rt.cases("gdn") if c.name in ("T=1", "T=17", "initial state", "decay near 0")]
    rt.assert_close_to_reference(_torch_gdn(_hf_qwen35("torch_chunk_gated_delta_rule"), chunked=True), arch="gdn",
                                 cases_=cases)


def test_fla_naive_recurrent_gdn():
    pytest.importorskip("torch")
    try:
        from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule as fn
    except Exception as e:  # fla imports triton at package import; a CPU-only machine may not have it
        pytest.skip(f"flash-linear-attention's naive reference is not importable ({type(e).__name__}: {e})")
    rt.assert_close_to_reference(_torch_gdn(fn, chunked=None), arch="gdn")
