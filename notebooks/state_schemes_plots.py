#!/usr/bin/python3
"""State schemes of the serving engines side by side: output KL and token-flip rate vs length, one curve per scheme
(format x scaling x rounding) with its bytes per state element in the legend. Drawn from the results of
`replayssm sweep --config experiments/state_schemes.ini` with the helpers of replayssm_plots.py.

    /usr/bin/python3 notebooks/replayssm_plots.py state-schemes state_schemes.h5 state_schemes.png

plot_capture_drift draws the same schemes on a captured activation dump (`replayssm sweep --activations`): output
drift against the FP64 shadow, layer by layer, since a dump has no model head and so no KL or flips.
"""
import h5py
import numpy as np
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

import replayssm_plots as rp

# Rounding is the minor axis of a scheme: one line style each; the format and scaling get the colour.
ROUNDING_STYLE = {"rne": dict(ls="-", marker="o"), "sr": dict(ls="--", marker="v"), "philox": dict(ls=":", marker="s")}
SCHEME_COLORS = ["0.35", "#1f77b4", "#aec7e8", "#17becf", "#2ca02c", "#98df8a", "#bcbd22", "#ff7f0e", "#9467bd",
                 "#d62728", "#8c564b", "#e377c2"]
POLICY_NAMES = {"conventional_shared": "conventional-shared", "replay_shared": "replay-shared",
                "replay_split": "replay-split"}


def flip_rate_binned(sw, r):
    """The run's token-flip rate per bin: the stored `flip_rate_binned`, or 1 - mean(top1) per bin for files
    without it."""
    if r.get("flip_rate_binned") is not None:
        return np.asarray(r["flip_rate_binned"], dtype=float)
    pos = np.arange(1, len(r["top1"]) + 1)
    return 1.0 - rp.binned_mean(np.asarray(r["top1"], dtype=float), pos, sw.bins)


def bytes_per_element(r):
    """Bytes per state element of the run's stored format (scales included), NaN where the file has none."""
    try:
        return float(r.get("bytes_per_element", "nan"))
    except ValueError:
        return float("nan")


def scheme_label(r):
    """'FP8 E4M3 (per column) · 1.03 B/elem': the colour's legend entry (the rounding is the line style's)."""
    b = bytes_per_element(r)
    return rp.format_label(r["format"], r["scaling"]) + (" · %.3g B/elem" % b if np.isfinite(b) else "")


def _legend(ax, entries, roundings):
    """One entry per scheme (colour) and one per rounding (line style): 26 curves stay readable."""
    handles = [Line2D([], [], color=c, lw=2.2, label=label) for label, c in entries]
    handles += [Line2D([], [], color="0.3", lw=1.6, label="rounding: " + rnd.upper(), **ROUNDING_STYLE[rnd])
                for rnd in ROUNDING_STYLE if rnd in roundings]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def plot_state_schemes(results, out_png):
    sw = results if isinstance(results, rp.Sweep) else rp.Sweep(results)
    panels = sorted({(r["model"], r["policy"]) for r in sw.runs})
    schemes = sw.formats()  # (format, scaling) in the listing order of the formats: one colour each in every panel
    x = sw.positions()
    fig, axes = plt.subplots(len(panels), 2, figsize=(15.5, 3.9 * len(panels) + 1.2), squeeze=False, sharex=True)
    for i, (model, policy) in enumerate(panels):
        ax_kl, ax_flip = axes[i]
        runs = sorted(sw.select(model=model, policy=policy),
                      key=lambda r: (schemes.index((r["format"], r["scaling"])), list(ROUNDING_STYLE).index(
                          r["rounding"]) if r["rounding"] in ROUNDING_STYLE else 9))
        entries, roundings = [], set()
        for r in runs:
            colour = SCHEME_COLORS[schemes.index((r["format"], r["scaling"])) % len(SCHEME_COLORS)]
            st = dict(color=colour, ms=3.5, lw=1.6, **ROUNDING_STYLE.get(r["rounding"], {}))
            ax_kl.plot(x, rp._positive(r["kl_binned"][:len(x), 0]), **st)
            ax_flip.plot(x, 100.0 * flip_rate_binned(sw, r)[:len(x)], **st)
            if (scheme_label(r), colour) not in entries:
                entries.append((scheme_label(r), colour))
            roundings.add(r["rounding"])
        ax_kl.set_yscale("log")
        ax_kl.axhline(1e-3, color="k", lw=0.8, alpha=0.6)
        ax_flip.axhline(0.5, color="k", lw=0.8, alpha=0.6)
        for ax in (ax_kl, ax_flip):
            rp._log2_length_axis(ax, x[-1])
            ax.set_title("%s · %s" % (model, POLICY_NAMES.get(policy, policy)), fontsize=11)
        ax_kl.set_ylabel("output KL(FP64 ‖ mode) (nats)\nbin mean; line: 1e-3 gate")
        ax_flip.set_ylabel("token-flip rate (%)\n1 - top-1 agreement; line: 0.5% gate")
        _legend(ax_flip, entries, roundings)
        if i == len(panels) - 1:
            ax_kl.set_xlabel("position in the text (bytes, log scale)")
            ax_flip.set_xlabel("position in the text (bytes, log scale)")
    fig.suptitle("Serving-engine state schemes: output KL and token flips vs length\n" + sw.subtitle(), fontsize=12)
    rp._finish(fig)
    rp._save(fig, out_png)
    return out_png


def plot_capture_drift(path, out_png, bytes_from=None):
    """Output drift vs position of every scheme on an activation-dump sweep (`sweep --activations`): the mean over
    layers of the per-position relative output error against the FP64 shadow. bytes_from: a model sweep (Sweep) whose
    runs give each (format, scaling) its bytes per element for the legend (the dump's head shape may differ: stated)."""
    with h5py.File(path, "r") as f:
        runs = []
        for k in f["runs"]:
            g = f["runs"][k]
            a = {n: rp._s(v) for n, v in g.attrs.items()}
            a["drift"] = np.asarray(g["output_drift"][()], dtype=float)
            runs.append(a)
        text = rp._s(f["config"].attrs.get("activations", "")) if "config" in f else ""
    order = []
    for r in runs:
        if (r["format"], r["scaling"]) not in order:
            order.append((r["format"], r["scaling"]))
    per_byte = {}
    if bytes_from is not None:
        for r in bytes_from.runs:
            per_byte.setdefault((r["format"], r["scaling"]), bytes_per_element(r))
    fig, ax = plt.subplots(1, 1, figsize=(12.5, 5.2))
    entries, roundings = [], set()
    for r in sorted(runs, key=lambda r: (order.index((r["format"], r["scaling"])), r["rounding"])):
        colour = SCHEME_COLORS[order.index((r["format"], r["scaling"])) % len(SCHEME_COLORS)]
        d = np.nanmean(r["drift"], axis=0)
        x = np.arange(1, len(d) + 1)
        ax.plot(x, np.where(d > 0, d, np.nan), color=colour, lw=1.4, ms=2.5, markevery=8,
                **ROUNDING_STYLE.get(r["rounding"], {}))
        b = per_byte.get((r["format"], r["scaling"]), float("nan"))
        label = rp.format_label(r["format"], r["scaling"]) + (" · %.3g B/elem" % b if np.isfinite(b) else "")
        if (label, colour) not in entries:
            entries.append((label, colour))
        roundings.add(r["rounding"])
    ax.set_yscale("log")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("position in the captured sequence (tokens, log scale)")
    ax.set_ylabel("output drift vs FP64 shadow\n(relative RMS, mean over layers)")
    model = runs[0].get("model", "") if runs else ""
    ax.set_title("%s capture: %d runs, %s" % (model, len(runs), POLICY_NAMES.get(runs[0]["policy"], "")
                                                  if runs else ""), fontsize=11)
    _legend(ax, entries, roundings)
    fig.suptitle("Serving-engine state schemes on a captured activation dump (no model head: drift, not KL)"
                 + ("\n" + text if text else "") + ("\nB/elem at the tiny models' head shape" if per_byte else ""),
                 fontsize=11)
    rp._finish(fig)
    rp._save(fig, out_png)
    return out_png
