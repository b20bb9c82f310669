"""fairspec's group metrics agree with fairlearn and AIF360 to 1e-9 where the definitions coincide.

fairspec defines every metric from weighted cell counts (fairspec.analyses.group_rates);
the libraries compute from per-row arrays.  Both sides get the same labels, decisions,
groups and sample weights: a random table with three groups and weights, and the Adult
example's MLP decisions read through fairspec's own runtime (test_metrics_pandas checks
those decisions against an independent pipeline).

Where the definitions differ only in convention the comparison says how: AIF360's
differences are signed (unprivileged - privileged) and its ratios unprivileged /
privileged, fairspec's are the absolute gap and the lowest over the highest.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from conftest import EXAMPLES

fm = pytest.importorskip("fairlearn.metrics")
pd = pytest.importorskip("pandas")
sk = pytest.importorskip("sklearn.metrics")

from fairspec.analyses.group_rates import BETWEEN, OVERALL, metric_value  # noqa: E402

TOL = 1e-9


def _cells(g, d, y, w=None, G=None):
    G = int(g.max()) + 1 if G is None else G
    return np.bincount(g * 4 + d * 2 + y, weights=w, minlength=G * 4).reshape(G, 2, 2).astype(np.float64)


def _ours(metric, g, d, y, w=None, mode=BETWEEN, **kw):
    return float(metric_value(metric, _cells(g, d, y, w), mode, **kw)[0])


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(7)
    n = 3000
    g = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    y = (rng.random(n) < np.array([0.3, 0.45, 0.2])[g]).astype(np.int64)
    d = (rng.random(n) < 0.25 + 0.4 * y - 0.1 * g).astype(np.int64)
    w = rng.gamma(2.0, 1.5, size=n)
    return g, d, y, w


# fairspec metric -> fairlearn function (same definition, both comparison modes, with sample weights)
FAIRLEARN = {
    "statistical_parity": fm.demographic_parity_difference,
    "disparate_impact": fm.demographic_parity_ratio,
    "equalized_odds": fm.equalized_odds_difference,
    "equalized_odds_ratio": fm.equalized_odds_ratio,
    "equal_opportunity": fm.equal_opportunity_difference,
    "equal_opportunity_ratio": fm.equal_opportunity_ratio,
    "false_negative_rate_difference": fm.false_negative_rate_difference,
    "false_negative_rate_ratio": fm.false_negative_rate_ratio,
    "false_positive_rate_difference": fm.false_positive_rate_difference,
    "false_positive_rate_ratio": fm.false_positive_rate_ratio,
    "accuracy_difference": fm.accuracy_score_difference,
    "accuracy_ratio": fm.accuracy_score_ratio,
    "error_rate_difference": fm.zero_one_loss_difference,
    "error_rate_ratio": fm.zero_one_loss_ratio,
}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("mode", [BETWEEN, OVERALL])
@pytest.mark.parametrize("metric", sorted(FAIRLEARN))
def test_fairlearn_functions(table, metric, mode, weighted):
    g, d, y, w = table
    w = w if weighted else None
    ref = FAIRLEARN[metric](y, d, sensitive_features=g, method=mode, sample_weight=w)
    assert abs(_ours(metric, g, d, y, w, mode) - ref) <= TOL, (metric, mode, ref)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("mode", [BETWEEN, OVERALL])
def test_fairlearn_metricframe(table, mode, weighted):
    """Precision (PPV), FDR, FOR and the mean-of-odds aggregation through MetricFrame / agg = 'mean'."""
    g, d, y, w = table
    w = w if weighted else None
    sp = {"sample_weight": w} if weighted else None

    def frame(fn):
        return fm.MetricFrame(metrics=fn, y_true=y, y_pred=d, sensitive_features=g, sample_params=sp)

    ppv = frame(lambda a, b, sample_weight=None: sk.precision_score(a, b, sample_weight=sample_weight))
    assert abs(_ours("predictive_parity_difference", g, d, y, w, mode) - ppv.difference(method=mode)) <= TOL
    assert abs(_ours("predictive_parity_ratio", g, d, y, w, mode) - ppv.ratio(method=mode)) <= TOL

    def fdr(a, b, sample_weight=None):
        return 1.0 - sk.precision_score(a, b, sample_weight=sample_weight)

    def for_(a, b, sample_weight=None):  # false omission: label 1 among decision 0
        return 1.0 - sk.precision_score(1 - a, 1 - b, sample_weight=sample_weight)

    assert abs(_ours("false_discovery_rate_difference", g, d, y, w, mode) - frame(fdr).difference(method=mode)) <= TOL
    assert abs(_ours("false_discovery_rate_ratio", g, d, y, w, mode) - frame(fdr).ratio(method=mode)) <= TOL
    assert abs(_ours("false_omission_rate_difference", g, d, y, w, mode) - frame(for_).difference(method=mode)) <= TOL
    assert abs(_ours("false_omission_rate_ratio", g, d, y, w, mode) - frame(for_).ratio(method=mode)) <= TOL
    ref = fm.equalized_odds_difference(y, d, sensitive_features=g, method=mode, sample_weight=w, agg="mean")
    assert abs(_ours("average_odds_difference", g, d, y, w, mode) - ref) <= TOL


# ------------------------------------------------------------------ AIF360 (two groups)

def _aif(g, d, y, w):
    logging.getLogger().setLevel(logging.ERROR)  # aif360 logs the optional algorithms it cannot import
    ds_mod = pytest.importorskip("aif360.datasets")
    mt = pytest.importorskip("aif360.metrics")
    df = pd.DataFrame({"g": g.astype(float), "y": y.astype(float)})
    truth = ds_mod.BinaryLabelDataset(df=df, label_names=["y"], protected_attribute_names=["g"],
                                      favorable_label=1.0, unfavorable_label=0.0, instance_weights_name=None)
    truth.instance_weights = np.ones(len(g)) if w is None else w.astype(float)
    pred = truth.copy(deepcopy=True)
    pred.labels = d.astype(float).reshape(-1, 1)
    un, pr = [{"g": 0.0}], [{"g": 1.0}]
    return (mt.ClassificationMetric(truth, pred, unprivileged_groups=un, privileged_groups=pr),
            mt.BinaryLabelDatasetMetric(truth, unprivileged_groups=un, privileged_groups=pr))


def _two(table):
    g, d, y, w = table
    keep = g < 2
    return g[keep], d[keep], y[keep], w[keep]


AIF_DIFF = {  # fairspec -> AIF360 signed difference (unprivileged - privileged)
    "statistical_parity": "statistical_parity_difference",
    "equal_opportunity": "equal_opportunity_difference",
    "false_discovery_rate_difference": "false_discovery_rate_difference",
    "false_omission_rate_difference": "false_omission_rate_difference",
    "false_negative_rate_difference": "false_negative_rate_difference",
    "false_positive_rate_difference": "false_positive_rate_difference",
    "error_rate_difference": "error_rate_difference",
    "average_odds_difference": "average_abs_odds_difference",
}
AIF_RATIO = {  # fairspec -> AIF360 ratio (unprivileged / privileged)
    "disparate_impact": "disparate_impact",
    "false_discovery_rate_ratio": "false_discovery_rate_ratio",
    "false_omission_rate_ratio": "false_omission_rate_ratio",
    "false_negative_rate_ratio": "false_negative_rate_ratio",
    "false_positive_rate_ratio": "false_positive_rate_ratio",
    "error_rate_ratio": "error_rate_ratio",
}


@pytest.mark.parametrize("weighted", [False, True])
def test_aif360_classification_metric(table, weighted):
    g, d, y, w = _two(table)
    w = w if weighted else None
    cm, dm = _aif(g, d, y, w)
    for ours, theirs in AIF_DIFF.items():
        assert abs(_ours(ours, g, d, y, w) - abs(getattr(cm, theirs)())) <= TOL, ours
    for ours, theirs in AIF_RATIO.items():
        r = getattr(cm, theirs)()
        assert abs(_ours(ours, g, d, y, w) - min(r, 1.0 / r)) <= TOL, ours
    ppv = [cm.positive_predictive_value(privileged=p) for p in (False, True)]
    assert abs(_ours("predictive_parity_difference", g, d, y, w) - abs(ppv[0] - ppv[1])) <= TOL
    assert abs(_ours("predictive_parity_ratio", g, d, y, w) - min(ppv) / max(ppv)) <= TOL
    # bias in the data itself: the labels' base rates
    base = [dm.base_rate(privileged=p) for p in (False, True)]
    assert abs(_ours("base_rate_difference", g, d, y, w) - abs(base[0] - base[1])) <= TOL
    r = dm.disparate_impact()
    assert abs(_ours("base_rate_ratio", g, d, y, w) - min(r, 1.0 / r)) <= TOL
    assert abs(_ours("disparate_impact", g, y, y, w) - min(r, 1.0 / r)) <= TOL  # labels as decisions


def test_aif360_inequality_indices(table):
    """The individual-level indices of the benefit b = decision - label + 1 (AIF360 ignores weights here)."""
    g, d, y, _ = _two(table)
    cm, _ = _aif(g, d, y, None)
    for alpha in (0.5, 2.0, 3.0):
        assert abs(_ours("generalized_entropy_index", g, d, y, alpha=alpha)
                   - cm.generalized_entropy_index(alpha=alpha)) <= TOL
        assert abs(_ours("between_group_generalized_entropy_index", g, d, y, alpha=alpha)
                   - cm.between_group_generalized_entropy_index(alpha=alpha)) <= TOL
    assert abs(_ours("theil_index", g, d, y) - cm.theil_index()) <= TOL
    assert abs(_ours("between_group_theil_index", g, d, y) - cm.between_group_theil_index()) <= TOL


def test_calibration_gap_brute_force(table):
    """ECE per group from the (group, bin, label) counts equals the per-row definition."""
    g, _, y, w = table
    s = np.random.default_rng(3).random(len(g)) ** 1.5
    B = 10
    b = np.minimum((s * B).astype(int), B - 1)
    G = 3
    bins = np.bincount((g * B + b) * 2 + y, weights=w, minlength=G * B * 2).reshape(G, B, 2)
    sums = np.bincount(g * B + b, weights=s * w, minlength=G * B).reshape(G, B)
    value, per = metric_value("calibration_gap", _cells(g, y, y, w), BETWEEN, bins=bins, score_sums=sums)
    ref = []
    for k in range(G):
        m = g == k
        e = 0.0
        for j in range(B):
            mm = m & (b == j)
            if w[mm].sum():
                e += w[mm].sum() / w[m].sum() * abs(np.average(s[mm], weights=w[mm]) - np.average(y[mm], weights=w[mm]))
        ref.append(e)
    assert np.allclose(per, ref, atol=TOL, rtol=0)
    assert abs(float(value) - (max(ref) - min(ref))) <= TOL


# ------------------------------------------------------------------ the Adult example, end to end

ADULT_PROPS = """
property sp { statistical_parity(mlp, groups sex x race) <= 0.1  min_group_size = 1 }
property ppv { predictive_parity_difference(mlp, groups race) <= 0.1  min_group_size = 1  weight = fnlwgt }
property eo { equalized_odds(mlp, groups race) <= 0.1  min_group_size = 1  compare = to_overall }
property acc { accuracy_ratio(mlp, groups sex) >= 0.8  weight = fnlwgt  compare = to_overall }
property fnr { false_negative_rate_difference(mlp, groups sex x race)  <= 0.1  min_group_size = 1 }
"""


def test_adult_against_fairlearn(tmp_path):
    """The real Adult runtime (CSV reader, encoding, ONNX model) then fairspec's counts vs fairlearn."""
    from fairspec.backends.data.groups import assign
    from fairspec.backends.data.metrics import count, evaluate_counts, subject_decisions
    from fairspec.runtime.context import Context
    from fairspec.sema.check import check_file

    src = (EXAMPLES / "adult" / "adult.fair").read_text()
    spec = tmp_path / "adult.fair"
    body = src.replace('"data/', f'"{EXAMPLES / "adult" / "data"}/').replace('"models/', f'"{EXAMPLES / "adult" / "models"}/')
    body = "\n".join(l for l in body.split("group older")[0].splitlines() if not l.startswith("import"))
    spec.write_text(body + ADULT_PROPS)
    res = check_file(spec)
    assert res.spec is not None, res.diagnostics
    ctx = Context(res.spec)
    props = {p.name: p for p in res.spec.properties}
    refs = {"sp": lambda y, d, s, w: fm.demographic_parity_difference(y, d, sensitive_features=s),
            "eo": lambda y, d, s, w: fm.equalized_odds_difference(y, d, sensitive_features=s, method="to_overall"),
            "acc": lambda y, d, s, w: fm.accuracy_score_ratio(y, d, sensitive_features=s, method="to_overall",
                                                                sample_weight=w),
            "fnr": lambda y, d, s, w: fm.false_negative_rate_difference(y, d, sensitive_features=s)}
    for name, prop in props.items():
        rows = ctx.rows(prop.features, prop.data)
        y = rows.labels.astype(np.int64)
        d = subject_decisions(prop, ctx, rows, rows.frame.values, rows.frame.n_rows, y)
        idx, _ = assign(prop.groups, ctx.spec.feature_set(prop.features), rows.frame.values, rows.frame.n_rows)
        w = rows.numeric("fnlwgt") if prop.options.get("weight") else None
        c = count(prop, ctx)
        value = float(evaluate_counts(prop, c.cells, c.sizes > 0)[0])
        if name == "ppv":
            sp = {"sample_weight": w}
            mf = fm.MetricFrame(metrics=lambda a, b, sample_weight=None: sk.precision_score(
                a, b, sample_weight=sample_weight, zero_division=np.nan), y_true=y, y_pred=d,
                sensitive_features=idx, sample_params=sp)
            ref = float(np.nanmax(mf.by_group) - np.nanmin(mf.by_group))
        else:
            ref = refs[name](y, d, idx, w)
        assert abs(value - ref) <= TOL, (name, value, ref)


def test_individual_indices_read_no_group_size(tmp_path):
    """theil_index and generalized_entropy_index are over individuals (AIF360's, which take no groups):
    groups only split their table, so groups under min_group_size or exclude_below neither make the
    verdict unknown nor leave rows out, and the value is AIF360's over every row. A between-group index
    compares the groups' mean benefits, so a group too small to judge still makes it unknown."""
    from conftest import FIXTURES, people_decls
    from fairspec.pipeline import check

    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "specs").mkdir()
    (tmp_path / "data" / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    p = tmp_path / "specs" / "s.fair"
    small = "min_group_size = 100  exclude_below = 0.2"       # every sex x race group has 66 or 67 of 400 rows
    p.write_text(people_decls() + "model r = rule(member)\n"
                 f"property t {{ theil_index(r, groups sex x race) <= 1  {small} }}\n"
                 f"property ge {{ generalized_entropy_index(r, groups sex x race, alpha = 3) <= 1  {small} }}\n"
                 "property t_all { theil_index(r) <= 1 }\n"
                 f"property bt {{ between_group_theil_index(r, groups sex x race) <= 1  {small} }}\n")
    v = {x.name: x for x in check(p).verdicts}
    rows = pd.read_csv(tmp_path / "data" / "people.csv")
    d = rows["member"].astype(str).str.lower().eq("true").to_numpy().astype(np.int64)
    y = rows["hired"].eq("yes").to_numpy().astype(np.int64)
    g = rows["sex"].eq("M").to_numpy().astype(np.int64)
    cm, _ = _aif(g, d, y, None)
    for name, ref in (("t", cm.theil_index()), ("ge", cm.generalized_entropy_index(alpha=3)),
                      ("t_all", cm.theil_index())):
        x = v[name]
        assert (x.status, x.how) == ("holds", "estimated"), (name, x.status, x.reason)
        assert abs(x.value - ref) <= TOL, (name, x.value, ref)
        assert "min_group_size" not in x.details and "excluded_groups" not in x.details
        assert all(r["counted"] and not r.get("excluded") for r in x.details["groups"])
    assert len(v["t"].details["groups"]) == 6 and sum(r["rows"] for r in v["t"].details["groups"]) == 400
    assert v["bt"].status == "unknown" and "min_group_size" in v["bt"].reason
