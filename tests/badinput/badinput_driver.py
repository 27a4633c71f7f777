"""The bad-input driver shared by badinput.py and absurd.py: the `@case` registry, `Expect`, the helpers that build
inputs (through `replayssm synth` and h5py), and the runner that checks one case against the CLI's input contract.
Cases register themselves with `@case` when their module is imported; see badinput.py for the contract.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(SRC, "datasets", "models")
TEXT = os.path.join(SRC, "datasets", "pg19", "test", "10146.txt")
CLI = None

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class Expect:
    """What a case expects. `needles`: strings the one error line must contain (file and field/option)."""

    def __init__(self, argv, needles, code=2, out=None, ok_outputs=()):
        self.argv, self.needles, self.code, self.out, self.ok_outputs = argv, needles, code, out, ok_outputs


# ---------------------------------------------------------------------------------------------------------- helpers

def cli(*args, check=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, errors="replace")
    if check and r.returncode != 0:
        raise RuntimeError(f"setup command failed ({r.returncode}): {' '.join(map(str, args))}\n{r.stderr}")
    return r


def synth(tmp, arch="gdn", name="acts.h5", **kw):
    path = os.path.join(tmp, name)
    opts = {"tokens": 16, "heads": 2, "key-heads": 1, "groups": 1, "key-dim": 8, "value-dim": 8}
    opts.update({k.replace("_", "-"): v for k, v in kw.items()})
    cli("synth", "--arch", arch, "--out", path, *[x for k, v in opts.items() for x in ("--" + k, v)])
    return path


def replace_dataset(path, name, data, dtype=None):
    with h5py.File(path, "r+") as f:
        del f[name]
        f.create_dataset(name, data=np.asarray(data, dtype=dtype))


def copy_model(tmp, arch="gdn"):
    dst = os.path.join(tmp, f"tiny_{arch}.h5")
    shutil.copy(os.path.join(MODELS, f"tiny_{arch}.h5"), dst)
    return dst


def poke_weight(path, name, value):
    """Sets one element of a model tensor (in place, keeping dtype, shape and filters)."""
    with h5py.File(path, "r+") as f:
        d = f[name]
        a = d[...]
        a.flat[a.size // 2] = value
        d[...] = a


def text_file(tmp, data, name="text.txt"):
    p = os.path.join(tmp, name)
    with open(p, "wb") as fh:
        fh.write(data)
    return p


def out_in(tmp, name="out.h5"):
    return os.path.join(tmp, name)


# Small, fast sweep options (one model, 8 positions, one run).
def sweep_args(model, out, **over):
    o = {"--model": model, "--tokens": "8", "--offset": "0", "--formats": "fp32", "--policies": "conventional-shared",
         "--L": "4", "--backend": "emulated", "--jobs": "1", "--out": out}
    o.update({"--" + k.replace("_", "-"): v for k, v in over.items()})
    return ["sweep", "--quiet"] + [x for kv in o.items() for x in kv]


# ----------------------------------------------------------------------------------------------------- the driver

def snapshot(tmp):
    out = {}
    for root, dirs, files in os.walk(tmp):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), tmp) + "/"] = "dir"
        for n in files:
            p = os.path.join(root, n)
            if not os.path.isfile(p):  # a pipe or socket a case made: opening it would block
                out[os.path.relpath(p, tmp)] = "special"
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, tmp)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def run_case(name):
    errors = []
    with tempfile.TemporaryDirectory(prefix="badinput-") as tmp:
        e = CASES[name](tmp)
        before = snapshot(tmp)
        argv = [str(a) for a in e.argv]
        r = subprocess.run([CLI, *argv], capture_output=True, text=True, errors="replace", timeout=300)
        after = snapshot(tmp)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        print("$ replayssm", " ".join(argv).replace(tmp, "$TMP"))
        print(f"exit {r.returncode}; stderr:", r.stderr.strip().replace(tmp, "$TMP") or "(empty)")
        if r.returncode < 0:
            errors.append(f"killed by signal {-r.returncode}")
        if r.returncode != e.code:
            errors.append(f"exit code {r.returncode}, expected {e.code}")
        if "internal error" in r.stderr or "AddressSanitizer" in r.stderr or "runtime error" in r.stderr:
            errors.append("internal error / sanitizer report on stderr")
        if e.code != 0:
            if len(lines) != 1:
                errors.append(f"expected exactly one line on stderr, got {len(lines)}")
            for needle in e.needles:
                if needle not in r.stderr:
                    errors.append(f"error line does not name {needle!r}")
            new = sorted(set(after) - set(before))
            if new:
                errors.append(f"left behind: {new}")
            if e.out and os.path.exists(e.out):
                errors.append(f"output file exists: {e.out}")
            changed = sorted(k for k in before if after.get(k) != before[k])
            if changed:
                errors.append(f"inputs changed or removed: {changed}")
        else:
            for p in e.ok_outputs:
                if not os.path.isfile(p):
                    errors.append(f"expected output {p}")
            stray = [k for k in after if ".tmp-" in k or k.endswith(".runs/")]
            if stray:
                errors.append(f"temporary files left: {stray}")
    for msg in errors:
        print("FAIL:", msg)
    print("PASS" if not errors else f"{len(errors)} problem(s)")
    return 1 if errors else 0


def main():
    global CLI
    if len(sys.argv) >= 2 and sys.argv[1] == "--list":
        print(";".join(CASES))
        return 0
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        print(f"usage: {sys.argv[0]} CASE [CLI] | --list", file=sys.stderr)
        return 2
    CLI = os.environ.get("REPLAYSSM_CLI") or (sys.argv[2] if len(sys.argv) > 2 else None)
    if not CLI:
        print("set REPLAYSSM_CLI", file=sys.stderr)
        return 2
    return run_case(sys.argv[1])
