"""The one comparison of replayssm (src/core/compare.h) and its named tolerances (src/emulation/tolerances.h)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _core
from ._args import as_array, check_choice


@dataclass(frozen=True)
class Tolerance:
    rel_rms: float                # ||actual - expected|| / ||expected|| (absolute when expected is all zero)
    max_abs_rel: float = math.inf  # |actual - expected| <= max_abs_rel * max|expected| + abs_floor, element-wise
    abs_floor: float = 0.0


@dataclass(frozen=True)
class Comparison:
    n: int
    max_abs: float
    ref_max_abs: float
    rel_rms: float
    first_bad: int     # flat index of the first bad element (row-major), -1 if none
    n_bad: int
    n_nonfinite: int   # NaN/Inf in actual or expected: never passes
    passed: bool
    summary: str

    def __bool__(self) -> bool:
        return self.passed


def compare(actual, expected, tol: "Tolerance | None" = None, *, rel_rms: "float | None" = None,
            max_abs_rel: float = math.inf, abs_floor: float = 0.0) -> Comparison:
    """Compares actual with expected (same number of elements, any shape) exactly as the C++ tools do: max-abs,
    relative RMS, the first bad index; NaN or Inf never passes. Give the bound as tol, or as rel_rms (and
    max_abs_rel, abs_floor); without either, only the numbers are reported (passed: finite everywhere)."""
    a, e = as_array(actual, "actual"), as_array(expected, "expected")
    if a.size != e.size:
        raise ValueError(f"actual: shape {list(a.shape)} ({a.size} elements), expected has shape {list(e.shape)} "
                         f"({e.size} elements)")
    if tol is None:
        tol = Tolerance(math.inf if rel_rms is None else float(rel_rms), float(max_abs_rel), float(abs_floor))
    d = _core.compare(e.reshape(-1), a.reshape(-1), tol.max_abs_rel, tol.rel_rms, tol.abs_floor)
    return Comparison(**d)


AGAINST = ("fp64", "mode_aware", "emulation")


def tolerance(arch: str, mode: str, K: int, V: int, tokens: int, memory: float = math.inf,
              against: str = "fp64") -> Tolerance:
    """The named bound of a mode (src/emulation/tolerances.h) for outputs and state over `tokens` committed tokens
    of a recurrence with memory 1 / (1 - max decay) tokens:
      against="fp64"        a kernel of the mode against the plain FP64 recurrence (replayssm.reference): FP32
                            arithmetic plus the format's rounding, from its unit roundoff;
      against="mode_aware"  against the mode-aware FP64 reference (emulate backend="mode_aware") when every stored
                            code agrees: the FP32 arithmetic floor alone;
      against="emulation"   against replayssm's emulation: 0 (bit-identical, the CUDA kernels' contract)."""
    check_choice(against, "against", AGAINST)
    mx, rr = _core.tolerance(arch, mode, int(K), int(V), int(tokens), float(memory), against)
    return Tolerance(rel_rms=rr, max_abs_rel=mx)


def memory_of(decays) -> float:
    """The effective memory 1 / (1 - max decay) of decays a = exp(g) (GDN) or exp(dt A) (Mamba-2); inf at a = 1."""
    a = float(np.max(as_array(decays, "decays")))
    return math.inf if a >= 1.0 else 1.0 / (1.0 - a)
