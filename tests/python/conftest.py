"""pytest of the Python package (python/replayssm). Run by CTest (tests/python/CMakeLists.txt) with the built package on
PYTHONPATH and the CLI in $REPLAYSSM_CLI, so results can be held against the CLI's bit for bit."""
import os
import subprocess

import pytest

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DUMPS = {"gdn": os.path.join(SRC, "datasets", "external", "qwen3_5_tiny.h5"),
         "mamba2": os.path.join(SRC, "datasets", "external", "nemotron_h_tiny.h5")}


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("REPLAYSSM_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("REPLAYSSM_CLI is not set to the built replayssm executable")

    def run(*args, check=True):
        r = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError(f"replayssm {' '.join(map(str, args))}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        return r
    return run


@pytest.fixture(scope="session")
def dumps():
    return DUMPS
