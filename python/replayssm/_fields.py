"""The model-facing fields of each architecture (the activation-dump schema, datasets/README.md), checked and bound
to named dimensions, with the optional leading batch axis on every per-token field and on the state.

  GDN      q, k [batch?, T, Hk, K]  v [batch?, T, Hv, V]  g, beta [batch?, T, Hv]  state [batch?, Hv, V, K]
  Mamba-2  x [batch?, T, H, P]  B, C [batch?, T, G, N]  dt [batch?, T, H]  A, D [H]  state [batch?, H, P, N]

(Hv a multiple of Hk: value head h reads key head h // (Hv // Hk); H a multiple of G likewise.)

The state is replayssm's [V, K] per head (o = S q): the transpose of flash-linear-attention's and transformers'
[K, V] GDN state."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from ._args import Shapes, as_array, batched


@dataclass
class Fields:
    arch: str
    batched: bool
    dims: Dict[str, int]             # B (1 when not batched), T, and the arch's head dims
    arrays: Dict[str, np.ndarray]    # float64, with the batch axis (added when absent); A, D without
    initial_state: Optional[np.ndarray]  # float64 [B, H, V, K] or None
    scale: float = 0.0               # GDN only

    @property
    def heads(self) -> int:
        return self.dims["Hv"] if self.arch == "gdn" else self.dims["H"]

    @property
    def state_dims(self):
        d = self.dims
        return (d["Hv"], d["V"], d["K"]) if self.arch == "gdn" else (d["H"], d["P"], d["N"])

    def sequence(self, b: int) -> Dict[str, np.ndarray]:
        """The fields of sequence b, without the batch axis, C-contiguous."""
        return {n: (a if n in ("A", "D") else np.ascontiguousarray(a[b])) for n, a in self.arrays.items()}


def _initial(init, sh: Shapes, is_batched: bool, axes) -> Optional[np.ndarray]:
    if init is None:
        return None
    s = as_array(init, "initial_state")
    sh.check("initial_state", s, (("batch",) if is_batched else ()) + axes)
    return s if is_batched else s[None]


def gdn_fields(q, k, v, g, beta, scale=None, initial_state=None) -> Fields:
    q = as_array(q, "q")
    is_b = batched(q, 3, "q")
    pre = ("batch",) if is_b else ()
    sh = Shapes()
    arrays = {"q": sh.check("q", q, pre + ("T", "Hk", "K"))}
    arrays["k"] = sh.check("k", as_array(k, "k"), pre + ("T", "Hk", "K"))
    arrays["v"] = sh.check("v", as_array(v, "v"), pre + ("T", "Hv", "V"))
    arrays["g"] = sh.check("g", as_array(g, "g"), pre + ("T", "Hv"))
    arrays["beta"] = sh.check("beta", as_array(beta, "beta"), pre + ("T", "Hv"))
    if sh["Hv"] % sh["Hk"]:
        raise ValueError(f"v: value heads Hv={sh['Hv']} must be a multiple of key heads Hk={sh['Hk']} (q, k)")
    init = _initial(initial_state, sh, is_b, ("Hv", "V", "K"))
    if not is_b:
        arrays = {n: a[None] for n, a in arrays.items()}
    dims = dict(sh.dims)
    dims["B"] = dims.pop("batch", 1)
    if scale is None:
        scale = dims["K"] ** -0.5
    scale = float(scale)
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale: expected a finite number > 0, got {scale}")
    return Fields("gdn", is_b, dims, arrays, init, scale)


def mamba2_fields(x, B, C, dt, A, D=None, initial_state=None) -> Fields:
    x = as_array(x, "x")
    is_b = batched(x, 3, "x")
    pre = ("batch",) if is_b else ()
    sh = Shapes()
    arrays = {"x": sh.check("x", x, pre + ("T", "H", "P"))}
    arrays["B"] = sh.check("B", as_array(B, "B"), pre + ("T", "G", "N"))
    arrays["C"] = sh.check("C", as_array(C, "C"), pre + ("T", "G", "N"))
    arrays["dt"] = sh.check("dt", as_array(dt, "dt"), pre + ("T", "H"))
    arrays["A"] = sh.check("A", as_array(A, "A"), ("H",))
    if D is not None:
        arrays["D"] = sh.check("D", as_array(D, "D"), ("H",))
    if sh["H"] % sh["G"]:
        raise ValueError(f"x: heads H={sh['H']} must be a multiple of groups G={sh['G']} (B, C)")
    init = _initial(initial_state, sh, is_b, ("H", "P", "N"))
    if not is_b:
        arrays = {n: (a if n in ("A", "D") else a[None]) for n, a in arrays.items()}
    dims = dict(sh.dims)
    dims["B"] = dims.pop("batch", 1)
    return Fields("mamba2", is_b, dims, arrays, init)


def fields_of(arch: str, initial_state=None, **kw) -> Fields:
    """The fields of either arch from keyword arguments (unknown or missing names are a ValueError)."""
    names = {"gdn": ({"q", "k", "v", "g", "beta"}, {"scale"}),
             "mamba2": ({"x", "B", "C", "dt", "A"}, {"D"})}
    if arch not in names:
        raise ValueError(f"arch: expected 'gdn' or 'mamba2', got {arch!r}")
    need, opt = names[arch]
    missing, unknown = need - kw.keys(), kw.keys() - need - opt
    if missing:
        raise ValueError(f"{sorted(missing)[0]}: missing (an {arch} input needs {', '.join(sorted(need))})")
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not an {arch} input (expected {', '.join(sorted(need | opt))})")
    if arch == "gdn":
        return gdn_fields(initial_state=initial_state, **kw)
    return mamba2_fields(initial_state=initial_state, **kw)
