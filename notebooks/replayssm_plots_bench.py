"""Speed figures drawn from `replayssm bench` HDF5 files: speedup vs batch (study 3) and speculative verify
latency vs the number of draft tokens T (study 4).
"""
import os

import h5py
import numpy as np

from replayssm_plots_common import (FORMAT_COLORS, POLICY_STYLE, _finish, _s, _save, find_sample, format_label,
    matplotlib, plt)


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
