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
    tree-verify         results.h5 of `replayssm sweep --config experiments/tree_verify.ini` (study 8)
    speedup-vs-batch    bench.h5 of `replayssm bench` (study 3)
    verify-latency-vs-T bench.h5 of `replayssm bench` (study 4)

Schemas: datasets/README.md, section "Sweep results"; src/cli/bench_command.cpp (write_h5) for bench.h5.
"""
import os
import sys

# The figures live in modules by family (common helpers, sweep accuracy figures, bench speed figures); every name
# is importable from here, which is what the notebooks and state_schemes_plots.py use (`import replayssm_plots`).
from replayssm_plots_common import (POLICY_STYLE, FP32_STYLE, USOURCE_STYLE, FORMAT_COLORS, MODEL_MARKERS, TINY,
    find_sample, _s, format_label, Sweep, binned_mean, _positive, _log2_length_axis, _finish, _save, h5py, np,
    matplotlib, plt)  # noqa: F401
from replayssm_plots_sweep import (plot_kl_vs_length, plot_drift_vs_length, element_bits, modelled_bytes_per_step,
    plot_flush_interval, plot_gdn_usource)  # noqa: F401
from replayssm_plots_bench import (bench_paths, Bench, variant_label, _variant_style, _ratio_axis, _pick,
    plot_speedup_vs_batch, plot_verify_latency_vs_T)  # noqa: F401


def plot_state_schemes(results, out_png):
    """Study 7 (notebooks/state_schemes_plots.py, imported here so that the command line reaches it)."""
    import state_schemes_plots
    return state_schemes_plots.plot_state_schemes(results, out_png)


def plot_tree_verify(results, out_png):
    """Study 8 (notebooks/tree_verify_plots.py)."""
    import tree_verify_plots
    return tree_verify_plots.plot_tree_verify(results, out_png)


FIGURES = {
    "kl-vs-length": (plot_kl_vs_length, "results.h5 of replayssm sweep"),
    "drift-vs-length": (plot_drift_vs_length, "results.h5 of replayssm sweep"),
    "flush-interval": (plot_flush_interval, "results of replayssm sweep --config experiments/flush_interval.ini"),
    "gdn-usource": (plot_gdn_usource, "results of replayssm sweep --config experiments/gdn_usource.ini"),
    "state-schemes": (plot_state_schemes, "results of replayssm sweep --config experiments/state_schemes.ini"),
    "tree-verify": (plot_tree_verify, "results of replayssm sweep --config experiments/tree_verify.ini"),
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
