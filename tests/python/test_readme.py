"""The README's "validate your kernel from pytest" example, run as written: `my_kernels` is provided here by the numpy
kernels of experiments/external/numpy_kernels.py."""
import os
import re
import sys
import types

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "experiments", "external"))
import numpy_kernels as nk  # noqa: E402


def readme_example():
    text = open(os.path.join(SRC, "README.md"), encoding="utf-8").read()
    m = re.search(r"<!-- pytest-example -->\s*```python\n(.*?)```", text, re.S)
    assert m, "README.md: the block after <!-- pytest-example --> is missing"
    return m.group(1)


def test_readme_example_runs_and_checks():
    code = readme_example()
    assert len(code.strip().splitlines()) <= 6, code
    mod = types.ModuleType("my_kernels")
    mod.gdn_decode = lambda initial_state=None, **inp: nk.gdn_decode(initial_state=initial_state, **inp)
    mod.gdn_decode_bf16 = lambda initial_state=None, **inp: nk.gdn_decode(initial_state=initial_state,
                                                                          state_format="bf16", **inp)
    sys.modules["my_kernels"] = mod
    try:
        ns = {}
        exec(compile(code, "README.md", "exec"), ns)
        tests = [f for n, f in ns.items() if n.startswith("test_") and callable(f)]
        assert tests
        for t in tests:
            t()
        # and the same example catches a kernel whose BF16 store is misplaced
        mod.gdn_decode_bf16 = lambda initial_state=None, **inp: nk.gdn_decode(initial_state=initial_state,
                                                                              state_format="bf16", placement="after",
                                                                              **inp)
        ns = {}
        exec(compile(code, "README.md", "exec"), ns)
        failed = 0
        for n, f in ns.items():
            if n.startswith("test_"):
                try:
                    f()
                except AssertionError:
                    failed += 1
        assert failed == len(tests)
    finally:
        del sys.modules["my_kernels"]
