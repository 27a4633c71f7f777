"""Files: the activation-dump schema (datasets/README.md) through replayssm's one reader and writer, and plain
datasets of any replayssm output (`replayssm reference` results, `quantize` outputs, files for `validate --external`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from . import _core
from ._fields import fields_of


@dataclass
class Dump:
    """An activation dump: arch "gdn" or "mamba2", the GDN query scale, and one dict of float64 arrays per layer
    ("name" plus the arch's fields, shapes as replayssm.reference takes them, and "initial_state" where present)."""
    arch: str
    layers: List[Dict[str, object]] = field(default_factory=list)
    scale: Optional[float] = None

    def inputs(self, i: int) -> Dict[str, np.ndarray]:
        """Layer i's fields as keyword arguments of replayssm.reference.gdn / mamba2 (scale included for GDN)."""
        d = {k: v for k, v in self.layers[i].items() if k != "name"}
        if self.arch == "gdn":
            d["scale"] = self.scale
        return d


def read_dump(path: str) -> Dump:
    """Reads and validates an activation dump (every check of the CLI's reader; ValueError naming file and field)."""
    d = _core.read_dump(str(path))
    return Dump(arch=d["arch"], layers=list(d["layers"]), scale=d.get("scale"))


def write_dump(path: str, arch: str, layers: List[Dict[str, object]], scale: Optional[float] = None,
               as_float32: bool = True) -> None:
    """Writes an activation dump atomically: layers as Dump.layers (a "name" each, default "0", "1", ...); then
    reads it back with the CLI's reader, so a file written here is one every command accepts."""
    out = []
    for i, layer in enumerate(layers):
        layer = dict(layer)
        name = str(layer.pop("name", i))
        init = layer.pop("initial_state", None)
        if arch == "gdn":
            layer.setdefault("scale", scale)
        f = fields_of(arch, initial_state=init, **layer)
        if f.batched:
            raise ValueError(f"layers[{i}]: a dump layer is one sequence (no batch axis)")
        entry = {"name": name, **{k: (v if k in ("A", "D") else np.ascontiguousarray(v[0]))
                                  for k, v in f.arrays.items()}}
        if f.initial_state is not None:
            entry["initial_state"] = np.ascontiguousarray(f.initial_state[0])
        if arch == "gdn":
            scale = f.scale
        out.append(entry)
    _core.write_dump(str(path), arch, float(scale or 0.0), out, bool(as_float32))


def read_array(path: str, dataset: str) -> np.ndarray:
    """One dataset of an HDF5 file as float64, in its shape (NaN/Inf kept)."""
    return _core.read_array(str(path), dataset)


def write_arrays(path: str, arrays: Dict[str, object]) -> None:
    """Writes float64 datasets atomically, e.g. {"/layers/0/o": o, "/layers/0/final_state": S} for
    `replayssm validate --external`."""
    _core.write_arrays(str(path), {k: np.ascontiguousarray(np.asarray(v, dtype=np.float64))
                                   for k, v in arrays.items()})
