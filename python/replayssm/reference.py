"""The FP64 reference of replayssm (reference/ in C++): the spec every kernel and mode is judged against.

Shapes (the activation-dump schema; an optional leading batch axis on every per-token input and on the state):

  gdn     q, k [T, Hk, K]  v [T, Hv, V]  g, beta [T, Hv]    ->  o [T, Hv, V]  final_state [Hv, V, K]
  mamba2  x [T, H, P]  B, C [T, G, N]  dt [T, H]  A, D [H]  ->  o [T, H, P]   final_state [H, P, N]

GDN: alpha = exp(g), S <- alpha S; u = beta (v - S k); S <- S + u k^T; o = S (scale q), scale defaulting to
1/sqrt(K). Mamba-2: S <- exp(dt A) S + (dt x) B^T; o = S C + D x (dt already softplus'ed, A < 0). The state is
replayssm's [V, K] per head: transpose flash-linear-attention's / transformers' [K, V] GDN state. Inputs may be numpy
arrays or torch CPU tensors of any float type; they are converted to float64, and outputs are float64 numpy arrays.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from . import _core
from ._args import check_choice, positive_int
from ._fields import Fields, gdn_fields, mamba2_fields, fields_of

FORMS = ("recurrent", "chunked", "replay")


def _run(f: Fields, per_sequence) -> Tuple[np.ndarray, np.ndarray]:
    outs, states = [], []
    for b in range(f.dims["B"]):
        init = None if f.initial_state is None else np.ascontiguousarray(f.initial_state[b])
        o, s = per_sequence(f.sequence(b), init)
        outs.append(o)
        states.append(s)
    if f.batched:
        return np.stack(outs), np.stack(states)
    return outs[0], states[0]


def gdn(q, k, v, g, beta, scale: Optional[float] = None, initial_state=None, *, form: str = "recurrent",
        L: int = 16, chunk: int = 64) -> Tuple[np.ndarray, np.ndarray]:
    """Gated DeltaNet over T tokens in FP64: returns (o [T, Hv, V], final_state [Hv, V, K]), float64.

    form: "recurrent" (the token-by-token spec), "chunked" (the FLA chunked form, chunk tokens per chunk) or
    "replay" (ReplaySSM: a checkpoint and a window of L records); all three agree to ~1e-12 relative."""
    check_choice(form, "form", FORMS)
    L, chunk = positive_int(L, "L"), positive_int(chunk, "chunk")
    f = gdn_fields(q, k, v, g, beta, scale, initial_state)
    d = f.dims
    return _run(f, lambda a, init: _core.reference_gdn(a["q"], a["k"], a["v"], a["g"], a["beta"], d["T"], d["Hk"],
                                                       d["Hv"], d["K"], d["V"], f.scale, init, form, L, chunk))


def mamba2(x, B, C, dt, A, D=None, initial_state=None, *, form: str = "recurrent", L: int = 16,
           chunk: int = 64) -> Tuple[np.ndarray, np.ndarray]:
    """Mamba-2 (SSD) over T tokens in FP64: returns (o [T, H, P], final_state [H, P, N]), float64, the D x skip
    included in o. form as for gdn()."""
    check_choice(form, "form", FORMS)
    L, chunk = positive_int(L, "L"), positive_int(chunk, "chunk")
    f = mamba2_fields(x, B, C, dt, A, D, initial_state)
    d = f.dims
    return _run(f, lambda a, init: _core.reference_mamba2(a["x"], a["B"], a["C"], a["dt"], a["A"], a.get("D"),
                                                          d["T"], d["H"], d["G"], d["P"], d["N"], init, form, L,
                                                          chunk))


def verify_chain(arch: str, accept: int, initial_state=None, *, form: str = "recurrent", L: int = 16,
                 **inputs) -> Tuple[np.ndarray, np.ndarray]:
    """Speculative chain verify: T draft tokens (the inputs' T axis) run from the committed state initial_state
    (zeros when None), then the first `accept` (0..T) are kept. Returns (o [T, H, V] of every draft, the state after
    the accepted drafts [H, V, K]), float64.

    form: "recurrent" (conventional store-all: one state snapshot per draft, one restored) or "replay" (ReplaySSM:
    the drafts appended as records, the u's of GDN from one T x T solve, accept = keep a records); they agree to
    ~1e-12. inputs: the arch's fields by name (gdn: q, k, v, g, beta[, scale]; mamba2: x, B, C, dt, A[, D])."""
    f = fields_of(arch, initial_state=initial_state, **inputs)
    T = f.dims["T"]
    if isinstance(accept, bool) or not isinstance(accept, (int, np.integer)) or not 0 <= accept <= T:
        raise ValueError(f"accept: expected an integer in 0..T={T} (the drafts), got {accept!r}")
    return _verify(f, int(accept), None, form, L)


def draft_tree(spec: str) -> List[int]:
    """The parent list of a draft tree from text: "chain[:T]" (T = 8), "binary[:DEPTH]" (DEPTH = 3: 2 + 4 + 8 nodes),
    "star[:T]" (T = 8) or a branching list per depth like "4,2,2,1" (EAGLE / Medusa-style: every node of depth d - 1
    has b_d children). At most 64 nodes; nodes level by level, parent -1 = the committed state."""
    if not isinstance(spec, str):
        raise ValueError(f"spec: expected a string like 'binary:3' or '4,2,2,1', got {spec!r}")
    return list(_core.draft_tree(spec, 64))


def verify_tree(arch: str, parents: Sequence[int], accept_node: int, initial_state=None, *,
                form: str = "recurrent", L: int = 16, **inputs) -> Tuple[np.ndarray, np.ndarray]:
    """Speculative tree verify: T draft tokens (the inputs' T axis) are the nodes of a draft tree, node i's parent
    parents[i] in -1..i-1 (-1 = the committed state initial_state, zeros when None; draft_tree() builds common
    shapes). Node i's output reads the committed state advanced along its root path; then the root path of
    accept_node (-1..T-1, -1 = none) is kept. Returns (o [T, H, V] of every node, the state after the accepted path
    [H, V, K]), float64.

    form: "recurrent" (conventional store-all: one state per node, one restored) or "replay" (ReplaySSM: the nodes
    appended as records, the GDN u's from the T x T solve masked to ancestors, accept = the path's records copied
    behind the window); they agree to ~1e-12. inputs as for verify_chain()."""
    f = fields_of(arch, initial_state=initial_state, **inputs)
    T = f.dims["T"]
    if isinstance(parents, (str, bytes)) or not all(
            isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in np.asarray(parents).ravel()):
        raise ValueError(f"parents: expected a sequence of integers, one per draft, got {parents!r}")
    plist = [int(p) for p in np.asarray(parents).ravel()]
    if len(plist) != T:
        raise ValueError(f"parents: {len(plist)} nodes for T={T} drafts (one parent per draft)")
    if isinstance(accept_node, bool) or not isinstance(accept_node, (int, np.integer)) or not -1 <= accept_node < T:
        raise ValueError(f"accept_node: expected an integer in -1..T-1={T - 1}, got {accept_node!r}")
    return _verify(f, int(accept_node), plist, form, L)


def _verify(f: Fields, accept: int, parents: Optional[List[int]], form: str, L: int):
    check_choice(form, "form", ("recurrent", "replay"))
    L = positive_int(L, "L")
    d = f.dims
    if f.arch == "gdn":
        def run(a, init):
            return _core.verify_gdn(a["q"], a["k"], a["v"], a["g"], a["beta"], d["T"], d["Hk"], d["Hv"], d["K"],
                                    d["V"], f.scale, init, accept, form, L, parents)
    else:
        def run(a, init):
            return _core.verify_mamba2(a["x"], a["B"], a["C"], a["dt"], a["A"], a.get("D"), d["T"], d["H"], d["G"],
                                       d["P"], d["N"], init, accept, form, L, parents)
    return _run(f, run)
