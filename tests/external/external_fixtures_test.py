#!/usr/bin/env python3
"""Real-architecture captures and outside kernels, on the committed fixtures (no torch needed; CI runs this).

datasets/external/ holds dumps captured by datasets/capture_hf.py from tiny random-initialised configs of the real
`qwen3_5` and `nemotron_h` architectures (transformers 5.17.0 torch paths) and the outputs of transformers' own
`torch_recurrent_gated_delta_rule` on the Qwen3.5 dump. Checked here:
  - the captured outputs against `replayssm reference` within the derived FP32 bound (capture_bound.py);
  - `validate --external`: the torch recurrence passes; a corrupted copy, a NaN, a bad final state and a tighter
    --rtol fail with exit 1; bad, missing or mismatched inputs exit 2 with one line naming the file and the field;
  - `validate --external --mode`: experiments/external/numpy_stored_state_gdn.py (a numpy kernel with a BF16/FP16
    state) passes when it stores where the mode stores and fails with the quantisation misplaced or missing;
  - `sweep --activations` on both dumps: results schema (drift only, no KL/NLL/top-1 datasets), determinism
    (a rerun with another --jobs gives identical datasets), FP32 and replay-split at the FP32 level, refused options.
Run with Debian's /usr/bin/python3 (numpy + h5py); the CLI comes from $REPLAYSSM_CLI or argv[1]."""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from capture_bound import check_capture  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pycheck import check, finish  # noqa: E402  (tests/pycheck.py)

SRC = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(SRC, "datasets", "external")
QWEN = os.path.join(FIX, "qwen3_5_tiny.h5")
NEMO = os.path.join(FIX, "nemotron_h_tiny.h5")
THEIRS = os.path.join(FIX, "qwen3_5_tiny.torch_recurrent.h5")
CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]



def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)


def copy_with(tmp, src, name, edit):
    path = os.path.join(tmp, name)
    shutil.copyfile(src, path)
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


def expect_bad(r, needles, what):
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2, f"{what}: exit {r.returncode}, expected 2 ({r.stderr.strip()})")
    check(len(lines) == 1, f"{what}: expected one stderr line, got {lines}")
    for n in needles:
        check(n in r.stderr, f"{what}: error should name '{n}': {r.stderr.strip()}")


def capture_vs_reference(tmp):
    for dump in (QWEN, NEMO):
        ref = os.path.join(tmp, "ref_" + os.path.basename(dump))
        r = run("reference", "--in", dump, "--out", ref)
        check(r.returncode == 0, f"reference {dump}: {r.stderr}")
        rows = check_capture(dump, ref)
        check(len(rows) > 0, f"{dump}: no captured outputs")
        worst = max(rows, key=lambda x: x[3] / x[4])
        print(f"{os.path.basename(dump)}: captured vs FP64 reference: worst rel-RMS {worst[3]:.2e} "
              f"(layer {worst[0]} head {worst[1]} {worst[2]}), bound there {worst[4]:.2e}, "
              f"max ratio {worst[3] / worst[4]:.3f}")
        for layer, head, field, err, bound in rows:
            check(np.isfinite(err) and err <= bound,
                  f"{dump}: layer {layer} head {head} {field}: rel-RMS {err:.3e} > bound {bound:.3e}")
        # the same check through the CLI: the capture itself as the outside kernel, at the loosest row's bound
        r = run("validate", "--external", dump, "--activations", dump, "--rtol", max(b for *_, b in rows))
        check(r.returncode == 0, f"validate --external (capture as theirs) {dump}: {r.returncode}\n{r.stdout}")


def validate_external(tmp):
    r = run("validate", "--external", THEIRS, "--activations", QWEN)
    print(r.stdout)
    check(r.returncode == 0, f"torch recurrence should pass: exit {r.returncode}\n{r.stdout}{r.stderr}")
    rows = [ln for ln in r.stdout.splitlines() if ln.rstrip().endswith(("PASS", "FAIL"))]
    check(len(rows) == 4 and all(ln.endswith("PASS") for ln in rows), f"expected 4 PASS rows: {rows}")
    check("rel-RMS <= 1.0e-04" in r.stdout, "the default bound 1e-4 should be printed")

    def scale_head(f):  # a 1e-3 relative error on half of one head: rel-RMS ~7e-4 > 1e-4
        o = f["layers/0/o"]
        o[64:, 0, :] = o[64:, 0, :] * np.float32(1.001)
    bad = copy_with(tmp, THEIRS, "corrupt.h5", scale_head)
    r = run("validate", "--external", bad, "--activations", QWEN)
    check(r.returncode == 1, f"corrupted copy should fail with exit 1, got {r.returncode}\n{r.stdout}{r.stderr}")
    fails = [ln.split() for ln in r.stdout.splitlines() if ln.rstrip().endswith("FAIL")]
    check(len(fails) == 1 and fails[0][:2] == ["0", "0"], f"exactly layer 0 head 0 should fail: {fails}")

    def nan_one(f):
        o = f["layers/2/o"]
        a = o[...]
        a[100, 1, 3] = np.nan
        o[...] = a
    r = run("validate", "--external", copy_with(tmp, THEIRS, "nan.h5", nan_one), "--activations", QWEN)
    check(r.returncode == 1 and "non-finite" in r.stdout, f"one NaN must fail (exit 1): {r.returncode}\n{r.stdout}")

    def bad_state(f):
        s = f["layers/2/final_state"]
        s[...] = s[...].transpose(0, 2, 1)  # FLA's [K, V] layout handed over untransposed
    r = run("validate", "--external", copy_with(tmp, THEIRS, "state.h5", bad_state), "--activations", QWEN)
    check(r.returncode == 1, f"a transposed final_state must fail: {r.returncode}\n{r.stdout}")

    r = run("validate", "--external", THEIRS, "--activations", QWEN, "--rtol", "1e-9")
    check(r.returncode == 1, f"--rtol 1e-9 is below FP32 rounding: expected exit 1, got {r.returncode}")

    # bad, missing and mismatched inputs: exit 2, one line naming the file and the field
    def drop_layer(f):
        del f["layers/2"]
    p = copy_with(tmp, THEIRS, "nolayer.h5", drop_layer)
    expect_bad(run("validate", "--external", p, "--activations", QWEN), [p, "/layers/2/o"], "missing layer")

    def short_o(f):
        a = f["layers/0/o"][:-1]
        del f["layers/0/o"]
        f["layers/0/o"] = a
    p = copy_with(tmp, THEIRS, "short.h5", short_o)
    expect_bad(run("validate", "--external", p, "--activations", QWEN), [p, "/layers/0/o"], "T mismatch")

    def wrong_state(f):
        a = f["layers/0/final_state"][:, :, :8]
        del f["layers/0/final_state"]
        f["layers/0/final_state"] = a
    p = copy_with(tmp, THEIRS, "wstate.h5", wrong_state)
    expect_bad(run("validate", "--external", p, "--activations", QWEN), [p, "/layers/0/final_state"],
               "final_state shape")
    # theirs for the other architecture: head count/dims differ
    expect_bad(run("validate", "--external", THEIRS, "--activations", NEMO), [THEIRS, "/layers/0/o"], "wrong arch")
    missing = os.path.join(tmp, "missing.h5")
    expect_bad(run("validate", "--external", missing, "--activations", QWEN), [missing], "missing file")
    text = os.path.join(tmp, "not_hdf5.h5")
    with open(text, "w") as f:
        f.write("not an HDF5 file\n")
    expect_bad(run("validate", "--external", text, "--activations", QWEN), [text], "not HDF5")

    def drop_beta(f):
        del f["layers/0/beta"]
    p = copy_with(tmp, QWEN, "nobeta.h5", drop_beta)
    expect_bad(run("validate", "--external", THEIRS, "--activations", p), [p, "/layers/0/beta"], "dump field")
    for bad_rtol in ("0", "-1e-4", "nan", "inf"):
        expect_bad(run("validate", "--external", THEIRS, "--activations", QWEN, "--rtol", bad_rtol), ["--rtol"],
                   f"--rtol {bad_rtol}")
    expect_bad(run("validate", "--external", THEIRS), ["--activations"], "--external without --activations")


NUMPY_KERNEL = os.path.join(SRC, "experiments", "external", "numpy_stored_state_gdn.py")


def mode_rows(stdout):
    """(layer, head, result) of the per-row lines of `validate --external --mode`."""
    rows = []
    for ln in stdout.splitlines():
        f = ln.split()
        if len(f) >= 6 and f[5] in ("PASS", "FAIL"):
            rows.append((f[0], f[1], f[5]))
    return rows


def validate_external_mode(tmp):
    """The worked example of experiments/external/: an independent numpy kernel with a BF16 (FP16) state cache passes
    `--mode conventional_shared/bf16` when it stores where the mode stores, and fails when the output reads the
    re-quantised state or when it never quantises; the torch FP32 recurrence passes the fp32 mode."""
    for fmt in ("bf16", "fp16"):
        for placement, want in (("right", 0), ("after", 1), ("none", 1)):
            out = os.path.join(tmp, f"np_{fmt}_{placement}.h5")
            g = subprocess.run([sys.executable, NUMPY_KERNEL, "--in", QWEN, "--out", out, "--format", fmt,
                                "--placement", placement], capture_output=True, text=True)
            check(g.returncode == 0, f"numpy kernel {fmt} {placement}: {g.stderr}")
            r = run("validate", "--external", out, "--activations", QWEN, "--mode", f"conventional_shared/{fmt}")
            rows = mode_rows(r.stdout)
            what = f"numpy {fmt} placement {placement}"
            check(r.returncode == want, f"{what}: exit {r.returncode}, expected {want}\n{r.stdout}{r.stderr}")
            check(len(rows) == 4, f"{what}: expected 4 rows: {rows}")
            if want == 0:
                check(all(x[2] == "PASS" for x in rows), f"{what}: every row should pass: {rows}")
            else:  # every head where the mode's error stands out must fail (the rows with separation >= 4)
                sep_rows = [ln.split() for ln in r.stdout.splitlines() if len(ln.split()) == 10 and ln.split()[5] in
                            ("PASS", "FAIL") and float(ln.split()[9]) >= 4.0]
                check(sep_rows and all(x[5] == "FAIL" for x in sep_rows), f"{what}: separated rows should fail:\n"
                      f"{r.stdout}")
            if placement == "right":
                print(r.stdout)
    r = run("validate", "--external", THEIRS, "--activations", QWEN, "--mode", "conventional_shared/fp32")
    check(r.returncode == 0 and len(mode_rows(r.stdout)) == 4, f"torch FP32 under --mode fp32: {r.stdout}{r.stderr}")
    r = run("validate", "--external", THEIRS, "--activations", QWEN, "--mode", "replay_shared/fp8_e4m3/row")
    check(r.returncode == 1, f"torch FP32 claiming an FP8 state should fail: {r.stdout}")
    for bad in ("replay_shared", "nope/bf16", "replay_shared/bf16/row", "replay_shared/bf16/L=0",
                "conventional_shared/bf16/u=lp"):
        expect_bad(run("validate", "--external", THEIRS, "--activations", QWEN, "--mode", bad), ["--mode"],
                   f"--mode {bad}")
    expect_bad(run("validate", "--external", THEIRS, "--activations", NEMO, "--mode", "replay_split/bf16/u=lp"),
               ["--mode", "mamba2"], "u= on a Mamba-2 dump")
    expect_bad(run("validate", "--external", THEIRS, "--activations", QWEN, "--mode", "conventional_shared/bf16",
                   "--rtol", "1e-3"), ["--rtol", "--mode"], "--rtol with --mode")
    expect_bad(run("validate", "--mode", "conventional_shared/bf16"), ["--mode", "--external"],
               "--mode without --external")


def sweep_files(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[...]
            for k, v in obj.attrs.items():
                if k != "elapsed_s":
                    out[f"{name}@{k}"] = v
        f.visititems(visit)
    return out


def identical(a, b):
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        if x.dtype.kind == "O":  # string arrays: compare the strings, not the object pointers
            if x.shape != y.shape or x.tolist() != y.tolist():
                return False
        elif x.shape != y.shape or x.tobytes() != y.tobytes():  # floats bit for bit
            return False
    return True


def sweep_activations(tmp):
    opts = ["--formats", "fp32,bf16,fp8_e4m3:row,nvfp4", "--policies",
            "conventional-shared,replay-shared,replay-split", "--u-source", "hp,recompute", "--backend",
            "emulated", "--quiet"]
    for dump, T, layers in ((QWEN, 128, ["0", "2"]), (NEMO, 64, ["0", "2"])):
        out = os.path.join(tmp, "sweep_" + os.path.basename(dump))
        r = run("sweep", "--activations", dump, "--out", out, "--jobs", "2", *opts)
        check(r.returncode == 0, f"sweep --activations {dump}: exit {r.returncode}\n{r.stderr}")
        if r.returncode:
            continue
        check("no KL" in r.stdout and "no model head" in r.stdout, f"the output should say there is no KL: {r.stdout}")
        with h5py.File(out, "r") as f:
            plan = [p.decode() if isinstance(p, bytes) else p for p in f["config/plan"][...]]
            check(sorted(plan) == sorted(f["runs"]), "every planned run is in /runs")
            check(f.attrs["source"] == "activations" and "no kl" in f.attrs["metrics"], "root attrs source/metrics")
            check(f["config"].attrs["source"] == "activations", "/config@source")
            check("reference" not in f, "no /reference (no model)")
            edges = f["bins"][...]
            check(edges[0] == 1 and edges[-1] == T + 1, f"bins 1..T+1: {edges}")
            check([x.decode() if isinstance(x, bytes) else x for x in f["config/layers"][...]] == layers,
                  "/config/layers names the dump layers")
            for rid in plan:
                g = f["runs"][rid]
                check(not any(n in g for n in ("kl", "nll", "top1", "kl_binned")), f"{rid}: no KL/NLL/top-1 datasets")
                check("no kl" in g.attrs["metrics"], f"{rid}: metrics attr says no KL")
                for a in ("model", "text", "format", "scaling", "rounding", "policy", "L", "u_source", "mode",
                          "backend", "device", "diverged_at", "index"):
                    check(a in g.attrs, f"{rid}: attr {a}")
                od, sd, fs = g["output_drift"][...], g["state_drift"][...], g["flush_steps"][...]
                check(od.shape == (2, T), f"{rid}: output_drift shape {od.shape}")
                check(list(fs) == list(range(16, T + 1, 16)), f"{rid}: flush_steps {fs}")
                check(sd.shape == (2, len(fs)), f"{rid}: state_drift shape {sd.shape}")
                check(g["output_drift_binned"].shape == (2, len(edges) - 1, 4), f"{rid}: output_drift_binned")
                check(np.all(np.isfinite(od)) and np.all(np.isfinite(sd)), f"{rid}: finite drift")
                if g.attrs["format"] == "fp32":
                    check(od.max() < 1e-5 and sd.max() < 1e-5, f"{rid}: FP32 drift at the FP32 level ({od.max()})")
                if g.attrs["policy"] == "replay_split" and g.attrs["u_source"] in ("hp", "n/a", "recompute"):
                    # split keeps the recurrence in FP32: the stored format never re-enters the state
                    check(sd.max() < 1e-5, f"{rid}: replay-split state drift {sd.max():.2e} should stay FP32-level")
            conv = f["runs"][[p for p in plan if "conventional_shared.nvfp4" in p][0]]["output_drift"][...]
            fp32 = f["runs"][[p for p in plan if "conventional_shared.fp32" in p][0]]["output_drift"][...]
            check(conv.mean() > 100 * fp32.mean(), "nvfp4 conventional drifts far above fp32")
        again = os.path.join(tmp, "again_" + os.path.basename(dump))
        r = run("sweep", "--activations", dump, "--out", again, "--jobs", "1", *opts)
        check(r.returncode == 0 and identical(sweep_files(out), sweep_files(again)),
              f"{dump}: sweep --activations must be deterministic (rerun with --jobs 1 differs)")
    out = os.path.join(tmp, "short.h5")
    r = run("sweep", "--activations", QWEN, "--out", out, "--tokens", "32", "--formats", "fp32", "--policies",
            "replay-split", "--backend", "emulated", "--quiet")
    check(r.returncode == 0, f"--tokens 32: {r.stderr}")
    if r.returncode == 0:
        with h5py.File(out, "r") as f:
            check(all(f["runs"][k]["output_drift"].shape == (2, 32) for k in f["runs"]), "--tokens 32 limits T")
    base = ["sweep", "--activations", QWEN, "--out", os.path.join(tmp, "x.h5"), "--backend", "emulated"]
    expect_bad(run(*base, "--shard", "0/2"), ["--shard"], "--shard with --activations")
    expect_bad(run(*base, "--resume"), ["--resume"], "--resume with --activations")
    expect_bad(run(*base, "--model", os.path.join(SRC, "datasets", "models", "tiny_gdn.h5")), ["--model"],
               "--model with --activations")
    expect_bad(run(*base, "--tokens", "129"), ["--tokens", QWEN], "--tokens beyond the dump")
    p = copy_with(tmp, QWEN, "nan_dump.h5", lambda f: f["layers/2/v"].__setitem__((5, 0, 0), np.nan))
    expect_bad(run("sweep", "--activations", p, "--out", os.path.join(tmp, "y.h5"), "--backend", "emulated"),
               [p, "/layers/2/v"], "NaN input")
    check(not os.path.exists(os.path.join(tmp, "x.h5")) and not os.path.exists(os.path.join(tmp, "y.h5")),
          "no output file after a refused sweep")


with tempfile.TemporaryDirectory() as tmp:
    for fixture in (QWEN, NEMO, THEIRS):
        check(os.path.exists(fixture), f"fixture missing: {fixture}")
    capture_vs_reference(tmp)
    validate_external(tmp)
    validate_external_mode(tmp)
    sweep_activations(tmp)

finish("external_fixtures")
