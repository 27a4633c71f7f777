#!/usr/bin/python3
"""Tree speculative verification through the model (study 8): the output KL of the accepted path and of the rejected
branches against length, per model, format and policy. Drawn from the results of
`replayssm sweep --config experiments/tree_verify.ini` (schema: datasets/README.md, "A tree sweep").

    /usr/bin/python3 notebooks/replayssm_plots.py tree-verify tree_verify.h5 tree_verify.png

The accepted path covers every position once (its curve is comparable with a chain sweep's KL); a rejected branch is
binned at the position of the on-path node of its depth, so both curves share the context length on the x axis.
"""
import h5py
import numpy as np
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

import replayssm_plots as rp


def read_branches(path):
    """{run id: (branch_kl_binned [bins, 2] (mean, max), branch_flip_rate_binned [bins], branch_kl [N])}."""
    out = {}
    with h5py.File(path, "r") as f:
        for rid, g in f["runs"].items():
            if "branch_kl_binned" not in g:
                raise ValueError("%s: run %s has no branch_kl_binned (not a tree sweep's results)" % (path, rid))
            out[rid] = (np.asarray(g["branch_kl_binned"][...]), np.asarray(g["branch_flip_rate_binned"][...]),
                        np.asarray(g["branch_kl"][...]))
    return out


def summary_rows(sw, branches):
    """One row per run: id, mean KL of the accepted path over every position, mean KL over every rejected branch,
    their ratio, and the branches' token-flip rate at its worst bin."""
    rows = []
    for r in sorted(sw.runs, key=lambda r: (r["model"], r["policy"], r["format"])):
        _, flips, bkl = branches[r["id"]]
        path_mean = float(np.nanmean(r["kl"]))
        branch_mean = float(np.nanmean(bkl)) if bkl.size else float("nan")
        rows.append((r["id"], path_mean, branch_mean, branch_mean / path_mean if path_mean > 0 else float("nan"),
                     float(np.nanmax(flips)) if flips.size else float("nan")))
    return rows


def _positive(y):
    """A log axis draws positive values only: zeros (an exact bin) and NaN become gaps."""
    y = np.asarray(y, dtype=float)
    return np.where(np.isfinite(y) & (y > 0), y, np.nan)


def plot_tree_verify(results, out_png):
    path = results.path if isinstance(results, rp.Sweep) else results
    sw = results if isinstance(results, rp.Sweep) else rp.Sweep(results)
    branches = read_branches(path)
    models = sw.models()
    policies = [p for p in ("conventional_shared", "replay_shared", "replay_split") if sw.select(policy=p)]
    fig, axes = plt.subplots(len(models), len(policies), figsize=(5.4 * len(policies), 3.9 * len(models)),
                             squeeze=False, sharex=True, sharey=True)
    mids = np.sqrt(sw.bins[:-1].astype(float) * sw.bins[1:].astype(float))
    fmts = sw.formats()
    color = {f: rp.FORMAT_COLORS[i % len(rp.FORMAT_COLORS)] for i, f in enumerate(fmts)}
    for i, model in enumerate(models):
        for j, policy in enumerate(policies):
            ax = axes[i][j]
            for r in sw.select(model=model, policy=policy):
                c = color[(r["format"], r["scaling"])]
                ax.plot(mids, _positive(r["kl_binned"][:, 0]), color=c, ls="-", marker="o", ms=4, lw=1.8)
                ax.plot(mids, _positive(branches[r["id"]][0][:, 0]), color=c, ls="--", marker="x", ms=4, lw=1.0,
                        alpha=0.7)
            ax.set_yscale("log")
            rp._log2_length_axis(ax, float(sw.bins[-1]))
            ax.set_title("%s, %s" % (model, rp.POLICY_STYLE.get(policy, {}).get("label", policy)), fontsize=10)
            if i == len(models) - 1:
                ax.set_xlabel("position (bytes of context)")
            if j == 0:
                ax.set_ylabel("mean KL per bin, nats")
    handles = [Line2D([], [], color=color[f], lw=2.2, label=rp.format_label(*f)) for f in fmts]
    handles += [Line2D([], [], color="0.3", lw=1.8, marker="o", label="accepted path"),
                Line2D([], [], color="0.3", lw=1.0, ls="--", marker="x", alpha=0.7, label="rejected branches")]
    axes[0][-1].legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.suptitle("Tree %s through the model, KL(FP64 || mode): accepted path vs rejected branches\n%s"
                 % (sw.runs[0].get("tree", "?"), sw.subtitle()), fontsize=11)
    rp._finish(fig)
    rp._save(fig, out_png)
    return out_png
