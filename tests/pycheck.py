"""The tally shared by the Python end-to-end tests (tests/*/*_test.py): check() counts a pass, or prints and records
a failure; finish() prints the totals and exits 1 on any failure."""
import sys

failures = []
passed = [0]


def check(cond, what):
    if cond:
        passed[0] += 1
    else:
        failures.append(what)
        print("FAIL:", what, flush=True)


def finish(name):
    print(f"{name}: {passed[0]} checks passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)
