"""Shared pieces of the ReplaySSM figures (replayssm_plots.py): styles, the sweep results loader, binning and
axis helpers, and the layout and atomic PNG save that every figure ends with.

matplotlib is switched to the Agg backend here, before pyplot is imported, so that every figure module that takes
plt from this module draws to files only.
"""
import os

import h5py
import numpy as np
import matplotlib

matplotlib.use("Agg")  # files only; notebooks display the saved PNGs
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402,F401  (the figure modules use matplotlib.ticker)

# --------------------------------------------------------------------------------------------------------------
# Styles: the policy is the study's main axis, so it gets both a colour and a line style.

POLICY_STYLE = {
    "conventional_shared": dict(color="#d62728", ls="--", marker="v", label="conventional-shared"),
    "replay_shared": dict(color="#ff7f0e", ls="-.", marker="s", label="replay-shared"),
    "replay_split": dict(color="#1f77b4", ls="-", marker="o", label="replay-split"),
}
FP32_STYLE = dict(color="0.45", ls=":", lw=1.6, label="FP32 floor")
USOURCE_STYLE = {
    # hp is drawn wide underneath: recompute often coincides with it exactly
    "hp": dict(color="#1f77b4", ls="-", marker="o", lw=5, ms=7, alpha=0.45, label="u from HP (exact)"),
    "lp": dict(color="#d62728", ls="--", marker="v", lw=2, ms=5, alpha=1.0, label="u from LP"),
    "recompute": dict(color="#2ca02c", ls="-.", marker="s", lw=1.8, ms=4, alpha=1.0, label="u recomputed at flush"),
}
FORMAT_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
MODEL_MARKERS = ["o", "^", "s", "D"]
TINY = 1e-300  # what counts as zero on a log axis


def find_sample(name):
    """Path of experiments/samples/NAME, searched upwards from this file and from the working directory."""
    starts = [os.path.dirname(os.path.abspath(__file__)), os.getcwd()]
    for start in starts:
        d = start
        while True:
            p = os.path.join(d, "experiments", "samples", name)
            if os.path.exists(p):
                return p
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "experiments", "samples", name)


def _s(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def format_label(fmt, scaling="none"):
    """'fp8_e4m3', 'row' -> 'FP8 E4M3 (per row)'; 'nvfp4', 'block' -> 'NVFP4'."""
    names = {"fp32": "FP32", "bf16": "BF16", "fp16": "FP16", "fp8_e4m3": "FP8 E4M3", "fp8_e5m2": "FP8 E5M2",
             "int8": "INT8", "int8_ef": "INT8 + int4 residual", "int16": "INT16", "bf16x2": "BF16 hi/lo", "nvfp4": "NVFP4", "mxfp8": "MXFP8",
             "mxfp4": "MXFP4"}
    s = names.get(fmt, fmt.upper())
    if scaling not in ("none", "-", "", "block") or (scaling == "block" and fmt not in ("nvfp4", "mxfp8", "mxfp4")):
        s += " (per %s)" % scaling
    return s


# --------------------------------------------------------------------------------------------------------------
# Loading

class Sweep:
    """A `replayssm sweep` results file: runs (dicts of attrs + arrays), bins, config and reference NLL."""

    def __init__(self, path):
        self.path = path
        with h5py.File(path, "r") as f:
            if "config" not in f or "runs" not in f:
                raise ValueError("%s: not a replayssm sweep results file (no /config or /runs)" % path)
            self.config = {k: _s(v) for k, v in f["config"].attrs.items()}
            self.bins = np.asarray(f["bins"][...], dtype=np.int64)
            self.reference = {m: np.asarray(f["reference"][m]["nll"][...]) for m in f.get("reference", {})}
            self.runs = []
            for rid, g in f["runs"].items():
                r = {k: _s(v) for k, v in g.attrs.items()}
                r["id"] = rid
                for k in ("kl", "kl_binned", "nll", "top1", "output_drift", "state_drift", "flush_steps"):
                    r[k] = np.asarray(g[k][...])
                # Token flips per bin; None in results files written without them (derive them from top1).
                r["flip_rate_binned"] = np.asarray(g["flip_rate_binned"][...]) if "flip_rate_binned" in g else None
                r["L"] = int(r.get("L", "16"))
                r.setdefault("u_source", "-")
                self.runs.append(r)
        if not self.runs:
            raise ValueError("%s: the file holds no runs" % path)
        self.device = self.runs[0].get("device", "?")
        self.backend = self.config.get("backend", self.runs[0].get("backend", "?"))
        self.text = self.config.get("text", self.runs[0].get("text", "?"))

    def models(self):
        return sorted({r["model"] for r in self.runs})

    def select(self, **kw):
        out = []
        for r in self.runs:
            if all((r.get(k) in v) if isinstance(v, (list, tuple, set)) else r.get(k) == v for k, v in kw.items()):
                out.append(r)
        return out

    def formats(self, runs=None, lp_only=False):
        seen = []
        for r in runs or self.runs:
            key = (r["format"], r["scaling"])
            if key not in seen and not (lp_only and r["format"] == "fp32"):
                seen.append(key)
        order = ["fp32", "bf16x2", "bf16", "fp16", "int16", "fp8_e4m3", "fp8_e5m2", "int8", "mxfp8", "nvfp4", "mxfp4"]
        return sorted(seen, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[1]))

    def nbins(self):
        """Bins drawn: all but a last one-position bin [T, T + 1) (a single noisy point at the end)."""
        n = len(self.bins) - 1
        return n - 1 if n > 2 and self.bins[-1] - self.bins[-2] == 1 else n

    def positions(self):
        """Representative position (geometric centre of the bin, 1-based) of each drawn bin."""
        n = self.nbins()
        lo, hi = self.bins[:n].astype(float), self.bins[1:n + 1].astype(float) - 1
        return np.sqrt(lo * np.maximum(hi, lo))

    def subtitle(self):
        return "%s, %d positions, backend %s" % (self.text, len(self.runs[0]["kl"]), self.backend)


def binned_mean(values, positions_1based, edges):
    """Mean of values over the position bins [edges[i], edges[i+1]); NaN for empty bins."""
    idx = np.searchsorted(edges, positions_1based, side="right") - 1
    n = len(edges) - 1
    sums = np.bincount(idx, weights=values, minlength=n)[:n]
    cnt = np.bincount(idx, minlength=n)[:n]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan)


def _positive(y):
    y = np.asarray(y, dtype=float).copy()
    y[~(y > TINY)] = np.nan
    return y


def _log2_length_axis(ax, xmax):
    ax.set_xscale("log", base=2)
    ax.set_xlim(1, max(2, xmax) * 1.1)
    ax.grid(True, which="major", alpha=0.3)


def _finish(fig):
    """Constrained layout: panels, labels and the suptitle without overlaps or wasted space."""
    fig.set_layout_engine("constrained")


def _save(fig, out_png):
    d = os.path.dirname(os.path.abspath(out_png))
    os.makedirs(d, exist_ok=True)
    tmp = out_png + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, out_png)
