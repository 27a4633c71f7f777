"""The CPU emulation of replayssm's decode modes (src/emulation/): a mode is where the state is stored and in which
format -- policy, format, scaling, rounding, flush period L, GDN u-source -- named as `replayssm validate` prints it:

  policy/format[/scaling][/rounding][/u=hp|lp|recompute][/L=N][/seed=N]
  e.g. "conventional_shared/bf16", "replay_shared/fp8_e4m3/row/L=16", "replay_split/nvfp4/block/rne/u=hp"

The emulation is what the CUDA kernels equal bit for bit; backend="mode_aware" runs the mode-aware FP64 reference
instead (the format's codec applied exactly where the mode stores, in FP64; outputs rounded to float32 here), which
is what a kernel of the mode is judged against. Inputs as in replayssm.reference (model-facing fields, optional
batch axis); outputs float32. What each policy stores and what each output reads: reference/README.md."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from . import _core
from ._args import as_array, check_choice, positive_int
from ._fields import Fields, fields_of

BACKENDS = ("emulation", "mode_aware")


def modes(arch: str, main_only: bool = False) -> List[str]:
    """The modes `replayssm validate` runs for an arch (main_only: fp32, bf16, fp8_e4m3/row, nvfp4/block)."""
    return list(_core.mode_names(arch, bool(main_only)))


def _tokens(f: Fields, t0: int, t1: int):
    """Tokens t0..t1-1 of every sequence, in the emulation's FP32 form (the same conversion as validate)."""
    a = {n: (x if n in ("A", "D") else np.ascontiguousarray(x[:, t0:t1])) for n, x in f.arrays.items()}
    d, T = f.dims, t1 - t0
    if f.arch == "gdn":
        return _core.gdn_tokens(d["B"], T, d["Hk"], d["Hv"], d["K"], d["V"], f.scale, a["q"], a["k"], a["v"],
                                a["g"], a["beta"])
    return _core.mamba2_tokens(d["B"], T, d["G"], d["H"], d["N"], d["P"], a["x"], a["B"], a["C"], a["dt"], a["A"],
                               a.get("D"))


class Decoder:
    """A decode mode run step by step: step() one token of every sequence, verify() T drafts, accept() per sequence.

    Decoder(arch, mode, dims, initial_state=None, backend="emulation", max_drafts=8): dims gives B (sequences),
    the arch's head dims (gdn: Hk, Hv, K, V; mamba2: G, H, N, P); initial_state [B, H, V, K]. Each call takes the
    arch's fields with a leading batch axis and a T axis: step() T = 1, verify() T = drafts (gdn q [B, T, Hk, K] ...;
    gdn also scale). Outputs float32 [B, H, V] (step) or [B, T, H, V] (verify)."""

    def __init__(self, arch: str, mode: str, dims: dict, initial_state=None, backend: str = "emulation",
                 max_drafts: int = 8):
        check_choice(arch, "arch", ("gdn", "mamba2"))
        check_choice(backend, "backend", BACKENDS)
        self.arch = arch
        keys = ("B", "Hk", "Hv", "K", "V") if arch == "gdn" else ("B", "G", "H", "N", "P")
        missing = [k for k in keys if k not in dims]
        if missing:
            raise ValueError(f"dims: missing {missing[0]} (an {arch} decoder needs {', '.join(keys)})")
        self.dims = {k: positive_int(dims[k], f"dims[{k!r}]") for k in keys}
        d = self.dims
        G, H, K, V = (d["Hk"], d["Hv"], d["K"], d["V"]) if arch == "gdn" else (d["G"], d["H"], d["N"], d["P"])
        s0 = None
        if initial_state is not None:
            s0 = as_array(initial_state, "initial_state", np.float32)
            if s0.shape != (d["B"], H, V, K):
                raise ValueError(f"initial_state: expected shape [B={d['B']}, H={H}, V={V}, K={K}], got "
                                 f"{list(s0.shape)}")
        self._d = _core.Decoder(arch, mode, d["B"], G, H, K, V, positive_int(max_drafts, "max_drafts"),
                                None if s0 is None else s0.reshape(-1), backend)

    def _fields(self, inputs: dict) -> Fields:
        f = fields_of(self.arch, **inputs)
        if not f.batched:
            raise ValueError(f"{'q' if self.arch == 'gdn' else 'x'}: expected a leading batch axis [B, T, ...]")
        for k, v in self.dims.items():
            if f.dims[k] != v:
                raise ValueError(f"{'q' if self.arch == 'gdn' else 'x'}: dimension {k}={f.dims[k]}, the decoder "
                                 f"has {k}={v}")
        return f

    def step(self, **inputs) -> np.ndarray:
        f = self._fields(inputs)
        if f.dims["T"] != 1:
            raise ValueError(f"step: one token per sequence (T = 1), got T={f.dims['T']}")
        return self._d.step(_tokens(f, 0, 1))

    def verify(self, **inputs) -> np.ndarray:
        f = self._fields(inputs)
        return self._d.verify(_tokens(f, 0, f.dims["T"]))

    def accept(self, accepted: Sequence[int]) -> None:
        self._d.accept([int(a) for a in accepted])

    def state(self) -> np.ndarray:
        """The current state, float32 [B, H, V, K] (replay: the checkpoint, HP under split, advanced over the
        window)."""
        return self._d.state()

    def stored(self):
        """(codes, scales), uint8 [B * H, bytes]: the stored copy (conventional: the state; replay-shared: the
        checkpoint; replay-split: the read-only LP copy) in the codec's layout (src/formats/README.md)."""
        return self._d.stored()

    @property
    def flushes(self) -> int:
        return int(self._d.flushes)

    @property
    def mode(self) -> str:
        return str(self._d.mode)


@dataclass(frozen=True)
class Decoded:
    o: np.ndarray        # float32 [T, H, V] (with a batch axis when the inputs had one)
    state: np.ndarray    # float32 [H, V, K]: the state the next token would start from
    codes: np.ndarray    # uint8 [B * H, code bytes]: the stored copy at the end
    scales: np.ndarray   # uint8 [B * H, scale bytes]
    flushes: int
    mode: str            # the resolved mode, L and seed included


def decode(arch: str, mode: str, initial_state=None, *, backend: str = "emulation", **inputs) -> Decoded:
    """Runs every token of the inputs as a standard decode step in a mode. inputs: the arch's fields by name (as
    replayssm.reference.gdn / mamba2), optional batch axis; initial_state [H, V, K] (or [B, H, V, K])."""
    f = fields_of(arch, initial_state=initial_state, **inputs)
    d = f.dims
    H, V, K = f.state_dims
    init = None if f.initial_state is None else f.initial_state.astype(np.float32)
    dims = {k: d[k] for k in (("B", "Hk", "Hv", "K", "V") if arch == "gdn" else ("B", "G", "H", "N", "P"))}
    dec = Decoder(arch, mode, dims, init, backend)
    o = np.empty((d["B"], d["T"], H, V), np.float32)
    for t in range(d["T"]):
        o[:, t] = dec._d.step(_tokens(f, t, t + 1))
    state = dec.state()
    codes, scales = dec.stored()
    if not f.batched:
        o, state = o[0], state[0]
    return Decoded(o=o, state=state, codes=codes, scales=scales, flushes=dec.flushes, mode=dec.mode)
