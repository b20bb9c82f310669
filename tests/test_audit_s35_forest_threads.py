"""Session 35 audit (h3): a scikit-learn forest with n_jobs != 1 sums its trees in the order its threads finish.

RandomForest / ExtraTrees ``predict_proba`` adds each tree's output into one array under a lock, in the order the
threads finish (``_accumulate_prediction``), so with ``n_jobs = 2`` two calls on the same input can differ in the
last bits: at a tie the model has no one output. Below, a forest of 4 trees never reads g (it was constant in
training): with n_jobs = 1 every pair reaches the same leaves and sums them in the trees' order, so
``|prob(m(x)) - prob(m(x'))| <= 0`` holds (proved); with n_jobs = 2 the same sums in two orders differ (brute force
over every order of the trees, as sklearn adds them) and fairspec said the same `holds (proved)`, which is no proof
about the model. Now: unknown, naming n_jobs (fairspec.models.forest_threads). A forest whose every sum is exact in
every order (fully grown trees: leaves 0 / 1) is one function whatever n_jobs says, and is decided as before."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("skops")

SPEC = """features F {
  a : int in [0, 5]
  g : {A, B} protected
}
model m = sklearn("m.skops")
encode F for m {
  a : raw
  g : code {A = 0, B = 1}
}
property pr {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure |prob(m(x)) - prob(m(x'))| <= EPS
}
"""
GRID = np.array(list(itertools.product(range(6), range(2))), dtype=float)


def _forest(n_jobs, *, leaf=3, depth=2, trees=4, seed=0, g_read=False, cls=None, noise=2.0):
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, 60)
    g = rng.integers(0, 2, 60) if g_read else np.zeros(60)
    y = (a + (g if g_read else 0) + rng.normal(0, noise, 60) > 2.5).astype(int)
    cls = cls or RandomForestClassifier
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(n_estimators=trees, min_samples_leaf=leaf, max_depth=depth, random_state=seed,
                   n_jobs=n_jobs).fit(np.column_stack([a, g]).astype(float), y)


def _every_order(rf, X):
    """predict_proba[:, 1] of X as sklearn's forest computes it, under every order of its trees (rows: orders)."""
    P = [t.predict_proba(X) for t in rf.estimators_]
    out = []
    for perm in itertools.permutations(range(len(P))):
        s = np.zeros_like(P[0])
        for i in perm:
            s += P[i]
        s /= len(P)
        out.append(s[:, 1])
    return np.array(out)


def _check(tmp_path, rf, eps="0", monkeypatch=None):
    import skops.io as sio

    import fairspec

    sio.dump(rf, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(SPEC.replace("EPS", eps))
    rep = fairspec.check(tmp_path / "s.fair")
    assert rep.exit_code != 4 and not rep.report.internal_errors, rep.report.internal_errors
    v = rep["pr"]
    return (v.status.value if hasattr(v.status, "value") else str(v.status)), str(v.reason)


@pytest.mark.parametrize("enumerate_pairs", [None, "0"])
def test_threaded_forest_whose_sums_depend_on_order_is_unknown(tmp_path, monkeypatch, enumerate_pairs):
    if enumerate_pairs is not None:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    rf = _forest(2)
    O = _every_order(rf, GRID)
    # g is never read: in one order x and x' get one number ...
    assert all(np.array_equal(rf.estimators_[0].apply(GRID[i:i + 1]), rf.estimators_[0].apply(GRID[i + 1:i + 2]))
               for i in range(0, 12, 2))
    # ... but two orders give two: x summed in one, x' in another violate |p(x) - p(x')| <= 0
    assert (O.max(axis=0) > O.min(axis=0)).any()
    status, reason = _check(tmp_path, rf)
    assert status == "unknown", (status, reason)                # before: holds (proved)
    assert "n_jobs = 2" in reason and "n_jobs = 1" in reason, reason


def test_same_forest_with_one_thread_is_decided_as_before(tmp_path):
    """n_jobs = 1 (and None): the trees add in their order, bit for bit fairspec's: holds, as before."""
    for n_jobs in (1, None):
        rf = _forest(n_jobs)
        O = rf.predict_proba(GRID)[:, 1]
        assert all(O[i] == O[i + 1] for i in range(0, 12, 2))
        status, reason = _check(tmp_path, rf)
        assert status == "holds", (n_jobs, status, reason)


@pytest.mark.parametrize("n_jobs", [2, -1])
def test_threaded_forest_of_exact_sums_is_decided_as_before(tmp_path, n_jobs):
    """Fully grown trees on labels without noise (pure leaves: 0 / 1): every order gives the same sum (brute force), so n_jobs changes nothing:
    the verdict is the one of the same forest with n_jobs = 1, and brute force's."""
    for g_read, trees in ((False, 5), (True, 3)):
        rf = _forest(n_jobs, leaf=1, depth=None, trees=trees, g_read=g_read, seed=1, noise=0.0)
        O = _every_order(rf, GRID)
        assert np.array_equal(O.max(axis=0), O.min(axis=0))
        truth = "holds" if all(O[0, i] == O[0, i + 1] for i in range(0, 12, 2)) else "violated"
        status, reason = _check(tmp_path, rf)
        assert status == truth, (g_read, status, truth, reason)
        rf.n_jobs = 1
        assert _check(tmp_path, rf)[0] == truth


def test_two_trees_are_one_order(tmp_path):
    """A sum of two tree outputs added into zeros is commutative: n_jobs does not matter (decided as before)."""
    rf = _forest(2, trees=2)
    O = _every_order(rf, GRID)
    assert np.array_equal(O.max(axis=0), O.min(axis=0))
    assert _check(tmp_path, rf)[0] == "holds"


@pytest.mark.parametrize("how", ["skops", "pickle", "pipeline"])
def test_lint_warns_of_a_threaded_forest(tmp_path, how):
    """FS440 (a warning) at the model declaration: read from the file inertly (nothing runs); none with n_jobs = 1."""
    import pickle

    import skops.io as sio

    import fairspec

    for n_jobs, want in ((2, ["FS440"]), (1, []), (None, [])):
        rf = _forest(n_jobs, trees=3)
        if how == "pipeline":
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import FunctionTransformer

            rf = make_pipeline(FunctionTransformer(), rf)
        if how == "pickle":
            pickle.dump(rf, open(tmp_path / "m.pkl", "wb"))
            spec = SPEC.replace("sklearn(\"m.skops\")", "sklearn(\"m.pkl\", trust pickle)")
        else:
            sio.dump(rf, tmp_path / "m.skops")
            spec = SPEC
        (tmp_path / "s.fair").write_text(spec.replace("EPS", "0"))
        res = fairspec.lint(tmp_path / "s.fair")
        diags = res if isinstance(res, list) else res.diagnostics
        got = [d for d in diags if d.code == "FS440"]
        assert [d.code for d in got] == want, (n_jobs, [(d.code, d.message) for d in diags])
        if got:
            assert got[0].severity == "warning" and "n_jobs = 2" in got[0].message and got[0].span.line == 5


def _other(kind):
    from sklearn.ensemble import (ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor,
                                  VotingClassifier)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    a = rng.integers(0, 6, 60)
    X = np.column_stack([a, np.zeros(60)]).astype(float)
    y = (a + rng.normal(0, 2, 60) > 2.5).astype(int)
    kw = dict(n_estimators=3, min_samples_leaf=3, max_depth=2, random_state=0, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "regressor":
            return RandomForestRegressor(**kw).fit(X, a + rng.normal(0, 1, 60)), "|value(m(x)) - value(m(x'))| <= 0"
        if kind == "multiclass":
            return RandomForestClassifier(**kw).fit(X, np.clip((a + rng.normal(0, 2, 60)) // 2, 0, 2)), "class(m(x)) == class(m(x'))"
        if kind == "extratrees":
            return ExtraTreesClassifier(**kw).fit(X, y), "|prob(m(x)) - prob(m(x'))| <= 0"
        if kind == "pipeline":
            return make_pipeline(StandardScaler(), RandomForestClassifier(**kw)).fit(X, y), "label(m(x)) == label(m(x'))"
        return VotingClassifier([("rf", RandomForestClassifier(**kw)), ("lr", LogisticRegression())],
                                voting="soft").fit(X, y), "|prob(m(x)) - prob(m(x'))| <= 0"


@pytest.mark.parametrize("kind", ["regressor", "multiclass", "extratrees", "pipeline", "voting"])
def test_every_reading_of_an_order_dependent_threaded_forest_is_unknown(tmp_path, kind):
    """At a tie (eps = 0, g unread: sums differing between orders) or where no margin argument is made (a class or
    label post; a soft vote's forest, whose output is not the forest's own) the property is unknown, naming n_jobs:
    a regressor, a multiclass forest, ExtraTrees, a pipeline's forest, a soft vote's forest."""
    import skops.io as sio

    import fairspec

    from fairspec.models.forest_threads import order_free, threaded_forests

    est, post = _other(kind)
    forests = threaded_forests(est)
    assert len(forests) == 1 and not order_free(forests[0])
    sio.dump(est, tmp_path / "m.skops")
    spec = SPEC.replace("|prob(m(x)) - prob(m(x'))| <= EPS", post)
    (tmp_path / "s.fair").write_text(spec)
    rep = fairspec.check(tmp_path / "s.fair")
    assert not rep.report.internal_errors, rep.report.internal_errors
    v = rep["pr"]
    status = v.status.value if hasattr(v.status, "value") else str(v.status)
    assert status == "unknown" and "n_jobs = 2" in str(v.reason), (status, v.reason)


def _truth(O, eps, op):
    """(holds in every two orders, violated in every two orders) of |r(x) - r(x')| op eps over the pairs (brute
    force: O holds every order's outputs, x and x' each summed in any order)."""
    from fractions import Fraction

    ok = (lambda d: d <= eps) if op == "<=" else (lambda d: d < eps)
    eps = Fraction(eps)
    holds, violated = True, False
    for i in range(0, O.shape[1], 2):
        a, b = [Fraction(float(v)) for v in set(O[:, i])], [Fraction(float(v)) for v in set(O[:, i + 1])]
        diffs = [abs(p - q) for p in a for q in b]
        holds &= all(ok(d) for d in diffs)
        violated |= not any(ok(d) for d in diffs)
    return holds, violated


@pytest.mark.parametrize("trees, g_read, seed", [(3, False, 1), (3, True, 0), (7, False, 0), (6, True, 0)])
def test_threaded_forest_decided_by_a_margin_agrees_with_every_order(tmp_path, monkeypatch, trees, g_read, seed):
    """|prob(m(x)) - prob(m(x'))| op eps of an order-dependent threaded forest: holds (proved) only where every two
    orders hold (margin: eps - 2E proved in the trees' order), violated only where every two orders violate, unknown
    at a tie (eps the trees' order's own difference, eps = 0 where the sums differ); both solver paths."""
    rf = _forest(2, trees=trees, g_read=g_read, seed=seed)
    O = _every_order(rf, GRID)
    assert (O.max(axis=0) > O.min(axis=0)).any()                # order-dependent
    in_order = max(abs(O[0, i] - O[0, i + 1]) for i in range(0, 12, 2))
    seen = set()
    for enumerate_pairs in (None, "0"):
        if enumerate_pairs:
            monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
        for eps, op in (("0", "<="), ("0.01", "<="), ("0.95", "<"), (repr(float(in_order)), "<="),
                        (repr(float(in_order)), "<")):
            if float(eps) == 0 and op == "<":
                continue
            spec = SPEC.replace("<= EPS", f"{op} {eps}")
            import skops.io as sio

            import fairspec

            sio.dump(rf, tmp_path / "m.skops")
            (tmp_path / "s.fair").write_text(spec)
            rep = fairspec.check(tmp_path / "s.fair")
            assert not rep.report.internal_errors, rep.report.internal_errors
            v = rep["pr"]
            holds, violated = _truth(O, float(eps), op)
            status = v.status.value if hasattr(v.status, "value") else str(v.status)
            seen.add(status)
            assert status != "holds" or (holds and v.how == "proved"), (eps, op, status, v.reason)
            assert status != "violated" or violated, (eps, op, status, v.reason)
            assert status != "unknown" or "n_jobs = 2" in str(v.reason), v.reason
            if eps == "0.01" and not g_read:
                assert status == "holds", v.reason                  # g unread: every order within 2E << 0.01
            if eps == repr(float(in_order)) and op == "<=" and not holds:
                assert status == "unknown", v.reason                # the tie: no margin
    assert "unknown" in seen and len(seen) >= 2


@pytest.mark.parametrize("kind, post", [("regressor", "|value(m(x)) - value(m(x'))| <= 0.01"),
                                        ("pipeline", "|prob(m(x)) - prob(m(x'))| <= 0.01")])
def test_margin_decides_a_regressor_and_a_pipelines_forest(tmp_path, kind, post):
    """g unread, every order within 2E << 0.01 of the trees' order: holds (proved), with the note saying so."""
    import skops.io as sio

    import fairspec

    est, _ = _other(kind)
    sio.dump(est, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(SPEC.replace("|prob(m(x)) - prob(m(x'))| <= EPS", post))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not rep.report.internal_errors, rep.report.internal_errors
    v = rep["pr"]
    assert (v.status, v.how) == ("holds", "proved"), (v.status, v.reason)
    assert "in every order" in " ".join((v.details or {}).get("notes", [])), v.details


def test_a_margin_decision_leaves_the_next_property_unknown(tmp_path):
    """The forest is on one thread only while its margin decision runs: a label property after it (no margin
    argument) is still unknown, never decided from what the first one read (its trees, cells, boxes)."""
    import skops.io as sio

    import fairspec

    sio.dump(_forest(2), tmp_path / "m.skops")
    spec = SPEC.replace("EPS", "0.01") + SPEC[SPEC.index("property"):].replace("property pr", "property lab").replace(
        "|prob(m(x)) - prob(m(x'))| <= EPS", "label(m(x)) == label(m(x'))")
    (tmp_path / "s.fair").write_text(spec)
    rep = fairspec.check(tmp_path / "s.fair")
    assert not rep.report.internal_errors, rep.report.internal_errors
    assert rep["pr"].status == "holds" and rep["lab"].status == "unknown", (rep["lab"].status, rep["lab"].reason)
    assert "n_jobs = 2" in rep["lab"].reason


def test_twenty_threaded_trees_against_sampled_orders(tmp_path):
    """20 trees (20! orders: 300 sampled, as sklearn adds them): g read, eps between the pairs' differences --
    fairspec's verdict is the one every sampled order gives, and eps = 0 on a forest blind to g is unknown."""
    import skops.io as sio

    import fairspec

    rf = _forest(-1, trees=20, g_read=True, seed=3)
    P = [t.predict_proba(GRID)[:, 1] for t in rf.estimators_]
    rng = np.random.default_rng(0)
    outs = []
    for _ in range(300):
        s = np.zeros(len(GRID))
        for i in rng.permutation(20):
            s += P[i]
        outs.append(s / 20)
    O = np.array(outs)
    diffs = np.abs(O[:, 0::2] - O[:, 1::2])
    eps = float(np.round((diffs.min() + diffs.max()) / 2, 3))
    assert (diffs > eps).any(axis=1).all()                      # every sampled order violates eps
    sio.dump(rf, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(SPEC.replace("EPS", repr(eps)))
    v = fairspec.check(tmp_path / "s.fair")["pr"]
    assert v.status == "violated", v.reason
    rf = _forest(-1, trees=20, seed=3)
    sio.dump(rf, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(SPEC.replace("EPS", "0"))
    v = fairspec.check(tmp_path / "s.fair")["pr"]
    assert v.status == "unknown" and "n_jobs = -1" in v.reason, v.reason


def test_label_violated_only_with_a_witness_away_from_ties(tmp_path):
    """label(m(x)) == label(m(x')) of an order-dependent threaded forest reading g: violated with a witness whose
    labels differ in every order (brute force), and g unread (holds in the trees' order): unknown."""
    import skops.io as sio

    import fairspec

    for g_read in (True, False):
        rf = _forest(2, trees=4, g_read=g_read, seed=0)
        sio.dump(rf, tmp_path / "m.skops")
        (tmp_path / "s.fair").write_text(SPEC.replace("|prob(m(x)) - prob(m(x'))| <= EPS", "label(m(x)) == label(m(x'))"))
        v = fairspec.check(tmp_path / "s.fair")["pr"]
        if not g_read:
            assert v.status == "unknown" and "n_jobs = 2" in v.reason, v.reason
            continue
        assert v.status == "violated", v.reason
        w = np.array([v.witness.x, v.witness.x_prime])
        P = [t.predict_proba(w) for t in rf.estimators_]
        labels = set()
        for perm in itertools.permutations(range(len(P))):      # predict: the first largest column, every order
            s = np.zeros_like(P[0])
            for k in perm:
                s += P[k]
            labels.add(tuple(np.argmax(s / len(P), axis=1)))
        assert len(labels) == 1 and len(set(next(iter(labels)))) == 2, labels
