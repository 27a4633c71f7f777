"""What the sweep end-to-end tests compare: every dataset of a results file, its config and the per-run numbers kept
as attributes, bit for bit."""
import h5py
import numpy as np


def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[...]
        f.visititems(visit)
        for k, v in f["config"].attrs.items():
            out["config@" + k] = v
        # The per-run numbers kept as attributes: merge and --resume must carry them too.
        for name, g in f["runs"].items():
            for k in ("first_flip", "bytes_per_element", "capacity_vs_fp32", "diverged_at"):
                out[f"runs/{name}@{k}"] = g.attrs.get(k)
    return out


def same(a, b):
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            if x.shape != y.shape or x.tobytes() != y.tobytes():
                print("  differs:", k)
                return False
        elif isinstance(x, np.ndarray):
            if x.shape != y.shape or not (x == y).all():
                print("  differs:", k)
                return False
        elif x != y:
            print("  differs:", k)
            return False
    return True
