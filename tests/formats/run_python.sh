#!/bin/sh
# Runs a python oracle check (ml_dtypes + numpy) under the python chosen for it:
#   $REPLAYSSM_PYTHON when set (at test time) -- it must then be an executable, or the test fails (exit 1);
#   otherwise <default python>, the project's .venv/bin/python (made by scripts/setup) or the CMake cache variable
#   REPLAYSSM_PYTHON given at configure time -- where that is missing the test is skipped (exit 77, reason printed).
# Usage: run_python.sh <default python> <script.py> [args...]
default=$1
shift
if [ -n "${REPLAYSSM_PYTHON:-}" ]; then
  if [ ! -x "$REPLAYSSM_PYTHON" ] && ! command -v "$REPLAYSSM_PYTHON" >/dev/null 2>&1; then
    echo "FAIL: REPLAYSSM_PYTHON=$REPLAYSSM_PYTHON is not an executable python"
    exit 1
  fi
  exec "$REPLAYSSM_PYTHON" "$@"
fi
if [ ! -x "$default" ]; then
  echo "SKIP: $default not found (run scripts/setup to create the venv from scripts/requirements-test.txt, or set REPLAYSSM_PYTHON to a python with numpy + ml_dtypes)"
  exit 77
fi
exec "$default" "$@"
