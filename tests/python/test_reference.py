"""replayssm.reference: equal to `replayssm reference` bit for bit, the forms agree, batch axis, errors."""
import numpy as np
import pytest

import replayssm
from replayssm import io, reference, testing


@pytest.mark.parametrize("arch", ["gdn", "mamba2"])
def test_equals_cli_bit_for_bit(arch, cli, dumps, tmp_path):
    out = tmp_path / "ref.h5"
    cli("reference", "--in", dumps[arch], "--out", out)
    d = io.read_dump(dumps[arch])
    run = reference.gdn if arch == "gdn" else reference.mamba2
    for i, layer in enumerate(d.layers):
        o, s = run(**d.inputs(i), initial_state=layer.get("initial_state"))
        assert np.array_equal(o, io.read_array(out, f"/layers/{layer['name']}/o"))
        assert np.array_equal(s, io.read_array(out, f"/layers/{layer['name']}/final_state"))


@pytest.mark.parametrize("arch", ["gdn", "mamba2"])
def test_forms_agree_on_awkward_cases(arch):
    run = reference.gdn if arch == "gdn" else reference.mamba2
    for case in testing.cases(arch, L=8):
        o, s = run(**case.inputs, initial_state=case.initial_state)
        assert np.all(np.isfinite(o)) and np.all(np.isfinite(s)), case.name
        for form in ("chunked", "replay"):
            o2, s2 = run(**case.inputs, initial_state=case.initial_state, form=form, L=8, chunk=5)
            assert replayssm.compare(o2, o, rel_rms=1e-12).passed, (case.name, form)
            assert replayssm.compare(s2, s, rel_rms=1e-12).passed, (case.name, form)


def test_gdn_matches_a_numpy_recurrence():
    case = next(c for c in testing.cases("gdn") if c.name == "initial state")
    inp = case.inputs
    S = case.initial_state.copy()
    T, Hv = inp["g"].shape
    ratio = Hv // inp["q"].shape[1]
    o = np.zeros((T, Hv, inp["v"].shape[-1]))
    for t in range(T):
        for h in range(Hv):
            k, q = inp["k"][t, h // ratio], inp["q"][t, h // ratio] * inp["scale"]
            S[h] *= np.exp(inp["g"][t, h])
            u = inp["beta"][t, h] * (inp["v"][t, h] - S[h] @ k)
            S[h] += np.outer(u, k)
            o[t, h] = S[h] @ q
    o_ref, s_ref = reference.gdn(**inp, initial_state=case.initial_state)
    assert replayssm.compare(o, o_ref, rel_rms=1e-13).passed
    assert replayssm.compare(S, s_ref, rel_rms=1e-13).passed


def test_batch_axis_and_float32_and_lists():
    c0 = next(c for c in testing.cases("gdn") if c.name == "T=16")
    c1 = next(c for c in testing.cases("gdn", seed=1) if c.name == "T=16")
    batch = {k: np.stack([c0.inputs[k], c1.inputs[k]]) for k in ("q", "k", "v", "g", "beta")}
    o, s = reference.gdn(**batch)
    assert o.shape == (2, 16, 4, 32) and s.shape == (2, 4, 32, 64)
    for b, c in enumerate((c0, c1)):
        ob, sb = reference.gdn(**{k: c.inputs[k] for k in batch})
        assert np.array_equal(o[b], ob) and np.array_equal(s[b], sb)
    f32 = {k: v.astype(np.float32) for k, v in batch.items()}
    o32, _ = reference.gdn(**f32)
    o64, _ = reference.gdn(**{k: v.astype(np.float64) for k, v in f32.items()})
    assert o32.dtype == np.float64 and np.array_equal(o32, o64)


def test_verify_chain_forms_and_accept():
    for arch in ("gdn", "mamba2"):
        case = next(c for c in testing.cases(arch) if c.name == "initial state")
        drafts = {k: (v[:5] if isinstance(v, np.ndarray) and v.ndim >= 2 else v) for k, v in case.inputs.items()}
        run = reference.gdn if arch == "gdn" else reference.mamba2
        o_all, _ = run(**drafts, initial_state=case.initial_state)
        for a in range(6):
            o1, s1 = reference.verify_chain(arch, a, case.initial_state, form="recurrent", **drafts)
            o2, s2 = reference.verify_chain(arch, a, case.initial_state, form="replay", L=4, **drafts)
            assert replayssm.compare(o1, o_all, rel_rms=1e-12).passed
            assert replayssm.compare(o2, o1, rel_rms=1e-12).passed and replayssm.compare(s2, s1, rel_rms=1e-12)
            if a:
                _, s_a = run(**{k: (v[:a] if isinstance(v, np.ndarray) and v.ndim >= 2 else v)
                                for k, v in drafts.items()}, initial_state=case.initial_state)
                assert replayssm.compare(s1, s_a, rel_rms=1e-12).passed
            else:
                assert np.array_equal(s1, case.initial_state)
    one = next(c for c in testing.cases("gdn") if c.name == "T=1")
    with pytest.raises(ValueError, match=r"accept: expected an integer in 0..T=1"):
        reference.verify_chain("gdn", 2, **one.inputs)
    with pytest.raises(ValueError, match=r"x: not an gdn input"):
        reference.verify_chain("gdn", 0, x=one.inputs["q"], **one.inputs)


def _take(inputs, idx):
    """The per-token inputs at the token indices idx (in that order); per-head inputs and scale unchanged."""
    return {k: (v[idx] if isinstance(v, np.ndarray) and v.ndim >= 2 else v) for k, v in inputs.items()}


@pytest.mark.parametrize("arch", ["gdn", "mamba2"])
def test_verify_tree_forms_paths_and_chain(arch):
    case = next(c for c in testing.cases(arch) if c.name == "initial state")  # 17 tokens
    run = reference.gdn if arch == "gdn" else reference.mamba2
    rng = np.random.default_rng(3)
    trees = [reference.draft_tree(t) for t in ("chain:5", "star:6", "binary:2", "3,2,1")]
    trees.append([int(rng.integers(-1, i)) for i in range(12)])
    for parents in trees:
        T = len(parents)
        drafts = _take(case.inputs, list(range(T)))
        paths = []
        for i in range(T):
            p, j = [], i
            while j >= 0:
                p.insert(0, j)
                j = parents[j]
            paths.append(p)
        for node in sorted({-1, 0, T - 1, max(range(T), key=lambda i: len(paths[i]))}):
            o1, s1 = reference.verify_tree(arch, parents, node, case.initial_state, form="recurrent", **drafts)
            o2, s2 = reference.verify_tree(arch, parents, node, case.initial_state, form="replay", L=4, **drafts)
            assert replayssm.compare(o2, o1, rel_rms=1e-12).passed and replayssm.compare(s2, s1, rel_rms=1e-12).passed
            for i in range(T):  # node i's output is the last of its root path's run
                o_path, _ = run(**_take(case.inputs, paths[i]), initial_state=case.initial_state)
                assert replayssm.compare(o1[i], o_path[-1], rel_rms=1e-12).passed, (parents, i)
            if node >= 0:
                _, s_path = run(**_take(case.inputs, paths[node]), initial_state=case.initial_state)
                assert replayssm.compare(s2, s_path, rel_rms=1e-12).passed, (parents, node)
            else:
                assert np.array_equal(s1, case.initial_state)
    chain = _take(case.inputs, list(range(5)))
    for a in range(6):
        oc, sc = reference.verify_chain(arch, a, case.initial_state, form="replay", L=4, **chain)
        ot, st = reference.verify_tree(arch, reference.draft_tree("chain:5"), a - 1, case.initial_state,
                                       form="replay", L=4, **chain)
        assert replayssm.compare(ot, oc, rel_rms=1e-12).passed and replayssm.compare(st, sc, rel_rms=1e-12).passed


def test_verify_tree_errors():
    one = next(c for c in testing.cases("gdn") if c.name == "initial state")  # 17 tokens
    inp = _take(one.inputs, list(range(3)))
    with pytest.raises(ValueError, match=r"parents: 2 nodes for T=3"):
        reference.verify_tree("gdn", [-1, 0], 0, **inp)
    with pytest.raises(ValueError, match=r"node 2 has parent 2"):
        reference.verify_tree("gdn", [-1, 0, 2], 0, **inp)
    with pytest.raises(ValueError, match=r"accept_node: expected an integer in -1..T-1=2"):
        reference.verify_tree("gdn", [-1, 0, 0], 3, **inp)
    with pytest.raises(ValueError, match=r"parents: expected a sequence of integers"):
        reference.verify_tree("gdn", [-1, 0.5, 0], 0, **inp)
    with pytest.raises(ValueError, match=r"tree 'bush': expected chain"):
        reference.draft_tree("bush")
    with pytest.raises(ValueError, match=r"126 nodes \(at most 64\)"):
        reference.draft_tree("binary:6")
    assert reference.draft_tree("2,1") == [-1, -1, 0, 1]


@pytest.mark.parametrize("bad,match", [
    (dict(k=np.zeros((3, 2, 8))), r"k: expected shape \[T=16, Hk=2, K=64\]"),
    (dict(v=np.zeros((16, 3, 32)), g=np.zeros((16, 3)), beta=np.zeros((16, 3))),
     r"v: value heads Hv=3 must be a multiple of key heads Hk=2"),
    (dict(g=np.zeros((16,))), r"g: expected shape \[T=16, Hv=4\] \(rank 2\)"),
    (dict(beta=np.zeros((16, 4), dtype=complex)), r"beta: expected a real floating-point array"),
    (dict(scale=-1.0), r"scale: expected a finite number > 0"),
    (dict(g=np.full((16, 4), np.nan)), r"g"),
    (dict(initial_state=np.zeros((4, 64, 32))), r"initial_state: expected shape \[Hv=4, V=32, K=64\]"),
    (dict(form="fast"), r"form: expected one of"),
])
def test_bad_input_is_a_value_error_naming_the_argument(bad, match):
    inp = dict(next(c for c in testing.cases("gdn") if c.name == "T=16").inputs)
    inp.update(bad)
    with pytest.raises(ValueError, match=match):
        reference.gdn(**inp)


def test_mamba2_bad_input():
    inp = dict(next(c for c in testing.cases("mamba2") if c.name == "T=16").inputs)
    with pytest.raises(ValueError, match=r"A: expected shape \[H=4\]"):
        reference.mamba2(**{**inp, "A": np.zeros(3)})
    with pytest.raises(ValueError, match=r"x: heads H=4 must be a multiple of groups G=3"):
        reference.mamba2(**{**inp, "B": np.zeros((16, 3, 64)), "C": np.zeros((16, 3, 64))})
