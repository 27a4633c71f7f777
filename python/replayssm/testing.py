"""Helpers for testing a kernel against replayssm from pytest: awkward input cases and one assertion.

    import replayssm.testing as rt

    def my_kernel(q, k, v, g, beta, scale, initial_state):   # numpy in, (o [T, Hv, V], final_state [Hv, V, K]) out
        ...

    rt.assert_close_to_reference(my_kernel, arch="gdn")                              # an FP32 kernel
    rt.assert_close_to_reference(my_kernel, arch="gdn", mode="conventional_shared/bf16")  # a BF16-state kernel

Without a mode the expected result is the FP64 reference and the bound the FP32 one of tolerance(...,
against="fp64"); with a mode it is the mode-aware FP64 reference (the format applied where the mode stores) and the
bound that of `replayssm validate --external --mode`: max(FP32 floor, 8 x the distance of replayssm's own emulation
of the mode), so a store in the wrong place or of the wrong format fails. The state a kernel returns is replayssm's
[V, K] per head (transpose an FLA-style [K, V] state)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional

import numpy as np

from . import _core, emulate, reference
from ._args import check_choice, positive_int
from ._compare import Tolerance, compare, memory_of, tolerance

# Head shapes: (Hk, Hv, K, V) for GDN, (G, H, N, P) for Mamba-2.
SHAPES = {
    "gdn": {"small": (2, 4, 64, 32), "qwen3.5": (16, 32, 128, 128)},
    "mamba2": {"small": (2, 4, 64, 16), "nemotron-h": (8, 128, 128, 64)},
}


@dataclass
class Case:
    name: str
    inputs: Dict[str, np.ndarray]            # the arch's fields (gdn with scale), float64, no batch axis
    initial_state: Optional[np.ndarray] = None  # [H, V, K] or None (zeros)
    tags: List[str] = field(default_factory=list)


def _random_inputs(arch, dims, T, rng, g_lo=-2.0, g_hi=-0.01, beta=None, g_value=None):
    if arch == "gdn":
        Hk, Hv, K, V = dims
        q = rng.standard_normal((T, Hk, K))
        k = rng.standard_normal((T, Hk, K))
        q /= np.linalg.norm(q, axis=-1, keepdims=True)   # L2-normalised, as the models feed the recurrence
        k /= np.linalg.norm(k, axis=-1, keepdims=True)
        g = rng.uniform(g_lo, g_hi, (T, Hv)) if g_value is None else np.full((T, Hv), float(g_value))
        b = rng.uniform(0.0, 1.0, (T, Hv)) if beta is None else np.full((T, Hv), float(beta))
        return {"q": q, "k": k, "v": rng.standard_normal((T, Hv, V)), "g": g, "beta": b, "scale": K ** -0.5}
    G, H, N, P = dims
    A = -rng.uniform(0.5, 2.0, H)
    if g_value is None:  # dt so that the decay exp(dt A) spans exp(g_lo)..exp(g_hi)
        g = rng.uniform(g_lo, g_hi, (T, H))
    else:
        g = np.full((T, H), float(g_value))
    dt = g / A
    return {"x": rng.standard_normal((T, H, P)), "B": rng.standard_normal((T, G, N)) / math.sqrt(N),
            "C": rng.standard_normal((T, G, N)) / math.sqrt(N), "dt": dt, "A": A, "D": rng.standard_normal(H)}


def cases(arch: str, shape: str = "small", L: int = 16, seed: int = 0, long_tokens: int = 300) -> Iterator[Case]:
    """The awkward cases of replayssm's own tests: T = 1, L - 1, L, L + 1 and a long run; decays near 0 and exactly 1;
    (GDN) beta 0 and 1; a random initial state. shape: "small", or the real head shapes "qwen3.5" (GDN: 16 key heads,
    32 value heads, K = V = 128) and "nemotron-h" (Mamba-2: 8 groups, 128 heads, N = 128, P = 64)."""
    check_choice(arch, "arch", ("gdn", "mamba2"))
    check_choice(shape, "shape", tuple(SHAPES[arch]))
    L = positive_int(L, "L")
    dims = SHAPES[arch][shape]
    rng = np.random.default_rng(seed)
    H, V, K = (dims[1], dims[3], dims[2])
    for T in (1, L - 1, L, L + 1):
        if T >= 1:
            yield Case(f"T={T}", _random_inputs(arch, dims, T, rng), tags=["length"])
    yield Case(f"long T={long_tokens}", _random_inputs(arch, dims, long_tokens, rng, g_lo=-0.05, g_hi=-0.001),
               tags=["length", "slow decay"])
    yield Case("decay near 0", _random_inputs(arch, dims, 2 * L + 1, rng, g_value=-30.0), tags=["decay"])
    yield Case("decay exactly 1", _random_inputs(arch, dims, 2 * L + 1, rng, g_value=0.0), tags=["decay"])
    if arch == "gdn":
        yield Case("beta 0", _random_inputs(arch, dims, L + 1, rng, beta=0.0), tags=["beta"])
        yield Case("beta 1", _random_inputs(arch, dims, L + 1, rng, beta=1.0), tags=["beta"])
    yield Case("initial state", _random_inputs(arch, dims, L + 1, rng),
               initial_state=rng.standard_normal((H, V, K)) * 0.1, tags=["state"])


def _fail_message(case, what, head, c, bound, shape_tv):
    msg = (f"case {case!r}: {what} head {head}: rel-RMS {c.rel_rms:.3e} > bound {bound:.3e} "
           f"(max-abs {c.max_abs:.3e} of max |expected| {c.ref_max_abs:.3e})")
    if c.n_nonfinite:
        msg += f"; {c.n_nonfinite} NaN/Inf"
    if c.first_bad >= 0:
        idx = np.unravel_index(c.first_bad, shape_tv)
        msg += f"; first bad index {tuple(int(i) for i in idx)}"
    return msg


def check_against(case: Case, arch: str, actual_o, actual_state, expected_o, expected_state, bound) -> None:
    """Per head: output over all positions, state over [V, K], relative RMS <= bound (a number, or one per head);
    NaN never passes. Raises AssertionError naming the case, the field, the head, the first bad index (the first
    element beyond bound x max |expected|) and the rel-RMS against the bound."""
    ao, eo = np.asarray(actual_o, dtype=np.float64), np.asarray(expected_o, dtype=np.float64)
    if ao.shape != eo.shape:
        raise AssertionError(f"case {case.name!r}: o has shape {list(ao.shape)}, expected {list(eo.shape)}")
    bounds = np.broadcast_to(np.asarray(bound, dtype=np.float64), (eo.shape[1],))
    for h in range(eo.shape[1]):
        b = float(bounds[h])
        c = compare(ao[:, h, :], eo[:, h, :], Tolerance(rel_rms=b, max_abs_rel=b))
        if c.n_nonfinite or c.rel_rms > b:
            raise AssertionError(_fail_message(case.name, "o", h, c, b, (eo.shape[0], eo.shape[2])))
    if actual_state is None:
        return
    as_, es = np.asarray(actual_state, dtype=np.float64), np.asarray(expected_state, dtype=np.float64)
    if as_.shape != es.shape:
        raise AssertionError(f"case {case.name!r}: final_state has shape {list(as_.shape)}, expected "
                             f"{list(es.shape)} (replayssm's [H, V, K]: transpose an FLA-style [K, V] state)")
    for h in range(es.shape[0]):
        b = float(bounds[h])
        c = compare(as_[h], es[h], Tolerance(rel_rms=b, max_abs_rel=b))
        if c.n_nonfinite or c.rel_rms > b:
            raise AssertionError(_fail_message(case.name, "final_state", h, c, b, es.shape[1:]))


def _decays(arch, inputs):
    if arch == "gdn":
        return np.exp(inputs["g"])
    return np.exp(inputs["dt"] * inputs["A"][None, :])


def expected_for(case: Case, arch: str, mode: Optional[str] = None):
    """(expected o, expected final state, bound) of a case: the FP64 reference and the FP32 bound without a mode;
    with one, the mode-aware reference and the bound of `validate --external --mode`, one per head."""
    inp = case.inputs
    T = next(iter(v for k, v in inp.items() if k in ("q", "x"))).shape[0]
    K = inp["q" if arch == "gdn" else "B"].shape[-1]
    V = inp["v" if arch == "gdn" else "x"].shape[-1]
    mem = memory_of(_decays(arch, inp))
    if mode is None:
        run = reference.gdn if arch == "gdn" else reference.mamba2
        o, s = run(initial_state=case.initial_state, **inp)
        return o, s, tolerance(arch, "conventional_shared/fp32", K, V, T, mem, against="fp64").rel_rms
    ref = emulate.decode(arch, mode, case.initial_state, backend="mode_aware", **inp)
    ours = emulate.decode(arch, mode, case.initial_state, backend="emulation", **inp)
    run = reference.gdn if arch == "gdn" else reference.mamba2
    o64, s64 = run(initial_state=case.initial_state, **inp)
    H = ref.o.shape[1]
    dist = max(max(compare(ours.o[:, h], ref.o[:, h]).rel_rms, compare(ours.state[h], ref.state[h]).rel_rms)
               for h in range(H))
    bounds = []
    for h in range(H):
        mode_error = max(compare(ref.o[:, h], o64[:, h]).rel_rms, compare(ref.state[h], s64[h]).rel_rms)
        bounds.append(_core.external_mode_rel_rms(K, T, mem, dist, mode_error))
    return ref.o, ref.state, np.array(bounds)


def assert_close_to_reference(fn: Callable, arch: str = "gdn", mode: Optional[str] = None,
                              cases_: Optional[List[Case]] = None, shape: str = "small", L: int = 16) -> None:
    """Runs fn(**case.inputs, initial_state=case.initial_state) -> (o, final_state or None) on every case (default:
    cases(arch, shape, L)) and asserts it is within the bound of the FP64 reference (mode None) or of the mode-aware
    reference of `mode` (see the module docstring). The first failing case raises AssertionError naming it."""
    check_choice(arch, "arch", ("gdn", "mamba2"))
    for case in (cases_ if cases_ is not None else cases(arch, shape, L)):
        o, s = fn(initial_state=case.initial_state, **case.inputs)
        eo, es, bound = expected_for(case, arch, mode)
        check_against(case, arch, o, s, eo, es, bound)
