"""replayssm.emulate: the emulation and the mode-aware reference equal what `replayssm validate --external --mode`
computes (--save-expected) bit for bit; step-by-step verify/accept; errors."""
import numpy as np
import pytest

import replayssm
from replayssm import emulate, io, reference, testing

MODES = {
    "gdn": ["conventional_shared/fp32", "conventional_shared/bf16", "replay_shared/fp8_e4m3/row/L=8",
            "replay_split/nvfp4/block/rne/u=lp", "replay_split/int8/row/sr/u=recompute/seed=3",
            "replay_shared/mxfp8/block/L=1"],
    "mamba2": ["conventional_shared/fp16", "replay_shared/nvfp4/block", "replay_split/fp8_e5m2/row/sr/L=5"],
}


@pytest.mark.parametrize("arch,mode", [(a, m) for a, ms in MODES.items() for m in ms])
def test_equals_the_cli_bit_for_bit(arch, mode, cli, dumps, tmp_path):
    d = io.read_dump(dumps[arch])
    theirs, ours, exact = {}, [], []
    for i, layer in enumerate(d.layers):
        r = emulate.decode(arch, mode, layer.get("initial_state"), **d.inputs(i))
        m = emulate.decode(arch, mode, layer.get("initial_state"), backend="mode_aware", **d.inputs(i))
        theirs[f"/layers/{layer['name']}/o"] = r.o
        theirs[f"/layers/{layer['name']}/final_state"] = r.state
        ours.append(r)
        exact.append(m)
    io.write_arrays(tmp_path / "theirs.h5", theirs)
    cli("validate", "--external", tmp_path / "theirs.h5", "--activations", dumps[arch], "--mode", mode,
        "--save-expected", tmp_path / "expected.h5")  # our own emulation passes its own check: exit 0
    for layer, r, m in zip(d.layers, ours, exact):
        g = f"/layers/{layer['name']}/"
        assert np.array_equal(r.o, io.read_array(tmp_path / "expected.h5", g + "emulated_o"))
        assert np.array_equal(r.state, io.read_array(tmp_path / "expected.h5", g + "emulated_state"))
        assert np.array_equal(m.o, io.read_array(tmp_path / "expected.h5", g + "o"))
        assert np.array_equal(m.state, io.read_array(tmp_path / "expected.h5", g + "final_state"))


def test_fp32_emulation_is_close_to_fp64_and_formats_are_not():
    case = next(c for c in testing.cases("gdn") if c.name.startswith("long"))
    o64, _ = reference.gdn(**case.inputs)
    d32 = replayssm.compare(emulate.decode("gdn", "conventional_shared/fp32", **case.inputs).o, o64).rel_rms
    d16 = replayssm.compare(emulate.decode("gdn", "conventional_shared/bf16", **case.inputs).o, o64).rel_rms
    assert d32 < 1e-6 < 1e-4 < d16


def test_decoder_verify_accept_matches_the_reference_chain():
    case = next(c for c in testing.cases("gdn") if c.name == "initial state")
    drafts = {k: (v[None, :6] if isinstance(v, np.ndarray) else v) for k, v in case.inputs.items()}
    dims = dict(B=1, Hk=2, Hv=4, K=64, V=32)
    for mode in ("conventional_shared/fp32", "replay_shared/fp32/L=4", "replay_split/fp32/u=recompute"):
        dec = emulate.Decoder("gdn", mode, dims, initial_state=case.initial_state[None])
        o = dec.verify(**drafts)
        dec.accept([4])
        o_ref, s_ref = reference.verify_chain("gdn", 4, case.initial_state,
                                              **{k: (v[0] if isinstance(v, np.ndarray) else v)
                                                 for k, v in drafts.items()})
        assert replayssm.compare(o[0], o_ref, rel_rms=1e-6).passed, mode
        assert replayssm.compare(dec.state()[0], s_ref, rel_rms=1e-6).passed, mode
        step = {k: (v[:, 4:5] if isinstance(v, np.ndarray) else v) for k, v in drafts.items()}
        assert dec.step(**step).shape == (1, 4, 32)
        codes, scales = dec.stored()
        assert codes.shape[0] == 4 and dec.mode.startswith(mode.split("/")[0] + "/fp32/none/rne")


def test_decoder_errors():
    case = next(c for c in testing.cases("gdn") if c.name == "T=16")
    dims = dict(B=1, Hk=2, Hv=4, K=64, V=32)
    dec = emulate.Decoder("gdn", "replay_shared/bf16", dims)
    tok = {k: (v[None, :1] if isinstance(v, np.ndarray) else v) for k, v in case.inputs.items()}
    with pytest.raises(ValueError, match="accept: no verify is waiting"):
        dec.accept([0])
    two = {k: (v[None, :2] if isinstance(v, np.ndarray) else v) for k, v in case.inputs.items()}
    with pytest.raises(ValueError, match=r"step: one token per sequence \(T = 1\), got T=2"):
        dec.step(**two)
    dec.verify(**two)
    with pytest.raises(ValueError, match="step: the last verify waits for accept"):
        dec.step(**tok)
    with pytest.raises(ValueError, match=r"accept: counts must be in 0..2"):
        dec.accept([3])
    with pytest.raises(ValueError, match="q: expected a leading batch axis"):
        dec.verify(**case.inputs)
    with pytest.raises(ValueError, match="dims: missing Hk"):
        emulate.Decoder("gdn", "replay_shared/bf16", dict(B=1, Hv=4, K=64, V=32))
    for mode, match in (("replay_shared/bf16/row", "scaling 'row' is not valid"), ("nope/bf16", "unknown policy"),
                        ("replay_split/bf16/u=xx", "unknown u-source"), ("replay_shared/bf16/L=0", "L must be")):
        with pytest.raises(ValueError, match=match):
            emulate.decode("gdn", mode, **case.inputs)
    with pytest.raises(ValueError, match="backend: expected one of"):
        emulate.decode("gdn", "replay_shared/bf16", backend="gpu", **case.inputs)


def test_modes_list():
    assert "replay_split/fp8_e4m3/row/rne/u=lp" in emulate.modes("gdn")
    assert len(emulate.modes("mamba2", main_only=True)) == 12
