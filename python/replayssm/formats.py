"""The bit-exact state formats of replayssm (src/formats/README.md): the same codec as `replayssm quantize` and the
CUDA kernels, so codes, scales and dequantized values are identical bit for bit.

An array [..., V, K] is a stack of head states: K is the last axis (blocks run along it), V the one before it, and
every axis before those is flattened row-major into the head index h, which is also the SR counter's head."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from . import _core
from ._args import as_array


@dataclass(frozen=True)
class Quantized:
    """A quantized stack of head states."""
    codes: np.ndarray        # uint8 [heads, code bytes per head]: row-major [V][K] codes (4-bit: even element low)
    scales: np.ndarray       # uint8 [heads, scale bytes per head]: the raw little-endian scales
    dequantized: np.ndarray  # float32, the input's shape: the decoded values
    format: str
    scaling: str
    rounding: str
    code_bits: int
    block: int               # elements per scale block along K (block scaling), else 0

    @property
    def bytes_per_head(self) -> int:
        return self.codes.shape[1] + self.scales.shape[1]


def names() -> List[str]:
    """Every state format: fp32, bf16, fp16, bf16x2, fp8_e4m3, fp8_e5m2, int8, int8_ef, int16, nvfp4, mxfp8, mxfp4."""
    return list(_core.format_names())


def scalings(format: str) -> List[str]:
    """The scalings valid for a format (none, head, row, block, column)."""
    return list(_core.valid_scalings(format))


def bytes_per_state(format: str, V: int, K: int, scaling: Optional[str] = None) -> int:
    """Bytes of one [V, K] head state (codes + scales) in a format."""
    return int(_core.bytes_per_state(format, int(V), int(K), scaling or ""))


def quantize(x, format: str, scaling: Optional[str] = None, rounding: str = "rne", seed: int = 0,
             step: int = 0, prev: Optional[Quantized] = None) -> Quantized:
    """Encodes x [..., V, K] (float32 after conversion; NaN/Inf allowed, see the formats README) in a format and
    decodes it back. scaling defaults to the format's own (none for fp32/bf16/fp16, row for fp8/int8/int16, column for
    int8_ef, block for nvfp4/mx). prev: the stored state this store replaces (a Quantized of the same format, scaling
    and shape): int8_ef adds its residual to x before quantizing (error feedback); the other formats ignore it.
    Without prev a store is a first store (int8_ef: no residual added). rounding "rne", "sr" (stochastic, the counter hash of seed, head and step) or "philox"
    (stochastic, Philox-4x32-10 bits of the same counter)."""
    a = as_array(x, "x", np.float32)
    if a.ndim < 2:
        raise ValueError(f"x: expected shape [..., V, K] (rank >= 2), got {list(a.shape)}")
    if a.size == 0:
        raise ValueError(f"x: empty array of shape {list(a.shape)}")
    for name, v in (("seed", seed), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name}: expected an integer >= 0, got {v!r}")
    if step >= 2 ** 32 or seed >= 2 ** 64:
        raise ValueError("step: must fit 32 bits" if step >= 2 ** 32 else "seed: must fit 64 bits")
    V, K = a.shape[-2], a.shape[-1]
    heads = a.size // (V * K)
    empty = np.zeros(0, np.uint8)
    pc, ps = empty, empty
    if prev is not None:
        if prev.format != format or (scaling or prev.scaling) != prev.scaling or prev.dequantized.shape != a.shape:
            raise ValueError(f"prev: a {prev.format}/{prev.scaling} state of shape {list(prev.dequantized.shape)} "
                             f"does not match {format}/{scaling or 'default'} of shape {list(a.shape)}")
        scaling = prev.scaling
        pc, ps = np.ascontiguousarray(prev.codes).reshape(-1), np.ascontiguousarray(prev.scales).reshape(-1)
    d = _core.quantize(a.reshape(-1), heads, V, K, format, scaling or "", rounding, int(seed), int(step), pc, ps)
    return Quantized(codes=d["codes"], scales=d["scales"], dequantized=d["dequantized"].reshape(a.shape),
                     format=d["format"], scaling=d["scaling"], rounding=d["rounding"], code_bits=d["code_bits"],
                     block=d["block"])
