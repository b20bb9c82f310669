"""Group metrics on data rows: logged decisions (`predictions(d, decision = ...)`, `predictions(d,
score = ..., threshold = 0.5)` with scores exactly at the threshold) and rules, with weights
(decimals such as 1.1) and missing values ("?" and empty cells: the row is dropped), rows
outside a feature's declared domain (dropped, FS410), single and crossed groups.

The truth is the metric of the rows as they are: pandas reads the file, every rate is a ratio
of exact Fractions (weights read as the decimals they are written as). The verdicts on data
are estimates (bootstrap intervals), so the judge asks: is the reported value the exact value,
is a `holds (estimated)` interval around it and on the right side of the threshold, is a
`violated` not contradicted by it? `unknown` here is a statistical answer, not a budget: these
properties have no finite domain (domain -1) and are outside the unknown target.
"""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np

from .core import Instance, Prop, Truth, claim_holds, decimal_text

FAMILY = "data"

DIFF = {"statistical_parity": "sel", "equal_opportunity": "tpr", "predictive_parity_difference": "ppv",
        "false_positive_rate_difference": "fpr", "false_negative_rate_difference": "fnr",
        "accuracy_difference": "acc"}
RATIO = {"disparate_impact": "sel", "error_rate_ratio": "err", "equal_opportunity_ratio": "tpr"}
LOWER_IS_FAIR = set(DIFF) | {"equalized_odds", "base_rate_difference"}


def _rates(df, dec, w, groups):
    """{group: {rate name: Fraction or None}} over the rows."""
    out = {}
    for key, g in df.groupby(groups, sort=True):
        d = dec[g.index]
        y = g["__y"].to_numpy()
        ww = w[g.index]
        tot = sum(ww, Fraction(0))
        pos = sum((a for a, b in zip(ww, d) if b), Fraction(0))
        lp = sum((a for a, b in zip(ww, y) if b), Fraction(0))
        ln = tot - lp
        tp = sum((a for a, b, c in zip(ww, d, y) if b and c), Fraction(0))
        fp = pos - tp
        correct = sum((a for a, b, c in zip(ww, d, y) if bool(b) == bool(c)), Fraction(0))
        r = {"sel": pos / tot if tot else None, "tpr": tp / lp if lp else None, "fpr": fp / ln if ln else None,
             "ppv": tp / pos if pos else None, "acc": correct / tot if tot else None,
             "base": lp / tot if tot else None}
        r["fnr"] = None if r["tpr"] is None else 1 - r["tpr"]
        r["err"] = None if r["acc"] is None else 1 - r["acc"]
        out[key if isinstance(key, tuple) else (key,)] = r
    return out


def _value(metric, rates):
    def vals(k):
        v = [r[k] for r in rates.values()]
        return None if any(x is None for x in v) else v
    if metric in DIFF:
        v = vals(DIFF[metric])
        return None if v is None else max(v) - min(v)
    if metric in RATIO:
        v = vals(RATIO[metric])
        return None if v is None or max(v) == 0 else min(v) / max(v)
    if metric == "equalized_odds":
        a, b = vals("tpr"), vals("fpr")
        return None if a is None or b is None else max(max(a) - min(a), max(b) - min(b))
    if metric == "base_rate_difference":
        v = vals("base")
        return None if v is None else max(v) - min(v)
    raise KeyError(metric)


def generate(seed: int, n_props: int = 6) -> Instance:
    import pandas as pd

    rng = np.random.default_rng([25, seed])
    n = int(rng.integers(60, 400))
    sexes = ["F", "M"]
    races = ["A", "B", "C"][:int(rng.integers(2, 4))]
    sex = rng.choice(sexes, n, p=[0.4, 0.6])
    race = rng.choice(races, n)
    age = rng.integers(18, 81, n)
    y = (rng.random(n) < 0.3 + 0.2 * (sex == "M")).astype(int)
    mode = str(rng.choice(["decision", "score", "rule"]))
    dec = (rng.random(n) < 0.35 + 0.15 * (sex == "M") + 0.1 * y).astype(int)
    score = np.round(rng.random(n) * 4) / 8 + 0.25                  # 0.25 .. 0.75 in steps of 1/8: some exactly 0.5
    weights = rng.choice(["1", "0.5", "2", "1.1", "0.25", "3", "1.5"], n) if rng.random() < 0.5 else None
    cols = {"sex": list(sex), "race": list(race), "age": [str(a) for a in age], "y": [str(v) for v in y],
            "dec": [str(v) for v in dec], "s": [repr(float(v)) for v in score]}
    if weights is not None:
        cols["w"] = list(weights)
    # missing values ("?" or empty) in read columns, and a few ages outside [18, 80]
    used = ["sex", "race", "age", "y"] + (["dec"] if mode == "decision" else ["s"] if mode == "score" else []) + \
        (["w"] if weights is not None else [])
    n_missing = int(rng.integers(0, 6))
    for _ in range(n_missing):            # only in columns every property reads (no reading of "which
        c = str(rng.choice(["sex", "race", "age", "y"]))   # columns count" is assumed)
        # an empty cell only in a text column: lint reads a numeric column with an empty cell as text (FS301
        # on `label = y == 1`; reported to the lead, not issue 20)
        cols[c][int(rng.integers(0, n))] = "?" if (rng.random() < 0.6 or c in ("age", "y")) else ""
    for _ in range(int(rng.integers(0, 3))):
        cols["age"][int(rng.integers(0, n))] = str(int(rng.choice([12, 95])))
    positive = None
    if seed >= MORE_METRICS_FROM and mode == "decision":    # session 33: the decisions spelt as words
        from .data_more import spell_decisions

        positive = spell_decisions(seed, cols)
    text = ",".join(cols) + "\n" + "\n".join(",".join(cols[c][i] for c in cols) for i in range(n)) + "\n"
    files = {"d.csv": text.encode()}

    # ---- the truth: the rows as pandas reads them, missing and out-of-domain rows dropped
    df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    keep = ~df.isin(["?", ""]).any(axis=1) if False else ~df[used].isin(["?", ""]).any(axis=1)
    df = df[keep]
    ages = df["age"].astype(int)
    df = df[(ages >= 18) & (ages <= 80)].reset_index(drop=True)
    df["__y"] = df["y"].astype(int) == 1
    w = [Fraction(v) for v in df["w"]] if weights is not None else [Fraction(1)] * len(df)
    w = np.array(w, dtype=object)
    if mode == "decision":
        if positive is None and seed < MORE_METRICS_FROM:
            decided = (df["dec"].astype(int) == 1).to_numpy()
        else:
            from .data_more import decided_from

            decided = decided_from(df["dec"], positive)
        decl = 'model m = predictions(d, decision = "dec"' + (f', positive = "{positive}")' if positive else ")")
    elif mode == "score":
        decided = np.array([Fraction(v) > Fraction(1, 2) for v in df["s"]])
        decl = 'model m = predictions(d, score = "s", threshold = 0.5)'
    else:
        a = int(rng.integers(30, 60))
        decided = ((df["age"].astype(int) >= a) & (df["race"] != races[0])).to_numpy() | \
            ((df["sex"] == "M") & (df["age"].astype(int) < 25)).to_numpy()
        decl = f"model m = rule((age >= {a} and race != {races[0]}) or (sex == M and age < 25))"
    spec = ('data d = csv("d.csv", missing = ["?"], label = y == 1)\n'
            "features P from d {\n  sex : {F, M}  protected\n  race : {" + ", ".join(races) + "}  protected\n"
            "  age : int in [18, 80]\n}\n" + decl + "\n")
    info = {"rows": n, "rows_kept": int(len(df)), "mode": mode, "weighted": weights is not None}
    props = []
    for k in range(n_props):
        crossed = rng.random() < 0.35
        groups = ["sex", "race"] if crossed else ["sex"]
        metric = str(rng.choice(list(DIFF) + list(RATIO) + ["equalized_odds", "base_rate_difference"]))
        unit = np.array([Fraction(1)] * len(df), dtype=object)
        rates = _rates(df, decided, unit if metric == "base_rate_difference" else w, groups)
        value = _value(metric, rates)
        if value is None:
            metric = "statistical_parity"
            value = _value(metric, rates)
        lower = metric in LOWER_IS_FAIR
        op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
        t = decimal_text(value)
        c = rng.random()
        if t is not None and c < 0.3:
            thr = t
        elif c < 0.7:
            thr = f"{float(value) + float(rng.choice([-0.3, -0.1, 0.1, 0.3])):.6g}"
        else:
            thr = str(rng.choice(["0.1", "0.2", "0.8", "0.5"]))
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1:                              # every metric here lies in [0, 1] (FS307)
            thr = "1"
        if metric in RATIO and op == ">" and Fraction(thr) >= 1:  # a ratio > 1 is never met: FS507 at lint
            op = ">="
        if lower and op == "<" and Fraction(thr) <= 0:  # a difference < 0 is never met: FS507 at lint
            op = "<="
        target = "d" if metric == "base_rate_difference" else "m"
        lines = [f"{metric}({target}, groups {' x '.join(groups)}) {op} {thr}"]
        if weights is not None and target == "m":
            lines.append("weight = w")
        lines += [f"bootstrap = {int(rng.choice([100, 200]))}", f"seed = {k}", "min_group_size = 1"]
        name = f"d{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=-1, exact=value,
                      note=f"exact value {value} over {len(df)} rows")
        props.append(Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr,
                                                      "mode": mode, "weighted": weights is not None,
                                                      "crossed": crossed, "point_value": True}, 60))
    inst = Instance(FAMILY, seed, spec, files, props, info)
    if seed >= OPTIONS_FROM:
        props += _option_props(seed, df, decided, w, weights is not None, n_props)
        inst.judge = _judge
        inst.spec = _output_props(seed, df, races, text, files, props, inst.spec)
    if seed >= MORE_METRICS_FROM:
        from .data_more import headerless, more_metric_props

        inst.spec = more_metric_props(seed, df, decided, w, weights is not None, props, inst.spec)
        inst.spec = headerless(seed, inst.files, inst.spec)
    if seed >= CALIB_FROM and mode == "score":      # session 34: calibration_gap on the scores, CSV and Parquet
        from .data_calib import calib_props

        props += calib_props(seed, df, w, weights is not None, races, inst.files, FAMILY, len(props))
    if seed >= CALIB_FROM:      # session 34: the same metrics on the rows a `where =` filter keeps (data_where.py)
        from .data_where import where_props

        props += where_props(seed, df, decided, w, weights is not None, races, inst.spec, FAMILY, len(props), _rates,
                             _value, LOWER_IS_FAIR)
        from .data_policy import policy_props       # and a shipped policy applied (data_policy.py)

        props += policy_props(seed, df, decided, inst.spec, FAMILY, len(props), _rates)
    return inst


# ------------------------------------------------------------------ session 32: compare, exclude_below, min_group_size

#: instance seeds from here on get four more properties (``_option_props``); earlier instances are unchanged
OPTIONS_FROM = 85_000_000


def _overall(df, dec, w):
    """The rates of all rows (one group)."""
    one = df.assign(__all="all")
    return _rates(one, dec, w, ["__all"])[("all",)]


def _to_overall(metric, rates, over):
    """``compare = to_overall`` (README 'Group metrics'): the largest |rate - overall| of a difference, the
    smallest min(rate/overall, overall/rate) of a ratio (1 where both are 0); None where undefined."""
    def dev(k):
        o = over[k]
        v = [r[k] for r in rates.values()]
        return None if o is None or any(x is None for x in v) else max(abs(x - o) for x in v)

    if metric in DIFF:
        return dev(DIFF[metric])
    if metric in RATIO:
        k = RATIO[metric]
        o, v = over[k], [r[k] for r in rates.values()]
        if o is None or any(x is None for x in v):
            return None
        return min(Fraction(1) if x == 0 and o == 0 else Fraction(0) if x == 0 or o == 0 else min(x / o, o / x)
                   for x in v)
    if metric == "equalized_odds":
        a, b = dev("tpr"), dev("fpr")
        return None if a is None or b is None else max(a, b)
    if metric == "base_rate_difference":
        return dev("base")
    raise KeyError(metric)


def _option_props(seed, df, decided, w, weighted, n_props):
    """Properties with ``compare = to_overall``, ``exclude_below`` (a share, often exactly a group's share of
    the rows: a group is left out when it has fewer rows than share x rows, exactly) and ``min_group_size``
    (often a group's size, or one more): the value over the eligible groups (at least min_group_size rows, not
    left out), to_overall against all rows (the left-out and small groups' rows too); a group too small (not
    left out) makes a `holds` wrong (README: never holds), ``meta["small"]``."""
    rng = np.random.default_rng([25, seed, 85])
    n = len(df)
    unit = np.array([Fraction(1)] * n, dtype=object)
    out = []
    for k in range(n_props, n_props + 4):
        crossed = rng.random() < 0.6
        groups = ["sex", "race"] if crossed else ["sex"]
        metric = str(rng.choice(list(DIFF) + list(RATIO) + ["equalized_odds", "base_rate_difference"]))
        compare = "to_overall" if rng.random() < 0.6 else None
        sizes = df.groupby(groups, sort=True).size()
        sizes = {(key if isinstance(key, tuple) else (key,)): int(v) for key, v in sizes.items()}
        share = None
        if rng.random() < 0.5:
            g = sorted(sizes.values())[int(rng.integers(0, len(sizes)))]
            # exactly a group's share where a short decimal says it, else within 1e-6 of it
            share = (decimal_text(Fraction(g, n), 6) or f"{g / n:.6f}") if rng.random() < 0.6 else None
            if share is None or Fraction(share) >= 1:
                share = str(rng.choice(["0.02", "0.1", "0.15", "0.2", "0.3"]))
        mgs = 1
        c = rng.random()
        if c < 0.6:
            g = sorted(sizes.values())[int(rng.integers(0, len(sizes)))]
            mgs = g + int(rng.integers(0, 2))
        elif c < 0.8:
            mgs = 30
        excluded = {g for g, s in sizes.items() if share is not None and s < Fraction(share) * n}
        eligible = [g for g, s in sizes.items() if s >= mgs and g not in excluded]
        if len(eligible) < 2:                     # fewer than two groups to compare: drop the options
            share, mgs, excluded, eligible = None, 1, set(), list(sizes)
        small = sorted(g for g, s in sizes.items() if s < mgs and g not in excluded)
        ww = unit if metric == "base_rate_difference" else w
        rates = {g: r for g, r in _rates(df, decided, ww, groups).items() if g in eligible}
        if compare:
            value = _to_overall(metric, rates, _overall(df, decided, ww))
        else:
            value = _value(metric, rates)
        if value is None:
            metric = "statistical_parity"
            rates = {g: r for g, r in _rates(df, decided, w, groups).items() if g in eligible}
            value = _to_overall(metric, rates, _overall(df, decided, w)) if compare else _value(metric, rates)
        lower = metric in LOWER_IS_FAIR
        op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
        t = decimal_text(value)
        thr = t if t is not None and rng.random() < 0.4 else f"{float(value) + float(rng.choice([-0.2, -0.05, 0.05, 0.2])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1:
            thr = "1"
        if metric in RATIO and op == ">" and Fraction(thr) >= 1:
            op = ">="
        if lower and op == "<" and Fraction(thr) <= 0:
            op = "<="
        target = "d" if metric == "base_rate_difference" else "m"
        lines = [f"{metric}({target}, groups {' x '.join(groups)}) {op} {thr}"]
        if weighted and target == "m":
            lines.append("weight = w")
        if compare:
            lines.append(f"compare = {compare}")
        if share is not None:
            lines.append(f"exclude_below = {share}")
        lines += [f"bootstrap = {int(rng.choice([100, 200]))}", f"seed = {k}", f"min_group_size = {mgs}"]
        name = f"d{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=-1, exact=value,
                      note=f"exact value {value} over the groups {sorted(eligible)} of {n} rows"
                           f"{'' if not excluded else f', {sorted(excluded)} left out'}"
                           f"{'' if not small else f', {small} too small'}")
        out.append(Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr, "compare": compare,
                                                    "exclude_below": share, "min_group_size": mgs,
                                                    "small": [list(g) for g in small],
                                                    "excluded": [list(g) for g in sorted(excluded)],
                                                    "weighted": weighted, "crossed": crossed, "point_value": True}, 60))
    return out


def _judge(spec, props, base):
    """The default judgement, and: a group too small to judge (min_group_size, not left out) makes a `holds`
    wrong whatever the value (README: the verdict is then unknown, never holds)."""
    from .judge import _check_group

    outs = _check_group(spec, props, base)
    by_name = {p.name: p for p in props}
    for o in outs:
        small = by_name[o.name].meta.get("small")
        if small and o.status == "holds" and o.klass != "wrong":
            o.klass, o.defect = "wrong", "small-group-holds"
            o.why = f"holds, but the groups {small} have fewer than min_group_size rows"
    return outs


# ------------------------------------------------------------------ session 32: multiclass and regression models on data

CLASSES = ("A", "B", "C")


def _output_props(seed, df, races, text, files, props, spec):
    """A target column ``g`` (classes A / B / C, or numbers in halves), ``data d`` declaring it (``target = g``),
    a scikit-learn decision tree fitted to it (``mc``: a classifier; ``rg``: a regressor whose leaves are set to
    halves, so predictions sit exactly at a threshold), and four properties: ``class = c`` (a label in quotes or a
    column) / ``threshold = t`` (a value >= t is positive, the target likewise) on binary metrics, and
    ``class_distribution_distance`` / ``mean_prediction_difference`` / ``mean_error_difference``. The truth: the
    tree's own ``predict`` on the rows as read (README 'Multiclass and regression models')."""
    import warnings

    import skops.io as sio
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    rng = np.random.default_rng([25, seed, 86])
    regression = rng.random() < 0.5
    lines = text.split("\n")
    head, body = lines[0], [ln for ln in lines[1:] if ln]
    n = len(body)
    if regression:
        g = [str(int(v) / 2) for v in rng.integers(0, 9, n)]
    else:
        g = [CLASSES[int(v)] for v in rng.choice(3, n, p=[0.3, 0.45, 0.25])]
    files["d.csv"] = (head + ",g\n" + "\n".join(f"{r},{v}" for r, v in zip(body, g)) + "\n").encode()
    # the kept rows (df's index follows the file's order less the dropped rows): their targets, in the same order
    import pandas as pd
    full = pd.read_csv(io.StringIO(files["d.csv"].decode()), dtype=str, keep_default_na=False)
    keep = ~full[["sex", "race", "age", "y"]].isin(["?", ""]).any(axis=1)
    kept = full[keep]
    a = kept["age"].astype(int)
    kept = kept[(a >= 18) & (a <= 80)].reset_index(drop=True)
    assert len(kept) == len(df) and (kept["sex"].to_numpy() == df["sex"].to_numpy()).all()
    X = np.column_stack([(df["sex"] == "M").astype(float), df["race"].map(races.index).astype(float),
                         df["age"].astype(float)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if regression:
            est = DecisionTreeRegressor(max_depth=int(rng.integers(1, 4)), random_state=0).fit(
                X, kept["g"].astype(float))
            est.tree_.value[:] = (rng.integers(0, 9, est.tree_.value.shape) / 2).astype(np.float64)
        else:
            est = DecisionTreeClassifier(max_depth=int(rng.integers(1, 4)), random_state=0).fit(X, kept["g"])
    blob = sio.dumps(est)
    est = sio.loads(blob, trusted=sio.get_untrusted_types(data=blob))
    pred = est.predict(X)
    files["t.skops"] = blob
    spec = spec.replace("label = y == 1)", "label = y == 1, target = g)", 1)
    spec += ('model t = sklearn("t.skops")\nencode P for t {\n  sex : code\n  race : code\n  age : raw\n}\n')
    truth_col = kept["g"].to_numpy()
    unit = np.array([Fraction(1)] * len(df), dtype=object)
    out = []
    k0 = len(props)
    for k in range(k0, k0 + 4):
        groups = ["sex", "race"] if rng.random() < 0.4 else ["sex"]
        keys = [tuple(r) for r in df[groups].to_numpy()]
        gnames = sorted(set(keys))
        if regression:
            metric = str(rng.choice(["statistical_parity", "equal_opportunity", "false_positive_rate_difference",
                                     "disparate_impact", "mean_prediction_difference", "mean_error_difference"]))
        else:
            metric = str(rng.choice(["statistical_parity", "equal_opportunity", "false_positive_rate_difference",
                                     "disparate_impact", "class_distribution_distance"]))
        arg = ""
        if metric in ("mean_prediction_difference", "mean_error_difference"):
            err = metric == "mean_error_difference"
            means = []
            for gn in gnames:
                idx = [i for i, kk in enumerate(keys) if kk == gn]
                means.append(sum((Fraction(float(pred[i])) - (Fraction(truth_col[i]) if err else 0) for i in idx),
                                 Fraction(0)) / len(idx))
            value = max(means) - min(means)
        elif metric == "class_distribution_distance":
            dists = []
            for gn in gnames:
                idx = [i for i, kk in enumerate(keys) if kk == gn]
                dists.append({c: Fraction(sum(pred[i] == c for i in idx), len(idx)) for c in CLASSES})
            value = max(sum(abs(p[c] - q[c]) for c in CLASSES) / 2 for p in dists for q in dists)
        else:
            if regression:
                t = str(rng.choice(sorted({str(float(v)) for v in pred}) + ["1.5", "2"]))
                decided = np.array([Fraction(float(v)) >= Fraction(t) for v in pred])
                y = np.array([Fraction(v) >= Fraction(t) for v in truth_col])
                arg = f", threshold = {t}"
            else:
                ci = int(rng.integers(0, 3))
                decided, y = pred == CLASSES[ci], truth_col == CLASSES[ci]
                arg = f', class = "{CLASSES[ci]}"' if rng.random() < 0.6 else f", class = {ci}"
            rates = _rates(df.assign(__y=y), decided, unit, groups)
            value = _value(metric, rates)
            if value is None:
                metric = "statistical_parity"
                value = _value(metric, rates)
        lower = metric != "disparate_impact"
        op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
        dt = decimal_text(value)
        thr = dt if dt is not None and rng.random() < 0.4 else f"{float(value) + float(rng.choice([-0.2, -0.05, 0.05, 0.2])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1 and metric not in ("mean_prediction_difference", "mean_error_difference"):
            thr = "1"
        if op == ">" and Fraction(thr) >= 1 and metric == "disparate_impact":
            op = ">="
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        name = f"d{k}"
        body_p = (f"property {name} {{\n  {metric}(t, groups {' x '.join(groups)}{arg}) {op} {thr}\n"
                  f"  bootstrap = 100\n  seed = {k}\n  min_group_size = 1\n}}")
        status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=-1, exact=value,
                      note=f"exact value {value} of the tree's predict over {len(df)} rows")
        out.append(Prop(name, FAMILY, body_p, truth, {"metric": metric, "op": op, "threshold": thr,
                                                      "model": "regression" if regression else "multiclass",
                                                      "arg": arg.strip(", "), "crossed": len(groups) > 1,
                                                      "point_value": True}, 60))
    if seed >= TO_OVERALL_FROM:
        from .data_more import more_output_props

        out += _overall_output_props(seed, df, pred, truth_col, regression, k0 + 4)
        out += more_output_props(seed, df, pred, truth_col, regression, k0 + len(out))
    props += out
    return spec


#: session 33: from this instance seed on, the tree of ``_output_props`` gets three more properties with
#: ``compare = to_overall`` and those of ``data_more.more_output_props`` (earlier instances are unchanged)
TO_OVERALL_FROM = 90_000_000
MORE_METRICS_FROM = 90_000_000
#: session 34 (data_calib.py): calibration_gap over the logged scores, and the rows read from a Parquet file
CALIB_FROM = 103_000_000


def _overall_output_props(seed, df, pred, truth_col, regression, k0, count=3):
    """``compare = to_overall`` on the multiclass / regression tree (README 'Group metrics': each group against
    the whole population): a binary metric of ``class = c`` / ``threshold = t`` (the largest |rate - overall|, the
    smallest min(rate/overall, overall/rate)), ``class_distribution_distance`` (the largest total variation
    between a group's and all rows' class shares), ``mean_prediction_difference`` / ``mean_error_difference``
    (the largest |group mean - overall mean|); exact Fractions of the tree's own ``predict``."""
    rng = np.random.default_rng([25, seed, 90])
    unit = np.array([Fraction(1)] * len(df), dtype=object)
    out = []
    for k in range(k0, k0 + count):
        groups = ["sex", "race"] if rng.random() < 0.5 else ["sex"]
        keys = [tuple(r) for r in df[groups].to_numpy()]
        gnames = sorted(set(keys))
        members = [[i for i, kk in enumerate(keys) if kk == gn] for gn in gnames]
        everyone = list(range(len(keys)))
        binary = ["statistical_parity", "equal_opportunity", "false_positive_rate_difference", "disparate_impact",
                  "equalized_odds", "error_rate_ratio"]
        extra = (["mean_prediction_difference", "mean_error_difference"] if regression
                 else ["class_distribution_distance"])
        metric = str(rng.choice(binary + extra * 2))
        arg = ""
        if metric in ("mean_prediction_difference", "mean_error_difference"):
            err = metric == "mean_error_difference"

            def mean(idx):
                return sum((Fraction(float(pred[i])) - (Fraction(truth_col[i]) if err else 0) for i in idx),
                           Fraction(0)) / len(idx)
            over = mean(everyone)
            value = max(abs(mean(idx) - over) for idx in members)
        elif metric == "class_distribution_distance":
            def share(idx):
                return {c: Fraction(sum(pred[i] == c for i in idx), len(idx)) for c in CLASSES}
            over = share(everyone)
            value = max(sum(abs(s[c] - over[c]) for c in CLASSES) / 2 for s in map(share, members))
        else:
            if regression:
                t = str(rng.choice(sorted({str(float(v)) for v in pred}) + ["1.5", "2"]))
                decided = np.array([Fraction(float(v)) >= Fraction(t) for v in pred])
                y = np.array([Fraction(v) >= Fraction(t) for v in truth_col])
                arg = f", threshold = {t}"
            else:
                ci = int(rng.integers(0, 3))
                decided, y = pred == CLASSES[ci], truth_col == CLASSES[ci]
                arg = f', class = "{CLASSES[ci]}"' if rng.random() < 0.6 else f", class = {ci}"
            dy = df.assign(__y=y)
            value = _to_overall(metric, _rates(dy, decided, unit, groups), _overall(dy, decided, unit))
            if value is None:
                metric = "statistical_parity"
                value = _to_overall(metric, _rates(dy, decided, unit, groups), _overall(dy, decided, unit))
        lower = metric not in RATIO
        op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
        dt = decimal_text(value)
        thr = dt if dt is not None and rng.random() < 0.5 else f"{float(value) + float(rng.choice([-0.2, -0.05, 0.05, 0.2])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1 and metric not in ("mean_prediction_difference", "mean_error_difference"):
            thr = "1"
        if op == ">" and Fraction(thr) >= 1 and metric in RATIO:
            op = ">="
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        name = f"d{k}"
        body_p = (f"property {name} {{\n  {metric}(t, groups {' x '.join(groups)}{arg}) {op} {thr}\n"
                  f"  compare = to_overall\n  bootstrap = 100\n  seed = {k}\n  min_group_size = 1\n}}")
        status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=-1, exact=value,
                      note=f"exact value {value} (to_overall) of the tree's predict over {len(df)} rows")
        out.append(Prop(name, FAMILY, body_p, truth, {"metric": metric, "op": op, "threshold": thr,
                                                      "model": "regression" if regression else "multiclass",
                                                      "arg": arg.strip(", "), "crossed": len(groups) > 1,
                                                      "compare": "to_overall", "point_value": True}, 60))
    return out

