"""Accuracy figures drawn from `replayssm sweep` results: output KL vs length (study 1), state and output drift
vs length (study 2), flush interval L with its modelled traffic (study 5) and the GDN u-source (study 6).
"""
import numpy as np

from replayssm_plots_common import (FORMAT_COLORS, FP32_STYLE, MODEL_MARKERS, POLICY_STYLE, USOURCE_STYLE, Sweep,
    _finish, _log2_length_axis, _positive, _save, binned_mean, format_label, plt)
from replayssm_plots_bench import Bench, _pick, _ratio_axis, variant_label


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
