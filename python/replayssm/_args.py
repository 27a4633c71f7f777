"""Argument checking shared by the package: arrays in (numpy, torch CPU tensors, anything with __dlpack__ or
__array__), shapes named and bound as they are seen, one ValueError naming the argument and the shape it expected."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np


def as_array(x: Any, name: str, dtype=np.float64) -> np.ndarray:
    """x as a C-contiguous CPU array of dtype (float64 by default); float16/32/64, ml_dtypes' bfloat16/float8 and
    integers are accepted and converted; a CUDA tensor, a complex, boolean or object array is a ValueError."""
    if x is None:
        raise ValueError(f"{name}: expected an array, got None")
    if not isinstance(x, np.ndarray):
        device = getattr(x, "device", None)
        if device is not None and str(getattr(device, "type", device)) not in ("cpu", "CPU"):
            raise ValueError(f"{name}: a tensor on {device}; replayssm computes on the CPU (move it with .cpu())")
        if hasattr(x, "detach"):  # torch: a tensor that requires grad cannot be exported
            x = x.detach()
        try:
            x = np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)
        except (TypeError, BufferError, RuntimeError):
            x = np.asarray(x.float() if hasattr(x, "float") else x)  # e.g. torch.bfloat16, which numpy cannot view
    if x.dtype.kind in "bcOUSM" or x.dtype == np.dtype("V"):
        raise ValueError(f"{name}: expected a real floating-point array, got dtype {x.dtype}")
    try:
        return np.ascontiguousarray(x, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: cannot convert dtype {x.dtype} to {np.dtype(dtype)}: {e}") from None


class Shapes:
    """Binds named dimensions (T, Hk, K, ...) from the arrays in the order they are checked."""

    def __init__(self, **known: int):
        self.dims: Dict[str, int] = dict(known)

    def check(self, name: str, x: np.ndarray, axes: Sequence[str]) -> np.ndarray:
        def expected() -> str:
            return "[" + ", ".join(f"{a}={self.dims[a]}" if a in self.dims else a for a in axes) + "]"

        if x.ndim != len(axes):
            raise ValueError(f"{name}: expected shape {expected()} (rank {len(axes)}), got {list(x.shape)}")
        for a, n in zip(axes, x.shape):
            if a in self.dims and self.dims[a] != n:
                raise ValueError(f"{name}: expected shape {expected()}, got {list(x.shape)}")
            self.dims.setdefault(a, int(n))
        for a in axes:
            if self.dims[a] < 1:
                raise ValueError(f"{name}: axis {a} is empty in shape {list(x.shape)}")
        return x

    def __getitem__(self, a: str) -> int:
        return self.dims[a]


def batched(x: np.ndarray, rank: int, name: str) -> bool:
    """Whether x carries the optional leading batch axis (rank + 1 dims) or not (rank dims)."""
    if x.ndim == rank + 1:
        return True
    if x.ndim == rank:
        return False
    raise ValueError(f"{name}: expected rank {rank} (or {rank + 1} with a leading batch axis), got shape "
                     f"{list(x.shape)}")


def optional_array(x: Any, name: str, dtype=np.float64) -> Optional[np.ndarray]:
    return None if x is None else as_array(x, name, dtype)


def check_choice(value: str, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def positive_int(value: Any, name: str, lo: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{name}: expected an integer >= {lo}, got {value!r}")
    return int(value)
