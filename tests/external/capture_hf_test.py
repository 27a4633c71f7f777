#!/usr/bin/env python3
"""datasets/capture_hf.py end to end on tiny random-initialised configs of the real `qwen3_5` and `nemotron_h`
architectures, where torch and transformers are importable by $REPLAYSSM_HF_PYTHON (default: python3 on PATH);
otherwise it prints why and exits 77 (CTest SKIP, label `hf`). The driver itself runs under Debian's python3.

Checks: capture -> `replayssm reference` within the derived FP32 bound (capture_bound.py) at lengths other than the
fixtures'; `--layers` picks layers and refuses a non-SSM one; a rerun of the fixtures' command reproduces the
committed fixtures (same transformers version only); the shipped example (experiments/external/torch_gdn_external.py)
passes `validate --external` and its corrupted copy fails; `sweep --activations` runs on the fresh capture."""
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
CAPTURE = os.path.join(SRC, "datasets", "capture_hf.py")
EXAMPLE = os.path.join(SRC, "experiments", "external", "torch_gdn_external.py")
FIX = os.path.join(SRC, "datasets", "external")
CLI = os.environ.get("REPLAYSSM_CLI") or sys.argv[1]
PY = os.environ.get("REPLAYSSM_HF_PYTHON") or shutil.which("python3") or "python3"



def sh(*args):
    return subprocess.run([*map(str, args)], capture_output=True, text=True)


probe = sh(PY, "-c", "import torch, transformers, h5py\n"
                     "from transformers.models.qwen3_5 import modeling_qwen3_5\n"
                     "from transformers.models.nemotron_h import modeling_nemotron_h\n"
                     "print(torch.__version__, transformers.__version__)")
if probe.returncode != 0:
    last = (probe.stderr.strip().splitlines() or ["not found"])[-1]
    print(f"SKIP: torch + transformers (>= 5, with qwen3_5 and nemotron_h) are not importable by {PY} ({last}); "
          "set REPLAYSSM_HF_PYTHON to a python that has them")
    sys.exit(77)
torch_v, tf_v = probe.stdout.split()
print(f"capture_hf: {PY}: torch {torch_v}, transformers {tf_v}")

with tempfile.TemporaryDirectory() as tmp:
    dumps = {}
    # lengths other than the fixtures': GDN 96 = one full 64-chunk + a padded one; Mamba-2 40 = 2.5 chunks of 16
    for tiny, T in (("qwen3_5", 96), ("nemotron_h", 40)):
        out = os.path.join(tmp, f"{tiny}.h5")
        r = sh(PY, CAPTURE, "--tiny", tiny, "--tokens", T, "--offset", 1000, "--seed", 3, "--out", out)
        check(r.returncode == 0 and os.path.exists(out), f"capture {tiny}: {r.returncode}\n{r.stderr[-2000:]}")
        if r.returncode:
            continue
        dumps[tiny] = out
        with h5py.File(out, "r") as f:
            check(sorted(f["layers"], key=int) == ["0", "2"], f"{tiny}: SSM layers 0 and 2 (1 is attention)")
            check(f.attrs["arch"] == ("gdn" if tiny == "qwen3_5" else "mamba2"), f"{tiny}: arch attr")
            check(f["tokens"].shape == (T,), f"{tiny}: /tokens")
            with open(os.path.join(SRC, "datasets", "pg19", "test", "10146.txt"), "rb") as t:
                t.seek(1000)
                check(list(f["tokens"][...]) == list(t.read(T)), f"{tiny}: token ids are the text's bytes")
        ref = os.path.join(tmp, f"{tiny}.ref.h5")
        r = sh(CLI, "reference", "--in", out, "--out", ref)
        check(r.returncode == 0, f"reference of the {tiny} capture: {r.stderr}")
        rows = check_capture(out, ref)
        worst = max(rows, key=lambda x: x[3] / x[4])
        print(f"{tiny}: captured vs FP64 reference: worst rel-RMS {worst[3]:.2e} (layer {worst[0]} head {worst[1]} "
              f"{worst[2]}), bound {worst[4]:.2e}")
        for layer, head, field, err, bound in rows:
            check(err <= bound, f"{tiny}: layer {layer} head {head} {field}: rel-RMS {err:.3e} > bound {bound:.3e}")
        r = sh(CLI, "sweep", "--activations", out, "--out", os.path.join(tmp, f"{tiny}.sweep.h5"), "--formats",
               "fp32,nvfp4", "--policies", "conventional-shared,replay-split", "--backend", "emulated", "--quiet")
        check(r.returncode == 0, f"sweep --activations on the {tiny} capture: {r.stderr}")

    # --layers: one layer only; a non-SSM layer is refused
    one = os.path.join(tmp, "one.h5")
    r = sh(PY, CAPTURE, "--tiny", "nemotron_h", "--tokens", 16, "--layers", "2", "--out", one)
    with h5py.File(one, "r") if r.returncode == 0 else open(os.devnull) as f:
        check(r.returncode == 0 and list(f["layers"]) == ["2"], f"--layers 2: {r.stderr[-1000:]}")
    r = sh(PY, CAPTURE, "--tiny", "nemotron_h", "--tokens", 16, "--layers", "1", "--out", os.path.join(tmp, "x.h5"))
    check(r.returncode != 0 and "SSM layers" in r.stderr and not os.path.exists(os.path.join(tmp, "x.h5")),
          f"--layers 1 (attention) must be refused: {r.returncode} {r.stderr[-500:]}")

    # the fixtures' own command reproduces them (values, not provenance) with the transformers they were made with
    for tiny, name, T in (("qwen3_5", "qwen3_5_tiny.h5", 128), ("nemotron_h", "nemotron_h_tiny.h5", 64)):
        with h5py.File(os.path.join(FIX, name), "r") as f:
            made_with = f["meta"].attrs["transformers"]
        if made_with != tf_v:
            print(f"note: {name} was made with transformers {made_with}, this is {tf_v}: reproduction not checked")
            continue
        again = os.path.join(tmp, "again_" + name)
        r = sh(PY, CAPTURE, "--tiny", tiny, "--offset", 32768, "--tokens", T, "--out", again)
        with h5py.File(os.path.join(FIX, name), "r") as a, h5py.File(again, "r") as b:
            for lname in a["layers"]:
                for field in a["layers"][lname]:
                    x, y = a["layers"][lname][field][...], b["layers"][lname][field][...]
                    # another CPU / BLAS rounds differently and a random-init model amplifies it layer by layer:
                    # equal to FP32 noise in relative RMS (a wrong capture differs at O(1)), not element by element
                    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
                    rel = np.linalg.norm(x - y) / max(np.linalg.norm(x), 1e-300)
                    check(x.shape == y.shape and rel <= 1e-4,
                          f"{name}: /layers/{lname}/{field} not reproduced (rel-RMS {rel:.2e} > 1e-4)")

    # the shipped example: transformers' torch recurrence as the outside kernel
    if "qwen3_5" in dumps:
        theirs, bad = os.path.join(tmp, "theirs.h5"), os.path.join(tmp, "theirs_bad.h5")
        r = sh(PY, EXAMPLE, "--in", dumps["qwen3_5"], "--out", theirs, "--corrupt", bad)
        check(r.returncode == 0, f"example: {r.stderr[-2000:]}")
        r = sh(CLI, "validate", "--external", theirs, "--activations", dumps["qwen3_5"])
        print(r.stdout)
        check(r.returncode == 0, f"torch recurrence must pass validate --external: {r.returncode}")
        r = sh(CLI, "validate", "--external", bad, "--activations", dumps["qwen3_5"])
        check(r.returncode == 1, f"the corrupted copy must fail with exit 1: {r.returncode}\n{r.stdout}")

finish("capture_hf")
