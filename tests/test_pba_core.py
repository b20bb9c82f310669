"""PBA core (paper 004): bounds, search, branch and bound, LP/MILP, checked against grids.

Small random ReLU networks; every neighbourhood is also evaluated on a fine grid
(continuous offsets) or enumerated completely (integral offsets): a proof must have no
feasible grid point with f <= 0, a witness must lie in the box with f <= 0 and both
predictions kept, and on integral boxes the statuses must equal the enumeration.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairspec.backends.pba import CaseSet, aggregate, analyse, decide, logit_difference_net, make_cases, \
    render_table, write_chart
from fairspec.backends.pba import exact
from fairspec.backends.pba.relax import copy_bounds, objective_lower, robust_lower
from fairspec.models.network import Layer, PLNet, UnsupportedModel


def _net(rng, n_in, widths, scale=1.0):
    layers, prev = [], n_in
    for k, w in enumerate(widths):
        layers.append(Layer(rng.normal(size=(w, prev)) * scale / np.sqrt(prev), rng.normal(size=w) * 0.2,
                            k < len(widths) - 1))
        prev = w
    return PLNet(tuple(layers))


def _cases(seed=0, P=40, widths=(12, 8, 2), m=2, n_in=6, box=1.0, integer=False, sc=0.3):
    rng = np.random.default_rng(seed)
    net = logit_difference_net(_net(rng, n_in, widths))
    U = rng.random((P, n_in))
    U[:, 0] = rng.integers(0, 2, P)
    Up = U.copy()
    Up[:, 0] = 1 - U[:, 0]
    cols = np.arange(1, 1 + m)
    scale = np.full(m, sc)
    lo = -np.full((P, m), box) * rng.uniform(0.3, 1.0, (P, m))
    hi = np.full((P, m), box) * rng.uniform(0.3, 1.0, (P, m))
    ints = np.full(m, integer)
    if integer:
        lo, hi = np.floor(lo * 2), np.ceil(hi * 2)
    cls = (net.forward(U) > 0).astype(int)        # every centre x is classified as its class
    return net, U, Up, cols, scale, lo, hi, ints, cls


def _grid(lo, hi, ints, k=41):
    axes = [np.arange(a, b + 0.5) if i else np.linspace(a, b, k) for a, b, i in zip(lo, hi, ints)]
    return np.array(list(itertools.product(*axes))) if axes else np.zeros((1, 0))


def _truth(tc, i, ints, k=41):
    """Min of f over the feasible grid points of case i (inf if none), and the grid."""
    G = _grid(tc.lo[i], tc.hi[i], ints, k)
    f, ax, ap = tc.pair(G[None], [i])
    cls1 = tc.sigma[i] > 0
    keep = ((ax > 0) & (ap > 0)) if cls1 else ((ax >= 0) & (ap >= 0))
    return (f[keep].min() if keep.any() else np.inf), G


def test_logit_difference_net():
    rng = np.random.default_rng(1)
    two = _net(rng, 4, (5, 2))
    X = rng.normal(size=(7, 4))
    L = two.forward_all(X)
    assert np.allclose(logit_difference_net(two).forward(X), L[:, 1] - L[:, 0])
    assert np.allclose(logit_difference_net(two, positive=0).forward(X), L[:, 0] - L[:, 1])
    one = _net(rng, 4, (5, 1))
    assert np.allclose(logit_difference_net(one).forward(X), one.forward(X))
    three = _net(rng, 4, (5, 3))
    with pytest.raises(UnsupportedModel):
        logit_difference_net(three)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_relaxation_bounds_are_below_the_grid(seed):
    net, U, Up, cols, scale, lo, hi, ints, cls = _cases(seed)
    sigma = np.where(cls == 1, 1.0, -1.0)
    for tau in (1.0, -1.0):
        tc = make_cases(net, U, Up, cols, scale, lo, hi, ints, sigma, np.full(len(U), tau))
        bx, bp = copy_bounds(tc, tc.C), copy_bounds(tc, tc.Cp)
        lb0 = objective_lower(tc, bx, bp, lambdas=(0.0,))    # Eq. (3) ignored
        lb = objective_lower(tc, bx, bp)                     # with its multipliers
        rl = robust_lower(tc, bx)
        assert np.all(lb >= lb0 - 1e-12)
        for i in range(tc.P):
            G = _grid(tc.lo[i], tc.hi[i], ints)
            f, ax, ap = tc.pair(G[None], [i])
            assert lb0[i] <= f.min() + 1e-9
            keep = (ax >= 0) & (ap >= 0)
            if keep.any():
                assert lb[i] <= f[keep].min() + 1e-9
            assert rl[i] <= ax.min() + 1e-9
            # every layer's bounds contain the sampled pre-activations (first layer exact)
            z = tc.C[i] + G @ tc.A.T
            assert np.all(z >= bx.l[0][i] - 1e-9) and np.all(z <= bx.u[0][i] + 1e-9)


@pytest.mark.parametrize("seed", [0, 3])
def test_decide_proofs_and_witnesses_match_a_fine_grid(seed):
    net, U, Up, cols, scale, lo, hi, ints, cls = _cases(seed, P=30, box=2.0)
    sigma = np.where(cls == 1, 1.0, -1.0)
    tc = make_cases(net, U, Up, cols, scale, lo, hi, ints, sigma)
    f0, _, _ = tc.pair(np.zeros((tc.P, tc.m)))
    tc.tau = np.where(f0 > 0, 1.0, -1.0)
    dec = decide(tc, time_limit=30, case_limit=5)
    assert set(dec.status) <= {"proved", "refuted", "unknown"}
    for i in range(tc.P):
        fmin, _ = _truth(tc, i, ints, k=61)
        if dec.status[i] == "proved":
            assert fmin > 0, (i, dec.stage[i], fmin)
        elif dec.status[i] == "refuted":
            d = dec.D[i]
            assert np.all(d >= tc.lo[i] - 1e-12) and np.all(d <= tc.hi[i] + 1e-12)
            f, ax, ap = tc.pair(d[None], [i])
            assert f[0] <= 0 and ax[0] >= 0 and ap[0] >= 0
    # the exact mode leaves nothing open on these small problems
    assert (dec.status == "unknown").sum() == 0


def test_branch_and_bound_in_two_workers_gives_the_one_worker_answers():
    """The branch and bound stage split over the executor's workers (interleaved chunks of
    cases) decides every case as one process does: the same status, stage and witness."""
    from fairspec.runtime import executor

    net, U, Up, cols, scale, lo, hi, ints, cls = _cases(5, P=40, m=3, box=2.0, integer=True, sc=0.2)
    sigma = np.where(cls == 1, 1.0, -1.0)
    tc = make_cases(net, U, Up, cols, scale, lo, hi, ints, sigma)
    f0, _, _ = tc.pair(np.zeros((tc.P, tc.m)))
    tc.tau = np.where(f0 > 0, 1.0, -1.0)
    one = decide(tc, time_limit=3600, case_limit=3600, search=False, workers=1)
    executor.configure(workers=2)
    try:
        two = decide(tc, time_limit=3600, case_limit=3600, search=False, workers=2)
    finally:
        executor.configure(workers=None)
    assert list(one.status) == list(two.status)
    assert list(one.stage) == list(two.stage)
    assert np.array_equal(np.nan_to_num(one.D, nan=1e9), np.nan_to_num(two.D, nan=1e9))
    assert "bab" in set(one.stage)


def test_integral_boxes_are_decided_exactly_as_enumeration():
    net, U, Up, cols, scale, lo, hi, ints, cls = _cases(5, P=40, m=3, box=2.0, integer=True, sc=0.2)
    sigma = np.where(cls == 1, 1.0, -1.0)
    tc = make_cases(net, U, Up, cols, scale, lo, hi, ints, sigma)
    f0, _, _ = tc.pair(np.zeros((tc.P, tc.m)))
    tc.tau = np.where(f0 > 0, 1.0, -1.0)
    for kw in ({}, {"bab_boxes": 0}, {"search": False}, {"search": False, "bab_boxes": 0},
               {"search": False, "bab_boxes": 0, "engine": "scip"}):
        # the MILP-only variants on fewer cases (each MILP costs ~0.1-1 s)
        sub = tc.subset(np.arange(8 if kw.get("engine") == "scip" else 16)) if kw.get("bab_boxes") == 0 else tc
        dec = decide(sub, time_limit=60, case_limit=10, **kw)
        for i in range(sub.P):
            fmin, _ = _truth(sub, i, ints)
            expected = "proved" if fmin > 0 else "refuted"
            assert dec.status[i] == expected, (i, dec.stage[i], fmin, kw)
            if expected == "refuted":
                assert np.all(dec.D[i] == np.round(dec.D[i]))


def test_plain_lp_proves_no_more_than_the_exact_mode():
    net, U, Up, cols, scale, lo, hi, ints, cls = _cases(7, P=40, box=3.0)
    sigma = np.where(cls == 1, 1.0, -1.0)
    tc = make_cases(net, U, Up, cols, scale, lo, hi, ints, sigma)
    f0, _, _ = tc.pair(np.zeros((tc.P, tc.m)))
    tc.tau = np.where(f0 > 0, 1.0, -1.0)
    lp = decide(tc, mode="lp")
    ex = decide(tc, time_limit=30)
    assert set(lp.status) <= {"proved", "unknown"}            # the LP alone never refutes
    assert np.all(ex.status[lp.status == "proved"] == "proved")
    assert (ex.status == "unknown").sum() <= (lp.status == "unknown").sum()
    for i in np.flatnonzero(lp.status == "proved"):
        fmin, _ = _truth(tc, i, ints)
        assert fmin > 0


def test_lp_and_milp_of_one_case_agree_with_the_grid():
    net, U, Up, cols, scale, lo, hi, ints, cls = _cases(11, P=12, box=2.0)
    sigma = np.where(cls == 1, 1.0, -1.0)
    tc = make_cases(net, U, Up, cols, scale, lo, hi, ints, sigma)
    bx, bp = copy_bounds(tc, tc.C), copy_bounds(tc, tc.Cp)
    for i in range(tc.P):
        fmin, _ = _truth(tc, i, ints, k=81)
        bound, _, _ = exact.solve_case_lp(tc, i, bx, bp)
        assert bound is None or bound <= fmin + 1e-6
        res, d, _ = exact.solve_case_milp(tc, i, bx, bp, time_limit=10)
        if res == "proved":
            assert fmin > 0
        if res == "candidate":
            f, ax, ap = tc.pair(d[None], [i])
            assert f[0] <= 2 * exact.CUT


def test_affine_model_and_no_moving_feature():
    rng = np.random.default_rng(4)
    lin = logit_difference_net(PLNet((Layer(rng.normal(size=(2, 5)), np.zeros(2), False),)))
    U = rng.random((10, 5))
    U[:, 0] = rng.integers(0, 2, 10)
    Up = U.copy()
    Up[:, 0] = 1 - U[:, 0]
    cls = (lin.forward(U) > 0).astype(int)
    for cols, lo, hi in ((np.array([1]), -np.ones((10, 1)), np.ones((10, 1))),
                         (np.zeros(0, dtype=int), np.zeros((10, 0)), np.zeros((10, 0)))):
        cs = CaseSet(lin, U, Up, cols, np.ones(len(cols)), lo, hi, np.zeros(len(cols), dtype=bool), cls)
        res = analyse(cs, rb=True)
        # f does not depend on the offsets: each eligible point is decided by its centre
        f0 = np.where(cls == 1, 1, -1) * (lin.forward(U) - lin.forward(Up))
        for i in np.flatnonzero(res.eligible):
            assert res.observed[i] == ("proved" if f0[i] > 0 else "refuted")
            assert res.flipped[i] == ("proved" if f0[i] < 0 else "refuted")


def test_analyse_settings_are_complementary_and_witnesses_replay():
    net, U, Up, cols, scale, lo, hi, ints, _ = _cases(2, P=60, box=2.0)
    rng = np.random.default_rng(0)
    cls = rng.integers(0, 2, len(U))               # some points misclassified: excluded
    cs = CaseSet(net, U, Up, cols, scale, lo, hi, ints, cls)
    res = analyse(cs, time_limit=30)
    g = net.forward
    elig = ((g(U) > 0).astype(int) == cls) & ((g(Up) > 0).astype(int) == cls)
    assert np.array_equal(res.eligible, elig)
    assert np.all(res.observed[~elig] == "excluded")
    both = (res.observed == "proved") & (res.flipped == "proved")
    assert not both.any()                           # a point is more confident on one side at most
    for side, wit in ((1.0, res.witness_obs), (-1.0, res.witness_flip)):
        for i, (x, xp) in wit.items():
            gx, gp = g(x)[0], g(xp)[0]
            s = 1.0 if cls[i] == 1 else -1.0
            assert side * s * (gx - gp) <= 1e-9
            assert int(gx > 0) == cls[i] and int(gp > 0) == cls[i]
            # x and x' share every moving feature; inside the box
            d = (x[0, cols] - U[i, cols]) / scale
            assert np.all(d >= lo[i] - 1e-9) and np.all(d <= hi[i] + 1e-9)
            assert np.allclose(np.delete(x[0] - xp[0], 0), 0)
    assert res.rb_x is not None and len(res.rb_x) == len(U)


def test_aggregate_table_and_chart(tmp_path):
    obs = np.array(["proved", "refuted", "proved", "unknown", "excluded", "refuted"], dtype=object)
    flp = np.array(["refuted", "proved", "refuted", "refuted", "excluded", "refuted"], dtype=object)
    grp = np.array([0, 0, 1, 1, 1, 0])
    cls = np.array([1, 0, 0, 1, 1, 1])
    agg = aggregate(["F", "M"], row_group=grp, row_label=cls.astype(bool), row_pred=np.array([1, 0, 0, 1, 0, 1]),
                    case_row=np.arange(6), case_group_x=grp, case_group_p=1 - grp, case_class=cls,
                    case_eligible=obs != "excluded", case_same=np.array([1, 1, 0, 1, 1, 1], dtype=bool),
                    obs_status=obs, flip_status=flp,
                    rb_x=np.array(["proved"] * 6, dtype=object), rb_p=np.array(["unknown"] * 6, dtype=object))
    d = agg.to_json()
    f, m = d["rows"]
    assert f["observed_counts"] == {"eligible": 3, "proved": 1, "refuted": 2, "unknown": 0, "eligible_desirable": 2,
                                    "eligible_undesirable": 1}
    assert f["pba_observed"] == pytest.approx(1 / 3) and f["pba_observed_desirable"] == pytest.approx(1 / 3)
    assert m["pba_observed"] == pytest.approx(1 / 2) and m["pba_observed_undesirable"] == pytest.approx(1 / 2)
    # flipped: cases presented as M are the F points (rows 0, 1, 5)
    assert m["pba_flipped"] == pytest.approx(1 / 3) and m["pba_flipped_undesirable"] == pytest.approx(1 / 3)
    assert f["sp"] == pytest.approx(2 / 3) and f["tpr"] == pytest.approx(1.0) and m["cfa"] == pytest.approx(2 / 3)
    assert f["rb_observed"] == 1.0 and f["rb_flipped"] == 0.0 and f["rb_flipped_unknown"] == 3
    assert d["overall"]["observed"] == {"proved": 2, "refuted": 2, "unknown": 1}
    from rich.console import Console

    con = Console(record=True, width=200)
    render_table(agg, con)
    assert "PBA" in con.export_text()
    narrow = Console(record=True, width=80)          # two tables, every line within 80 columns
    render_table(agg, narrow)
    text = narrow.export_text()
    assert "group metrics" in text and "PBA-verified shares" in text
    assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text
    out = tmp_path / "pba.png"
    write_chart(agg, out)
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("which", ["x", "p"])
def test_robustness_accuracy_matches_the_grid(which):
    from fairspec.backends.pba import decide_robust

    net, U, Up, cols, scale, lo, hi, ints, cls = _cases(8, P=40, box=3.0)
    sigma = np.where(cls == 1, 1.0, -1.0)
    tc = make_cases(net, U, Up, cols, scale, lo, hi, ints, sigma)
    bx, bp = copy_bounds(tc, tc.C), copy_bounds(tc, tc.Cp)
    b, o = (bx, bp) if which == "x" else (bp, bx)
    for kw in ({}, {"bab_boxes": 0}):
        dec = decide_robust(tc, b, which, other=o, time_limit=30, **kw)
        C = tc.C if which == "x" else tc.Cp
        for i in range(tc.P):
            G = _grid(tc.lo[i], tc.hi[i], ints, 61)
            sg = tc.sigma[i] * tc.g(C[[i]], G[None])[0]
            if dec.status[i] == "proved":
                assert sg.min() > 0
            elif dec.status[i] == "refuted":
                d = dec.D[i]
                v = tc.sigma[i] * tc.g(C[[i]], d[None])[0]
                assert (v <= 0) if tc.sigma[i] > 0 else (v < 0)
        assert (dec.status == "unknown").sum() == 0


def _agg_row(group: str) -> dict:
    c = {"eligible": 5, "proved": 2, "refuted": 2, "unknown": 1, "eligible_desirable": 3, "eligible_undesirable": 2}
    return {"group": group, "n": 12345678, "sp": 0.123, "tpr": 0.5, "cfa": 1.0, "rb_observed": 0.3333,
            "rb_flipped": None, "pba_observed": 0.3, "pba_observed_desirable": 0.2, "pba_observed_undesirable": 0.1,
            "pba_flipped": 0.3, "pba_flipped_desirable": 0.2, "pba_flipped_undesirable": 0.1,
            "observed_counts": c, "flipped_counts": c}


_LONG = "sex=female and a rather long name of a group " * 2
_HOSTILE_GROUPS = [_LONG, "M", "$25k-$50k", "$\\frac{$", "x ::error::pwned"]


@pytest.mark.parametrize("width", [40, 60, 75, 80, 100, 200])
def test_pba_table_folds_never_cuts(width):
    """On any console the PBA table cuts no value with an ellipsis (rich squeezed the group column to
    nothing and printed ``1234…``): the number columns are as wide as their longest value, the group
    column folds a long name; a console too narrow for the numbers gets one block per group. A
    name never starts a line (a CI log reads a line starting ``::`` as a workflow command)."""
    from rich.console import Console

    d = {"groups": _HOSTILE_GROUPS, "rows": [_agg_row(g) for g in _HOSTILE_GROUPS], "overall": {}}
    con = Console(record=True, width=width)
    render_table(d, con, title="p: PBA by sex")
    text = con.export_text()
    assert "…" not in text
    for v in ("12345678", "12.3%", "100.0%", "33.3%", "20.0%/10.0%", "PBA obs", "(des./undes.)", "undecided"):
        assert v in text, (v, text)
    # the group column, read down (a folded name is whole once its cell's lines are joined)
    column = "".join(x.split("│")[1] if x.startswith("│") else x[len("group "):] if x.startswith("group ") else "|"
                     for x in text.splitlines())
    for g in _HOSTILE_GROUPS:
        assert "".join(g.split()) in "".join(column.split()), (g, text)
    assert not [x for x in text.splitlines() if x.lstrip().startswith("::")], text
    tables = [x for x in text.splitlines() if not x.startswith("group ")]
    assert max(len(x.rstrip()) for x in tables) <= width, text


def test_pba_chart_draws_dollar_signs_as_written(tmp_path):
    """``chart = "file.png"`` (write_chart outside the HTML report) draws a group ``"$25k-$50k"`` as
    written, not as mathtext in math italics, and a group ``"$\\frac{$"`` does not fail the chart."""
    import io

    import matplotlib

    d = {"groups": _HOSTILE_GROUPS, "rows": [_agg_row(g) for g in _HOSTILE_GROUPS], "overall": {}}
    out = tmp_path / "pba.png"
    write_chart(d, out, title="p: PBA by $sex$")
    assert out.read_bytes()[:4] == b"\x89PNG"
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # the SVG keeps the text as text
        write_chart(d, buf, title="p: PBA by $sex$", fmt="svg")
    svg = buf.getvalue().decode()
    assert "$25k-$50k" in svg and "$\\frac{$" in svg and "p: PBA by $sex$" in svg
    assert matplotlib.rcParams["text.parse_math"]  # the caller's settings are left as they were
