#!/bin/bash
# Executes every notebook of notebooks/ on the committed samples of experiments/samples/ with Debian's
# `jupyter nbconvert --to notebook --execute` (into a temporary folder; the committed notebooks are not touched),
# then checks that each expected figure exists and is a real, non-trivial PNG. Also checks the command-line entry
# of notebooks/replayssm_plots.py that scripts/demo uses.
# Exit 0: all passed; 1: something failed; 77: skipped (jupyter / matplotlib / h5py missing), with the reason.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY=/usr/bin/python3
NB="$ROOT/notebooks"
SAMPLES="$ROOT/experiments/samples"

if [ ! -x "$PY" ]; then echo "SKIP: $PY not found (Debian's python3 runs the notebooks)"; exit 77; fi
for mod in h5py numpy matplotlib nbformat nbconvert ipykernel; do
  if ! "$PY" -c "import $mod" 2>/dev/null; then
    echo "SKIP: $PY cannot import $mod (install python3-h5py python3-numpy python3-matplotlib jupyter-nbconvert python3-nbformat python3-ipykernel)"
    exit 77
  fi
done
JUPYTER="$(command -v jupyter || true)"
[ -n "$JUPYTER" ] || { [ -x /usr/bin/jupyter ] && JUPYTER=/usr/bin/jupyter; }
if [ -z "$JUPYTER" ] || ! "$JUPYTER" nbconvert --version >/dev/null 2>&1; then
  echo "SKIP: jupyter nbconvert not found (install jupyter-nbconvert)"; exit 77
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/replayssm-notebooks.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export REPLAYSSM_FIGURES="$WORK/figures"
export PATH="/usr/bin:$PATH"          # the kernel is Debian's python3, not a pyenv one
export PYDEVD_DISABLE_FILE_VALIDATION=1 MPLBACKEND=Agg MPLCONFIGDIR="$WORK/mpl" IPYTHONDIR="$WORK/ipython"
# Use the committed samples whatever the caller's environment says.
unset REPLAYSSM_RESULTS REPLAYSSM_FLUSH_RESULTS REPLAYSSM_GDN_RESULTS REPLAYSSM_SCHEMES_RESULTS REPLAYSSM_TREE_RESULTS REPLAYSSM_BENCH
mkdir -p "$REPLAYSSM_FIGURES"

pass=0; fail=0
ok()  { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# A PNG counts when it has the PNG signature, an IHDR of at least 300x200 pixels and at least 10 kB.
check_png() {
  "$PY" - "$1" <<'EOF'
import struct, sys
p = sys.argv[1]
try:
    b = open(p, "rb").read()
except OSError as e:
    sys.exit("missing: %s" % e)
if b[:8] != b"\x89PNG\r\n\x1a\n" or b[12:16] != b"IHDR":
    sys.exit("not a PNG")
w, h = struct.unpack(">II", b[16:24])
if w < 300 or h < 200 or len(b) < 10000:
    sys.exit("trivial PNG: %dx%d, %d bytes" % (w, h, len(b)))
print("%dx%d, %d bytes" % (w, h, len(b)))
EOF
}

have_bench=0
ls "$SAMPLES"/bench*.h5 >/dev/null 2>&1 && have_bench=1

# notebook -> the figures it must produce
declare -A EXPECT=(
  [kl_drift_vs_length]="kl_vs_length.png drift_vs_length.png"
  [flush_interval]="flush_interval.png"
  [gdn_usource]="gdn_usource.png"
  [state_schemes]="state_schemes.png state_schemes_capture.png"
  [tree_verify]="tree_verify.png"
  [bench]="speedup_vs_batch.png verify_latency_vs_T.png"
)
for nb in "$NB"/*.ipynb; do
  name="$(basename "$nb" .ipynb)"
  log="$WORK/$name.log"
  # Committed notebooks carry no outputs (clear them with: jupyter nbconvert --clear-output --inplace NOTEBOOK).
  if why="$("$PY" -c '
import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
sys.exit("stored outputs in cells %s" % dirty if dirty else 0)' "$nb" 2>&1)"; then
    ok "notebook $name is valid nbformat 4 without stored outputs"
  else
    bad "notebook $name: $why"
  fi
  if timeout 600 "$JUPYTER" nbconvert --to notebook --execute --ExecutePreprocessor.timeout=300 \
       --output-dir "$WORK/executed" --output "$name" "$nb" >"$log" 2>&1; then
    ok "notebook $name executed"
  else
    bad "notebook $name did not execute:"; tail -n 25 "$log" | sed 's/^/    /'
    continue
  fi
  if [ -z "${EXPECT[$name]+x}" ]; then bad "notebook $name: no expected figures listed in $0"; continue; fi
  for png in ${EXPECT[$name]}; do
    if [ "$name" = bench ] && [ "$have_bench" = 0 ]; then
      echo "SKIP: $png (no experiments/samples/bench*.h5: the bench notebook prints why and draws nothing)"
      continue
    fi
    if why="$(check_png "$REPLAYSSM_FIGURES/$png" 2>&1)"; then ok "$name -> $png ($why)"; else bad "$name -> $png: $why"; fi
  done
done

# The command-line entry scripts/demo calls.
cli_png="$WORK/cli/kl_vs_length.png"
if out="$("$PY" "$NB/replayssm_plots.py" kl-vs-length "$SAMPLES/results.h5" "$cli_png" 2>&1)" &&
   why="$(check_png "$cli_png" 2>&1)"; then
  ok "replayssm_plots.py kl-vs-length ($why)"
else
  bad "replayssm_plots.py kl-vs-length: $out $why"
fi
cli_png="$WORK/cli/state_schemes.png"
if out="$("$PY" "$NB/replayssm_plots.py" state-schemes "$SAMPLES/state_schemes.h5" "$cli_png" 2>&1)" &&
   why="$(check_png "$cli_png" 2>&1)"; then
  ok "replayssm_plots.py state-schemes ($why)"
else
  bad "replayssm_plots.py state-schemes: $out $why"
fi
# ... and its errors: a missing input is one line and exit 1, a bad figure name is usage and exit 2.
"$PY" "$NB/replayssm_plots.py" kl-vs-length "$WORK/nonexistent.h5" "$WORK/x.png" >/dev/null 2>&1; rc=$?
[ "$rc" = 1 ] && ok "replayssm_plots.py: missing input exits 1" || bad "replayssm_plots.py: missing input exit $rc (want 1)"
"$PY" "$NB/replayssm_plots.py" no-such-figure "$SAMPLES/results.h5" "$WORK/x.png" >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] && ok "replayssm_plots.py: unknown figure exits 2" || bad "replayssm_plots.py: unknown figure exit $rc (want 2)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
