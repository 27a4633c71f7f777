#!/usr/bin/env python3
"""Bad-input corpus: `badinput.py CASE` runs one case (one CTest test each), `badinput.py --list` prints the names.

Every case builds its inputs in a fresh temporary folder (with `replayssm synth` and h5py), runs one command and
checks the CLI's input contract (README "Commands"):
  - the documented exit code (2 for bad input), not killed by a signal, no "internal error";
  - exactly one line on stderr, naming the file and the field (or the option);
  - nothing new in the folder afterwards: no file under the output name, no temporary file, no work folder;
  - the inputs unchanged (byte for byte), which is what matters when the output path names an input.
A few cases are deliberately *valid* input that looks odd (non-UTF-8 text: the models are byte-level, so any byte
is a token) and expect exit 0 and an output file.

Run with Debian's /usr/bin/python3 (numpy + h5py). The CLI comes from $REPLAYSSM_CLI (or argv[2]).
"""
import sys

# The runner, the `@case` registry and the input helpers are in badinput_driver.py; the cases are in one module per
# group of commands, and importing a module registers its cases (this import order is the order of `--list`).
# absurd.py takes the driver's names from here.
from badinput_driver import (CASES, HERE, MODELS, SRC, TEXT, Expect, case, cli, copy_model, main, out_in,  # noqa: F401
                             poke_weight, replace_dataset, run_case, snapshot, sweep_args, synth, text_file)
import badinput_cases_reference  # noqa: F401,E402
from badinput_cases_validate_quantize_synth import state_file  # noqa: F401,E402
from badinput_cases_capture_sweep_merge import GDN, capture_args, make_shards  # noqa: F401,E402

if __name__ == "__main__":
    sys.exit(main())
