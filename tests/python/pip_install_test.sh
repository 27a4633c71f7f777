#!/usr/bin/env bash
# `pip install .` of the checkout into a fresh venv, then `import replayssm` and one call of each submodule from a
# directory outside the checkout (so the installed package is what is imported). Exit 77 (skip) without python3-venv.
set -euo pipefail
venv=${1:?usage: pip_install_test.sh VENV_DIR}
src=${REPLAYSSM_SOURCE_DIR:?}
/usr/bin/python3 -c "import venv, ensurepip" 2>/dev/null || { echo "SKIP: python3-venv is not installed"; exit 77; }
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
t0=$SECONDS
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
"$venv/bin/pip" install -q --disable-pip-version-check "$src"
echo "pip install: $((SECONDS - t0)) s"
cd "$(mktemp -d)"
"$venv/bin/python" - "$src" <<'PY'
import os, sys
import numpy as np
import replayssm
assert os.path.dirname(replayssm.__file__).startswith(sys.prefix), replayssm.__file__  # the installed copy
d = replayssm.io.read_dump(os.path.join(sys.argv[1], "datasets", "external", "qwen3_5_tiny.h5"))
o, s = replayssm.reference.gdn(**d.inputs(0))
r = replayssm.emulate.decode("gdn", "conventional_shared/bf16", **d.inputs(0))
q = replayssm.formats.quantize(s, "nvfp4")
c = replayssm.compare(r.o, o, replayssm.tolerance("gdn", "conventional_shared/bf16", 16, 16, o.shape[0]))
assert c.passed and q.codes.dtype == np.uint8, c.summary
print("pip install: import replayssm", replayssm.__version__, "ok:", c.summary)
PY
