"""A tree model over a wide integer feature (a million values): its cells are built in one sort, not one scan
per value (session 37 review r3: `fairspec check` hung for minutes in kinds/tree_cells.Factor when the cell
domain was refused and every value became its own cell), and the verdicts agree with brute force at every
integer next to each split threshold (the model's output is constant between thresholds)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("skops")

AMAX = 1_000_000


def _tree():
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(7)
    a = rng.integers(0, AMAX + 1, 300)
    g = rng.integers(0, 2, 300)
    y = (((a > 250_000) & (a < 600_000)) ^ ((g == 1) & (a > 900_000))).astype(int)
    est = DecisionTreeClassifier(max_depth=4, random_state=0).fit(np.column_stack([g, a]).astype(float), y)
    return est


def _candidates(est) -> np.ndarray:
    t = est.tree_
    thr = t.threshold[(t.children_left != -1) & (t.feature == 1)]
    cand = {0, AMAX}
    for x in thr:
        f = int(np.floor(x))
        cand |= {v for v in (f - 1, f, f + 1, f + 2) if 0 <= v <= AMAX}
    return np.array(sorted(cand), dtype=float)


def _spec(tmp_path, est) -> str:
    import skops.io as sio

    sio.dump(est, tmp_path / "m.skops")
    pair = "  forall x, x' : F\n  require x.* == x'.* except {g}\n"
    body = (f"property lab {{\n{pair}  ensure label(m(x)) == label(m(x'))\n}}\n"
            f"property p {{\n{pair}  ensure |prob(m(x)) - prob(m(x'))| <= 0.5\n}}\n"
            f"property q {{\n{pair}  ensure |prob(m(x)) - prob(m(x'))| <= 1\n}}\n")
    p = tmp_path / "s.fair"
    p.write_text(f"features F {{\n  g : bool protected\n  a : int in [0, {AMAX}]\n}}\n"
                 f'model m = sklearn("m.skops")\nencode F for m {{ g : raw  a : raw }}\n' + body)
    return str(p)


def test_a_million_cells_find_their_first_values_in_one_sort():
    from fairspec.kinds.tree_cells import Factor

    cell = np.arange(AMAX + 1, dtype=np.int64)           # every value its own cell: scanned per cell, this hung
    vals = cell.astype(np.float64)
    f = Factor("a", "free", vals, (0,), vals[:, None], cell)
    assert f.nc == AMAX + 1 and np.array_equal(f.rep, cell) and int(f.size.max()) == 1
    small = Factor("b", "tied", np.arange(5.0), (0,), np.arange(5.0)[:, None], np.array([0, 1, 0, 2, 1]))
    assert list(small.rep) == [0, 1, 3] and list(small.size) == [2, 2, 1]


@pytest.mark.parametrize("enumerate_pairs", [None, "0", "1"])
def test_a_tree_over_a_million_integers_is_decided_as_brute_force_says(tmp_path, monkeypatch, enumerate_pairs):
    from fairspec.pipeline import check

    if enumerate_pairs is None:
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    else:                       # the cell domain refused: the per-value fallback must refuse too, not hang
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    est = _tree()
    rep = check(_spec(tmp_path, est))
    assert not rep.has_errors, rep.diagnostics
    v = {x.name: x for x in rep.verdicts}
    a = _candidates(est)
    X0 = np.column_stack([np.zeros(len(a)), a])
    X1 = np.column_stack([np.ones(len(a)), a])
    flips = bool(np.any(est.predict(X0) != est.predict(X1)))
    gap = float(np.max(np.abs(est.predict_proba(X0)[:, 1] - est.predict_proba(X1)[:, 1])))
    assert flips and gap > 0.5                          # the tree is unfair: both are violated
    truth = {"lab": not flips, "p": gap <= 0.5, "q": True}
    for name, ok in truth.items():
        assert v[name].status in ("holds", "violated", "unknown"), v[name]
        if v[name].status == "unknown":
            assert v[name].reason, name
            continue
        assert v[name].status == ("holds" if ok else "violated"), (name, v[name].reason)
        if v[name].status == "violated":
            w = v[name].witness
            assert w.features["a"] == w.features_prime["a"] and w.features["g"] != w.features_prime["g"]


def test_too_many_outcomes_to_tabulate_fall_to_cells_by_bisection(tmp_path, monkeypatch):
    """values x tests past MAX_SIGNATURE (a big forest on a wide feature would tabulate gigabytes): the
    feature's cells are found by bisection on the runtime comparison instead, with the same verdicts."""
    from fairspec.kinds import tree_cells
    from fairspec.pipeline import check

    monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    monkeypatch.setattr(tree_cells, "MAX_SIGNATURE", 1)
    seen = []
    real = tree_cells._interval_cells
    monkeypatch.setattr(tree_cells, "_interval_cells", lambda *a: seen.append(a[2].name) or real(*a))
    est = _tree()
    rep = check(_spec(tmp_path, est))
    v = {x.name: x for x in rep.verdicts}
    assert "a" in seen
    assert v["lab"].status == "violated" and v["p"].status == "violated", (v["lab"].reason, v["p"].reason)
    assert v["q"].status == "holds", v["q"].reason
    for name in ("lab", "p"):
        w = v[name].witness
        x0 = np.array([[float(w.features["g"]), w.features["a"]]])
        x1 = np.array([[float(w.features_prime["g"]), w.features_prime["a"]]])
        if name == "lab":
            assert est.predict(x0)[0] != est.predict(x1)[0]
        else:
            assert abs(est.predict_proba(x0)[0, 1] - est.predict_proba(x1)[0, 1]) > 0.5
