#!/usr/bin/python3
"""Figures of the ReplaySSM accuracy and speed studies, drawn from replayssm's own HDF5 outputs.

Used by the notebooks in this folder (which stay thin) and by scripts/demo. Needs Debian's python3 with
python3-h5py, python3-numpy and python3-matplotlib.

Command line (one figure per call):

    /usr/bin/python3 notebooks/replayssm_plots.py FIGURE INPUT.h5 OUTPUT.png

FIGURE is one of the keys of FIGURES below:
    kl-vs-length        results.h5 of `replayssm sweep` (study 1)
    drift-vs-length     results.h5 of `replayssm sweep` (study 2)
    flush-interval      results.h5 of `replayssm sweep --config experiments/flush_interval.ini` (study 5)
    gdn-usource         results.h5 of `replayssm sweep --config experiments/gdn_usource.ini` (study 6)
    state-schemes       results.h5 of `replayssm sweep --config experiments/state_schemes.ini` (study 7)
    speedup-vs-batch    bench.h5 of `replayssm bench` (study 3)
    verify-latency-vs-T bench.h5 of `replayssm bench` (study 4)

Schemas: datasets/README.md, section "Sweep results"; src/cli/bench_command.cpp (write_h5) for bench.h5.
"""
import os
import sys

import h5py
import numpy as np
import matplotlib

matplotlib.use("Agg")  # files only; notebooks display the saved PNGs
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

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
             "int8": "INT8", "int16": "INT16", "bf16x2": "BF16 hi/lo", "nvfp4": "NVFP4", "mxfp8": "MXFP8",
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


# --------------------------------------------------------------------------------------------------------------
# Study 1: output KL vs length, shared vs split

def plot_kl_vs_length(results, out_png):
    sw = results if isinstance(results, Sweep) else Sweep(results)
    models = sw.models()
    fmts = sw.formats(lp_only=True) or sw.formats()
    x = sw.positions()
    fig, axes = plt.subplots(len(models), len(fmts), figsize=(max(9.0, 4.6 * len(fmts) + 0.6), 3.7 * len(models) + 1.0),
                             squeeze=False, sharex=True, sharey=True)
    for i, model in enumerate(models):
        floor = [r for r in sw.select(model=model, format="fp32") if r["policy"] == "conventional_shared"] or \
            sw.select(model=model, format="fp32")
        for j, (fmt, scaling) in enumerate(fmts):
            ax = axes[i][j]
            if floor:
                ax.plot(x, _positive(floor[0]["kl_binned"][:len(x), 0]), **FP32_STYLE)
            for pol, st in POLICY_STYLE.items():
                for r in sw.select(model=model, format=fmt, scaling=scaling, policy=pol):
                    kb = r["kl_binned"][:len(x)]
                    ax.plot(x, _positive(kb[:, 0]), color=st["color"], ls=st["ls"], marker=st["marker"], ms=4,
                            lw=2, label=st["label"] + (" (L=%d)" % r["L"] if pol != "conventional_shared" else ""))
                    ax.fill_between(x, _positive(kb[:, 1]), _positive(kb[:, 2]), color=st["color"], alpha=0.10,
                                    lw=0)
            ax.set_yscale("log")
            _log2_length_axis(ax, x[-1])
            ax.set_title("%s · %s" % (model, format_label(fmt, scaling)), fontsize=11)
            if i == len(models) - 1:
                ax.set_xlabel("position in the text (bytes, log scale)")
            if j == 0:
                ax.set_ylabel("output KL(FP64 ‖ mode) (nats)")
            if i == 0 and j == 0:
                ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("Output KL vs length: shared vs split state precision (bin mean; band p50–p95)\n" + sw.subtitle(),
                 fontsize=12)
    _finish(fig)
    _save(fig, out_png)
    return out_png


# --------------------------------------------------------------------------------------------------------------
# Study 2: state and output drift vs length

def plot_drift_vs_length(results, out_png):
    sw = results if isinstance(results, Sweep) else Sweep(results)
    models = sw.models()
    fmts = sw.formats(lp_only=True) or sw.formats()
    edges = sw.bins
    x = sw.positions()
    rows = [(m, kind) for m in models for kind in ("output", "state")]
    fig, axes = plt.subplots(len(rows), len(fmts), figsize=(max(9.0, 4.6 * len(fmts) + 0.6), 3.1 * len(rows) + 1.0),
                             squeeze=False, sharex=True)

    def curve(r, kind):
        if kind == "output":
            d = r["output_drift"]
            pos = np.arange(1, d.shape[1] + 1)
        else:
            d = r["state_drift"]
            pos = r["flush_steps"]
        if d.size == 0:
            return None
        return binned_mean(d.mean(axis=0), pos, edges)[:len(x)]  # mean over layers, then over the bin

    for i, (model, kind) in enumerate(rows):
        floor = [r for r in sw.select(model=model, format="fp32") if r["policy"] == "conventional_shared"] or \
            sw.select(model=model, format="fp32")
        for j, (fmt, scaling) in enumerate(fmts):
            ax = axes[i][j]
            if floor:
                y = curve(floor[0], kind)
                if y is not None:
                    ax.plot(x, _positive(y), **FP32_STYLE)
            for pol, st in POLICY_STYLE.items():
                for r in sw.select(model=model, format=fmt, scaling=scaling, policy=pol):
                    y = curve(r, kind)
                    if y is not None:
                        ax.plot(x, _positive(y), color=st["color"], ls=st["ls"], marker=st["marker"], ms=4, lw=2,
                                label=st["label"])
            ax.set_yscale("log")
            _log2_length_axis(ax, x[-1])
            what = "output drift ‖Δo‖/‖o‖" if kind == "output" else "state drift ‖ΔS‖_F/‖S‖_F"
            ax.set_title("%s · %s · %s" % (model, format_label(fmt, scaling), kind), fontsize=10)
            if j == 0:
                ax.set_ylabel(what + "\n(relative error)", fontsize=9)
            if i == len(rows) - 1:
                ax.set_xlabel("position in the text (bytes, log scale)")
            if i == 0 and j == 0:
                ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("State and output drift vs length (layer-local, mean over layers and position bin)\n" +
                 sw.subtitle(), fontsize=12)
    _finish(fig)
    _save(fig, out_png)
    return out_png


# --------------------------------------------------------------------------------------------------------------
# Study 5: flush interval L, accuracy and modelled traffic

def element_bits(fmt, scaling="none", K=128, V=128):
    """Stored bits per state element including scales (DESIGN.md section 4)."""
    base = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8_e4m3": 8, "fp8_e5m2": 8, "int8": 8, "nvfp4": 4, "mxfp8": 8,
            "mxfp4": 4}.get(fmt, 32)
    E = K * V
    scale_bits = 0.0
    if fmt == "nvfp4":
        scale_bits = 8.0 / 16 + 32.0 / E
    elif fmt in ("mxfp8", "mxfp4"):
        scale_bits = 8.0 / 32
    elif scaling == "row":
        scale_bits = 32.0 * V / E
    elif scaling == "head":
        scale_bits = 32.0 / E
    elif scaling == "block":
        scale_bits = 32.0 / 32
    return base + scale_bits


def modelled_bytes_per_step(policy, fmt, scaling, L, K=128, V=128):
    """DESIGN.md section 6: state bytes per decode step per head (K x V state), amortised over L steps.

    conventional-shared: read + write the stored state (E * b / 8 each) every step.
    replay-shared: read the checkpoint (E b/8) every step, write it once per L steps, plus the record buffer
      (read n ~ (L - 1) / 2 records of K + V + 1 floats on average, append one).
    replay-split: non-flush steps read the LP copy (E b/8); a flush reads and writes the FP32 checkpoint and writes
      the LP copy; plus the buffer as above.
    """
    E = K * V
    b = element_bits(fmt, scaling, K, V) / 8.0
    rec = 4.0 * (K + V + 1)
    buf = rec * ((L - 1) / 2.0 + 1)
    if policy == "conventional_shared":
        return 2 * E * b
    if policy == "replay_shared":
        return E * b + E * b / L + buf
    if policy == "replay_split":
        return ((L - 1) * E * b + (4 * E + 4 * E + E * b)) / L + buf
    raise ValueError("unknown policy " + policy)


def plot_flush_interval(results, out_png, tail_bins=2, bench=None, B=256):
    """Accuracy vs L (measured), traffic vs L (modelled) and, given bench file(s) with several L, the measured
    decode speedup over conventional FP32 vs L at batch B."""
    sw = results if isinstance(results, Sweep) else Sweep(results)
    if bench is not None and not isinstance(bench, Bench):
        bench = Bench(bench) if bench else None
    measured = None
    if bench is not None:
        m = bench.mask(kernel="decode") & ~bench.mask(policy="conventional_shared")
        if m.any():
            B = _pick(bench.rows["B"][m], B)
            m &= bench.mask(B=B)
            for key in bench.variants(m):  # keep the variants timed at several L
                mv = m & bench.mask(policy=key[0], format=key[1], scaling=key[2], usource=key[3])
                if len(set(bench.rows["L"][mv])) < 2:
                    m &= ~mv
            if m.any():
                measured = m
    models = sw.models()
    fmts = sw.formats()
    Ls = sorted({r["L"] for r in sw.runs})
    ncols = max(len(models), 2)
    fig, grid = plt.subplots(2, ncols, figsize=(6.0 * ncols + 0.5, 10.0), squeeze=False)
    axes = list(grid[0][:len(models)]) + [grid[1][0], grid[1][1]]
    for ax in list(grid[0][len(models):]) + list(grid[1][2:]):
        ax.set_visible(False)
    if measured is None:
        grid[1][1].set_visible(False)
    nb = len(sw.bins) - 1
    lo = sw.bins[max(0, nb - tail_bins)]
    for i, model in enumerate(models):
        ax = axes[i]
        for k, (fmt, scaling) in enumerate(fmts):
            c = FORMAT_COLORS[k % len(FORMAT_COLORS)]
            for pol in ("replay_shared", "replay_split", "conventional_shared"):
                runs = sorted(sw.select(model=model, format=fmt, scaling=scaling, policy=pol), key=lambda r: r["L"])
                if not runs:
                    continue
                y = [float(np.mean(r["kl"][lo - 1:])) for r in runs]
                st = POLICY_STYLE[pol]
                ax.plot([r["L"] for r in runs], _positive(y), color=c, ls=st["ls"], marker=st["marker"], lw=2, ms=6,
                        label="%s, %s" % (format_label(fmt, scaling), st["label"]))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(Ls)
        ax.set_xticklabels([str(L) for L in Ls])
        ax.grid(True, which="major", alpha=0.3)
        ax.set_xlabel("flush interval L (steps)")
        ax.set_ylabel("mean output KL, positions ≥ %d (nats)" % lo)
        ax.set_title("%s: accuracy vs L" % model)
        ax.legend(fontsize=8)
    if measured is not None:
        ax = axes[len(models) + 1]
        for k, arch in enumerate(("gdn", "mamba2")):
            mm = measured & bench.mask(arch=arch)
            for kk, (pol, fmt, sc, us) in enumerate(bench.variants(mm)):
                m2 = mm & bench.mask(policy=pol, format=fmt, scaling=sc, usource=us)
                o = np.argsort(bench.rows["L"][m2])
                st = POLICY_STYLE.get(pol, dict(ls="-", marker="o"))
                ax.plot(bench.rows["L"][m2][o], bench.rows["speedup_vs_conv"][m2][o], ls=st["ls"],
                        marker=MODEL_MARKERS[k], color=FORMAT_COLORS[(2 * k + kk) % len(FORMAT_COLORS)], lw=2, ms=6,
                        label="%s: %s" % ("GDN" if arch == "gdn" else "Mamba-2", variant_label(pol, fmt, sc, us)))
        ax.axhline(1.0, color="k", ls=":", lw=1.2, label="= conventional FP32")
        ax.set_xscale("log", base=2)
        _ratio_axis(ax, "measured decode speedup over conventional FP32")
        Lb = sorted(set(int(v) for v in bench.rows["L"][measured]))
        ax.set_xticks(Lb)
        ax.set_xticklabels([str(L) for L in Lb])
        ax.grid(True, which="major", alpha=0.3)
        ax.set_xlabel("flush interval L (steps)")
        ax.set_title("measured, %s, B=%d" % (bench.name.split(" (")[0], B))
        ax.legend(fontsize=7.5)
    ax = axes[len(models)]
    Lgrid = np.array(sorted(set(Ls) | {1, 2, 4, 8, 16, 32, 64}), dtype=float)
    conv = modelled_bytes_per_step("conventional_shared", "fp32", "none", 1)
    ax.axhline(conv / 1024, color="k", ls="--", lw=1.5, label="conventional FP32 (read + write)")
    for k, (fmt, scaling) in enumerate(fmts):
        c = FORMAT_COLORS[k % len(FORMAT_COLORS)]
        for pol in ("replay_shared", "replay_split"):
            st = POLICY_STYLE[pol]
            y = [modelled_bytes_per_step(pol, fmt, scaling, int(L)) / 1024 for L in Lgrid]
            ax.plot(Lgrid, y, color=c, ls=st["ls"], marker=st["marker"], ms=5, lw=2,
                    label="%s, %s" % (format_label(fmt, scaling), st["label"]))
    y = [modelled_bytes_per_step("replay_shared", "fp32", "none", int(L)) / 1024 for L in Lgrid]
    ax.plot(Lgrid, y, color="0.3", ls="-.", marker="s", ms=5, lw=1.5, label="FP32, replay-shared")
    ax.set_xscale("log", base=2)
    ax.set_xticks(Lgrid)
    ax.set_xticklabels([str(int(L)) for L in Lgrid])
    ax.set_ylim(bottom=0)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_xlabel("flush interval L (steps)")
    ax.set_ylabel("modelled state + buffer traffic (KiB / step / head)")
    ax.set_title("traffic model (DESIGN §6), 128×128 head")
    ax.legend(fontsize=7.5)
    fig.suptitle("Flush interval L: accuracy (measured) and memory traffic (modelled)\n" + sw.subtitle(), fontsize=12)
    _finish(fig)
    _save(fig, out_png)
    return out_png


# --------------------------------------------------------------------------------------------------------------
# Study 6: GDN u-source under replay-split

def plot_gdn_usource(results, out_png):
    sw = results if isinstance(results, Sweep) else Sweep(results)
    runs = [r for r in sw.runs if r["policy"] == "replay_split" and r.get("u_source", "-") not in ("-", "", "n/a")]
    if not runs:
        raise ValueError("%s: no GDN replay-split runs with a u_source" % sw.path)
    models = sorted({r["model"] for r in runs})
    fmts = sw.formats(runs)
    x = sw.positions()
    edges = sw.bins
    fig, axes = plt.subplots(2 * len(models), len(fmts), figsize=(max(9.0, 4.6 * len(fmts) + 0.6), 3.3 * 2 * len(models) + 1),
                             squeeze=False, sharex=True)
    for mi, model in enumerate(models):
        for j, (fmt, scaling) in enumerate(fmts):
            for row, kind in enumerate(("kl", "state")):
                ax = axes[2 * mi + row][j]
                for us, st in USOURCE_STYLE.items():
                    for r in [q for q in runs if q["model"] == model and q["format"] == fmt and
                              q["scaling"] == scaling and q["u_source"] == us]:
                        if kind == "kl":
                            y = r["kl_binned"][:len(x), 0]
                        else:
                            y = binned_mean(r["state_drift"].mean(axis=0), r["flush_steps"], edges)[:len(x)]
                        ax.plot(x, _positive(y), **st)
                ax.set_yscale("log")
                _log2_length_axis(ax, x[-1])
                ax.set_title("%s · %s · replay-split" % (model, format_label(fmt, scaling)), fontsize=10)
                if j == 0:
                    ax.set_ylabel("output KL (nats)" if kind == "kl" else "state drift ‖ΔS‖_F/‖S‖_F\n(relative error)")
                if row == 1 and mi == len(models) - 1:
                    ax.set_xlabel("position in the text (bytes, log scale)")
                if j == 0 and row == 0 and mi == 0:
                    ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("GDN replay-split: which copy forms u between flushes\n" + sw.subtitle(), fontsize=12)
    _finish(fig)
    _save(fig, out_png)
    return out_png


# --------------------------------------------------------------------------------------------------------------
# Bench (studies 3 and 4)

def bench_paths(spec=None):
    """bench.h5 files to read: SPEC may be a file, a folder (every bench*.h5 in it) or a comma-separated list;
    default: $REPLAYSSM_BENCH, else every bench*.h5 in experiments/samples/. Missing files are left out."""
    import glob
    spec = spec if spec is not None else os.environ.get("REPLAYSSM_BENCH", os.path.dirname(find_sample("bench.h5")))
    out = []
    for part in [q for q in str(spec).split(",") if q]:
        if os.path.isdir(part):
            out += sorted(glob.glob(os.path.join(part, "bench*.h5")))
        elif os.path.exists(part):
            out.append(part)
    return out


class Bench:
    """`replayssm bench` HDF5 file(s): /rows/<column> arrays (one entry per timed case) and /device attrs.

    Several files (e.g. a batch sweep and a B=256 run made separately) are concatenated; a case present in more than
    one file (same arch, kernel, policy, format, scaling, u-source, B, L, T) is taken from the first file given.
    Ratios (speedup_vs_conv, verify_vs_*) are those each file computed against its own conventional FP32 rows.
    Rows timed with tensor-core row dots (column dots = "tc": the step's and the verify's, `replayssm bench
    --step-dots`) are left out: the figures compare the kernels that reproduce the emulation bit for bit."""

    KEY = ("arch", "kernel", "policy", "format", "scaling", "usource", "B", "L", "T")

    def __init__(self, paths):
        if isinstance(paths, (str, os.PathLike)):
            paths = [os.fspath(paths)]
        if not paths:
            raise ValueError("no bench file given")
        self.paths = list(paths)
        self.path = ", ".join(self.paths)
        cols, seen, rooflines, self.device = {}, set(), [], {}
        for path in self.paths:
            with h5py.File(path, "r") as f:
                if "rows" not in f:
                    raise ValueError("%s: not a replayssm bench file (no /rows)" % path)
                rows = {}
                for k, d in f["rows"].items():
                    a = d[...]
                    rows[k] = np.array([_s(v) for v in a]) if a.dtype.kind in ("S", "O") else a
                dev = {k: (_s(v) if isinstance(v, (bytes, str)) else v) for k, v in f["device"].attrs.items()} \
                    if "device" in f else {}
            if not self.device:
                self.device = dev
            if dev.get("roofline_gbps"):
                rooflines.append(float(dev["roofline_gbps"]))
            n = len(rows["median_us"])
            keep = []
            for i in range(n):
                if "dots" in rows and str(rows["dots"][i]) != "exact":
                    continue  # tensor-core rows (step and verify): not the emulation's bits
                key = tuple(str(rows[k][i]) for k in self.KEY)
                if key not in seen:
                    seen.add(key)
                    keep.append(i)
            for k, a in rows.items():
                cols.setdefault(k, []).append(a[keep])
        self.rows = {k: np.concatenate(v) for k, v in cols.items() if len(v) == len(self.paths)}
        self.n = len(self.rows.get("median_us", []))
        self.roofline = float(np.median(rooflines)) if rooflines else 0.0
        self.name = self.device.get("name", "?")

    def mask(self, **kw):
        m = np.ones(self.n, dtype=bool)
        for k, v in kw.items():
            col = self.rows[k]
            m &= np.isin(col, v) if isinstance(v, (list, tuple, set)) else (col == v)
        return m

    def variants(self, m):
        keys = []
        for i in np.nonzero(m)[0]:
            key = (self.rows["policy"][i], self.rows["format"][i], self.rows["scaling"][i], self.rows["usource"][i])
            if key not in keys:
                keys.append(key)
        return keys

    def source(self):
        return "%d file(s): %s" % (len(self.paths), ", ".join(os.path.basename(p) for p in self.paths))


def variant_label(policy, fmt, scaling, usource):
    s = "%s %s" % (POLICY_STYLE.get(policy, {"label": policy})["label"], format_label(fmt, scaling))
    if usource not in ("-", ""):
        s += ", u=" + usource
    return s


def _variant_style(policy, fmt, k):
    st = dict(POLICY_STYLE.get(policy, dict(color="k", ls="-", marker="o")))
    if fmt != "fp32":  # same policy, other format: keep the line style, vary the colour
        st["color"] = FORMAT_COLORS[(k + 2) % len(FORMAT_COLORS)]
    return st


def _ratio_axis(ax, label):
    """A speedup axis: log base 2 where the plotted ratios span more than 8x, else linear from 0."""
    ys = np.concatenate([ln.get_ydata() for ln in ax.get_lines() if len(ln.get_ydata())] or [np.ones(1)])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size and ys.max() / ys.min() > 8:
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: "%.3g×" % v))
        ax.set_ylabel(label + " (×, log scale)")
    else:
        ax.set_ylim(0, max(1.2, float(ys.max()) * 1.1) if ys.size else 1.2)
        ax.set_ylabel(label + " (×)")


def _pick(values, preferred):
    vals = sorted(set(int(v) for v in values))
    if not vals:
        return None
    return preferred if preferred in vals else vals[len(vals) // 2]


def plot_speedup_vs_batch(bench, out_png, L=16):
    b = bench if isinstance(bench, Bench) else Bench(bench)
    dec = b.mask(kernel="decode")
    if not dec.any():
        raise ValueError("%s: no decode rows" % b.path)
    L = _pick(b.rows["L"][dec], L)
    archs = [a for a in ("gdn", "mamba2") if (dec & b.mask(arch=a)).any()]
    fig, axes = plt.subplots(2, len(archs), figsize=(max(9.0, 6.8 * len(archs)), 9.0), squeeze=False)
    shape = {"gdn": "GDN, Qwen3.5 shape (32 heads of 128×128)", "mamba2": "Mamba-2, Nemotron-H shape (128 heads of 64×128)"}
    for j, arch in enumerate(archs):
        m = dec & b.mask(arch=arch, L=L)
        for k, (pol, fmt, sc, us) in enumerate(b.variants(m)):
            mm = m & b.mask(policy=pol, format=fmt, scaling=sc, usource=us)
            order = np.argsort(b.rows["B"][mm])
            B = b.rows["B"][mm][order]
            st = _variant_style(pol, fmt, k)
            lab = variant_label(pol, fmt, sc, us)
            axes[0][j].plot(B, b.rows["speedup_vs_conv"][mm][order], color=st["color"], ls=st["ls"],
                            marker=st["marker"], lw=2, ms=5, label=lab)
            axes[1][j].plot(B, b.rows["gbps"][mm][order], color=st["color"], ls=st["ls"], marker=st["marker"], lw=2,
                            ms=5, label=lab)
        axes[0][j].axhline(1.0, color="k", lw=1, ls=":", label="= conventional FP32")
        _ratio_axis(axes[0][j], "speedup over conventional FP32 decode")
        axes[0][j].set_title("%s\ndecode step, L=%d" % (shape.get(arch, arch), L), fontsize=11)
        axes[0][j].legend(fontsize=7.5)
        if b.roofline > 0:
            axes[1][j].axhline(b.roofline, color="k", lw=1.2, ls="--", label="copy roofline %.0f GB/s" % b.roofline)
        axes[1][j].set_ylabel("modelled bytes / median time (GB/s)")
        axes[1][j].set_title("achieved bandwidth (byte model of DESIGN §6)", fontsize=10)
        for ax in (axes[0][j], axes[1][j]):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("batch size B (sequences, log scale)")
            ax.grid(True, which="major", alpha=0.3)
        axes[1][j].set_ylim(bottom=0)
        axes[1][j].legend(fontsize=7.5, loc="best")
    fig.suptitle("Decode-kernel speedup vs batch (graph-captured medians) — %s\n%s" % (b.name, b.source()), fontsize=11)
    _finish(fig)
    _save(fig, out_png)
    return out_png


def plot_verify_latency_vs_T(bench, out_png, B=256, L=16):
    b = bench if isinstance(bench, Bench) else Bench(bench)
    ver = b.mask(kernel="verify")
    if not ver.any():
        raise ValueError("%s: no verify rows" % b.path)
    B = _pick(b.rows["B"][ver], B)
    L = _pick(b.rows["L"][ver & b.mask(B=B)], L)
    archs = [a for a in ("gdn", "mamba2") if (ver & b.mask(arch=a)).any()]
    fig, axes = plt.subplots(2, len(archs), figsize=(max(9.0, 6.6 * len(archs)), 8.6), squeeze=False)
    for j, arch in enumerate(archs):
        m = ver & b.mask(arch=arch, B=B, L=L)
        conv_step = b.mask(kernel="decode", arch=arch, B=B, L=L, policy="conventional_shared", format="fp32")
        for k, (pol, fmt, sc, us) in enumerate(b.variants(m)):
            mm = m & b.mask(policy=pol, format=fmt, scaling=sc, usource=us)
            order = np.argsort(b.rows["T"][mm])
            T = b.rows["T"][mm][order]
            st = _variant_style(pol, fmt, k)
            lab = variant_label(pol, fmt, sc, us) + (" (store-all)" if pol == "conventional_shared" else "")
            axes[0][j].plot(T, b.rows["median_us"][mm][order], color=st["color"], ls=st["ls"], marker=st["marker"],
                            lw=2, ms=6, label=lab)
            axes[1][j].plot(T, b.rows["verify_vs_conv_step"][mm][order], color=st["color"], ls=st["ls"],
                            marker=st["marker"], lw=2, ms=6, label=lab)
        if conv_step.any():
            t = float(np.median(b.rows["median_us"][conv_step]))
            axes[0][j].axhline(t, color="k", ls=":", lw=1.2, label="conventional FP32 decode step (%.0f µs)" % t)
        axes[1][j].axhline(1.0, color="k", ls=":", lw=1.2, label="= one conventional decode step")
        axes[0][j].set_ylabel("verify latency, median (µs)")
        axes[1][j].set_ylabel("verify time / conventional FP32 step (×)")
        axes[0][j].set_title("%s: chain verify of T drafts, B=%d, L=%d" % (arch.upper() if arch == "gdn" else "Mamba-2",
                                                                         B, L), fontsize=11)
        for ax in (axes[0][j], axes[1][j]):
            ax.set_xlabel("draft tokens T")
            ax.set_xticks(sorted(set(int(t) for t in b.rows["T"][m])) or [1])
            ax.grid(True, alpha=0.3)
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=8)
    fig.suptitle("Speculative verify latency vs T — %s\n%s" % (b.name, b.source()), fontsize=11)
    _finish(fig)
    _save(fig, out_png)
    return out_png


# --------------------------------------------------------------------------------------------------------------

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


def plot_state_schemes(results, out_png):
    """Study 7 (notebooks/state_schemes_plots.py, imported here so that the command line reaches it)."""
    import state_schemes_plots
    return state_schemes_plots.plot_state_schemes(results, out_png)


FIGURES = {
    "kl-vs-length": (plot_kl_vs_length, "results.h5 of replayssm sweep"),
    "drift-vs-length": (plot_drift_vs_length, "results.h5 of replayssm sweep"),
    "flush-interval": (plot_flush_interval, "results of replayssm sweep --config experiments/flush_interval.ini"),
    "gdn-usource": (plot_gdn_usource, "results of replayssm sweep --config experiments/gdn_usource.ini"),
    "state-schemes": (plot_state_schemes, "results of replayssm sweep --config experiments/state_schemes.ini"),
    "speedup-vs-batch": (plot_speedup_vs_batch, "bench.h5 of replayssm bench"),
    "verify-latency-vs-T": (plot_verify_latency_vs_T, "bench.h5 of replayssm bench"),
}


def main(argv):
    if len(argv) != 4 or argv[1] not in FIGURES:
        sys.stderr.write("usage: %s FIGURE INPUT.h5 OUTPUT.png\nfigures:\n" % os.path.basename(argv[0]))
        for k, (_, what) in FIGURES.items():
            sys.stderr.write("  %-20s %s\n" % (k, what))
        return 2
    fig, inp, out = argv[1:]
    if fig in ("speedup-vs-batch", "verify-latency-vs-T"):
        inp = bench_paths(inp)  # a file, a folder of bench*.h5 or a comma list
        if not inp:
            sys.stderr.write("%s: %s: no bench file\n" % (fig, argv[2]))
            return 1
    elif not os.path.exists(inp):
        sys.stderr.write("%s: no such file\n" % inp)
        return 1
    try:
        FIGURES[fig][0](inp, out)
    except (OSError, KeyError, ValueError, IndexError) as e:
        sys.stderr.write("%s: %s: %s\n" % (fig, inp, e))
        return 1
    print("%s: wrote %s" % (fig, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
