"""Benchmark: group fairness over a distribution (Justicia / FVGM) on real data.

For Adult, COMPAS, German, Ricci and Titanic (raw files read at run time from
../shared/data, never copied) we train a decision tree and a logistic
regression (sklearn, 80/20 split, seed 0), estimate Justicia's distribution
(features conditional on the compound protected group, and the label for
equalized odds) on the held-out 20 %, and compute disparate impact, statistical
parity and equalized odds exactly:

* the tree with the SSAT backend (our solver), bins = the tree's own thresholds;
* the logistic regression with the DP backend (FVGM's stochastic subset sum),
  quantile bins + bin means + integer multiplier (agreement with the model
  reported), and also with the SSAT backend (pseudo-Boolean encoding).

Beside each value: Justicia's published numbers (Table 2 times, Table 3 / 4
"orig." metrics).  Their models and preprocessing are not published in full, so
the values are comparable in kind, not digit for digit.  A second experiment
times enumeration (RE-SSAT per group) against learning (ER-SSAT) for 2 to 40
compound groups on Adult (Justicia Figure 4).

    python bench/distribution.py [--json FILE] [--data DIR] [--quick]
"""

from __future__ import annotations

import argparse
import json

import sys
import time
from pathlib import Path

import numpy as np

from fairspec.backends import dp as _dp, ssat as _ssat

ENGINES = {"ssat": _ssat, "dp": _dp, "brute": "brute"}  # the PPV engines the runner would pick

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT.parent / "shared" / "data"
REPEAT = 3          # timings: best of REPEAT runs (the machine is shared)

# Justicia (002_*), Table 2: solve times in seconds
PUBLISHED_TIME = {
    ("ricci", "dt"): 0.1, ("ricci", "lr"): 0.2, ("titanic", "dt"): 0.1, ("titanic", "lr"): 0.9,
    ("compas", "dt"): 0.1, ("compas", "lr"): 0.2, ("adult", "dt"): 0.2, ("adult", "lr"): 1.0,
}
# Justicia Table 3 (Adult, COMPAS) and Table 4 (German), "orig." columns: DI, SP, EO
PUBLISHED_METRICS = {
    ("adult", "race", "lr"): (0.23, 0.09, 0.13), ("adult", "sex", "lr"): (0.03, 0.16, 0.30),
    ("compas", "race", "lr"): (0.34, 0.39, 0.38), ("compas", "sex", "lr"): (0.48, 0.23, 0.17),
    ("adult", "race", "dt"): (0.82, 0.02, 0.07), ("adult", "sex", "dt"): (0.00, 0.14, 0.47),
    ("compas", "race", "dt"): (0.61, 0.18, 0.17), ("compas", "sex", "dt"): (0.94, 0.02, 0.07),
    ("german", "age", "lr"): (0.00, 0.45, 0.65), ("german", "sex", "lr"): (0.27, 0.03, 0.10),
    ("german", "age", "dt"): (0.00, 0.35, 0.36), ("german", "sex", "dt"): (0.35, 0.05, 0.06),
}


# --------------------------------------------------------------------------- data sets


class Dataset:
    def __init__(self, name, frame, numeric, categorical, label, protected):
        self.name = name
        self.frame = frame.reset_index(drop=True)
        self.numeric = numeric            # continuous columns
        self.categorical = categorical    # categorical columns (protected included)
        self.label = label                # 0/1 column
        self.protected = protected        # list of protected attributes (categorical)


def load_adult(d: Path) -> Dataset:
    import pandas as pd
    cols = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
            "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
            "native-country", "income"]
    frames = []
    for f, skip in (("adult.data", 0), ("adult.test", 1)):
        df = pd.read_csv(d / "adult" / f, header=None, names=cols, skiprows=skip, dtype=str,
                         skipinitialspace=True, keep_default_na=False)
        frames.append(df)
    df = pd.concat(frames)
    df = df.apply(lambda c: c.str.strip())
    df = df[~(df == "?").any(axis=1)]
    df = df[df["age"] != ""]
    for c in ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]:
        df[c] = df[c].astype(float)
    df["y"] = df["income"].str.rstrip(".").eq(">50K").astype(int)
    # four age groups, for up to 40 compound groups (sex x race x age)
    df["age_group"] = pd.cut(df["age"], [0, 30, 40, 50, 200], labels=["<=30", "31-40", "41-50", ">50"]).astype(str)
    # AIF360's (and so Justicia's) protected race is binary: White / non-White
    df["race_bin"] = np.where(df["race"] == "White", "White", "Non-white")
    return Dataset("adult", df, ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"],
                   ["workclass", "marital-status", "occupation", "relationship", "race_bin", "sex"], "y",
                   ["race_bin", "sex"])


def load_compas(d: Path) -> Dataset:
    import pandas as pd
    df = pd.read_csv(d / "compas" / "compas-scores-two-years.csv")
    df = df[(df.days_b_screening_arrest <= 30) & (df.days_b_screening_arrest >= -30) & (df.is_recid != -1)
            & (df.c_charge_degree != "O") & (df.score_text != "N/A")]
    df = df.loc[:, ~df.columns.duplicated()].copy()
    df["race"] = df["race"].where(df["race"].isin(["African-American", "Caucasian"]), "Other")
    df["race_bin"] = np.where(df["race"] == "Caucasian", "Caucasian", "Not Caucasian")   # AIF360
    # favourable outcome (AIF360 convention): no recidivism within two years
    df["y"] = (df["two_year_recid"] == 0).astype(int)
    for c in ["age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count"]:
        df[c] = df[c].astype(float)
    return Dataset("compas", df, ["age", "priors_count", "juv_fel_count", "juv_misd_count", "juv_other_count"],
                   ["c_charge_degree", "race_bin", "sex"], "y", ["race_bin", "sex"])


def load_german(d: Path) -> Dataset:
    import pandas as pd
    names = ["status", "duration", "history", "purpose", "amount", "savings", "employment", "rate",
             "personal", "debtors", "residence", "property", "age", "plans", "housing", "credits", "job",
             "liable", "telephone", "foreign", "y"]
    df = pd.read_csv(d / "german" / "german.data", sep=" ", header=None, names=names)
    df["sex"] = df["personal"].map({"A91": "male", "A92": "female", "A93": "male", "A94": "male", "A95": "female"})
    df["age_group"] = np.where(df["age"] >= 25, ">=25", "<25")
    df["y"] = (df["y"] == 1).astype(int)
    for c in ["duration", "amount", "rate", "residence", "credits", "liable"]:
        df[c] = df[c].astype(float)
    return Dataset("german", df, ["duration", "amount", "rate", "residence", "credits"],
                   ["status", "history", "savings", "employment", "property", "housing", "job", "sex", "age_group"],
                   "y", ["age_group", "sex"])


def load_ricci(d: Path) -> Dataset:
    import pandas as pd
    df = pd.read_csv(d / "ricci" / "ricci.csv")
    df["y"] = df["Class"].astype(int)
    return Dataset("ricci", df, ["Oral", "Written"], ["Position", "Race"], "y", ["Race"])


def load_titanic(d: Path) -> Dataset:
    import pandas as pd
    df = pd.read_csv(d / "titanic" / "titanic.csv")
    df.columns = [c.split("#", 1)[1] for c in df.columns]
    df = df.dropna(subset=["age", "fare", "embarked"]).copy()
    df["y"] = df["survived"].astype(int)
    for c in ["age", "fare", "siblings_or_spouces_aboard", "parents_or_childred_aboard"]:
        df[c] = df[c].astype(float)
    df["passenger_class"] = df["passenger_class"].astype(str)
    return Dataset("titanic", df, ["age", "fare", "siblings_or_spouces_aboard", "parents_or_childred_aboard"],
                   ["passenger_class", "embarked", "sex"], "y", ["sex"])


LOADERS = {"ricci": load_ricci, "titanic": load_titanic, "compas": load_compas, "adult": load_adult,
           "german": load_german}


# --------------------------------------------------------------------------- models


def model_matrix(ds: Dataset, frame, scale=None):
    """One-hot + (standardised) numeric model inputs and their Column descriptions."""
    from fairspec.backends.boolean import Column
    cols, parts = [], []
    scale = scale or {}
    for c in ds.numeric:
        x = frame[c].to_numpy(dtype=float)
        mu, sd = scale.get(c, (0.0, 1.0))
        parts.append((x - mu) / sd)
        cols.append(Column(c, None, mu, sd))
    for c in ds.categorical:
        for v in sorted(ds.frame[c].astype(str).unique()):
            parts.append((frame[c].astype(str).to_numpy() == v).astype(float))
            cols.append(Column(c, v))
    return np.stack(parts, axis=1), cols


def split(ds: Dataset, seed=0, test=0.2):
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(ds.frame))
    n_test = int(round(test * len(idx)))
    return ds.frame.iloc[idx[n_test:]], ds.frame.iloc[idx[:n_test]]


def specs_for(ds: Dataset, numeric_bins: dict):
    from fairspec.analyses.distribution import Categorical, Continuous
    specs = {}
    for c in ds.categorical:
        specs[c] = Categorical(tuple(sorted(ds.frame[c].astype(str).unique())))
    for c in ds.numeric:
        specs[c] = Continuous(numeric_bins.get(c, []))
    specs["y"] = Categorical((0, 1))
    return specs


def frame_columns(ds, frame):
    out = {c: frame[c].astype(str).to_numpy() for c in ds.categorical}
    out.update({c: frame[c].to_numpy(dtype=float) for c in ds.numeric})
    out["y"] = frame["y"].to_numpy(dtype=int)
    return out


def prepare_tree(ds: Dataset, train, test, max_depth=6):
    from sklearn.tree import DecisionTreeClassifier
    from fairspec.analyses.distribution import discretise
    from fairspec.backends.boolean import tree_from_sklearn, tree_split_points
    X, cols = model_matrix(ds, train)
    dt = DecisionTreeClassifier(max_depth=max_depth, random_state=0).fit(X, train["y"].to_numpy())
    Xt, _ = model_matrix(ds, test)
    thresholds = tree_split_points(dt, cols)
    data = discretise(frame_columns(ds, test), specs_for(ds, {c: thresholds.get(c, []) for c in ds.numeric}))
    tree = tree_from_sklearn(dt, cols, data.variables)
    agreement = float(np.mean(tree.predict(data.codes) == dt.predict(Xt).astype(bool)))
    return tree, data, {"depth": tree.depth(), "leaves": tree.n_leaves, "agreement": agreement,
                        "accuracy": float(np.mean(dt.predict(Xt) == test["y"].to_numpy()))}


def prepare_lr(ds: Dataset, train, test, n_bins=10):
    from sklearn.linear_model import LogisticRegression
    from fairspec.analyses.distribution import Bins, discretise
    from fairspec.backends.boolean import linear_from_sklearn
    scale = {c: (float(train[c].mean()), float(train[c].std() or 1.0)) for c in ds.numeric}
    X, cols = model_matrix(ds, train, scale)
    lr = LogisticRegression(max_iter=5000).fit(X, train["y"].to_numpy())
    Xt, _ = model_matrix(ds, test, scale)
    bins = {c: Bins.from_quantiles(train[c].to_numpy(dtype=float), n_bins).edges for c in ds.numeric}
    data = discretise(frame_columns(ds, test), specs_for(ds, bins))
    rule = linear_from_sklearn(lr, cols, data.variables, X=Xt, codes=data.codes)
    return rule, data, {"multiplier": rule.multiplier, "agreement": rule.agreement,
                        "accuracy": float(np.mean(lr.predict(Xt) == test["y"].to_numpy()))}


# --------------------------------------------------------------------------- experiments


def run_metrics(ds: Dataset, clf, data, protected, backend, method="enumerate", time_limit=60.0,
                dist="conditional"):
    from fairspec.analyses.distribution import conditional, learn_bayes_net
    from fairspec.analyses.group_metrics_exact import equalized_odds, group_ppvs
    names = list(dict.fromkeys(list(clf.features) + protected))
    t = time.perf_counter()
    if dist == "conditional":
        bn = conditional(data, protected, names=[n for n in names if n not in protected], label="y")
    else:   # FVGM: a network learned by hill climbing (K2), nothing into the protected attributes
        bn = learn_bayes_net(data, protected, names=names, label="y", score="k2", max_parents=2)
    dist_seconds = time.perf_counter() - t
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        ppv = group_ppvs(clf, bn, protected, backend=ENGINES[backend], method=method, time_limit=time_limit)
        times.append(time.perf_counter() - t)
        if ppv.status != "ok":
            break
    solve = min(times)
    out = {"status": ppv.status, "reason": ppv.reason, "solve_seconds": solve, "solve_seconds_all": times,
           "distribution": dist, "distribution_seconds": dist_seconds}
    if ppv.status == "ok":
        eo = equalized_odds(clf, bn, protected, "y", 1, backend=ENGINES[backend], time_limit=time_limit)
        hi, lo = ppv.most_favoured_ppv, ppv.least_favoured_ppv
        out.update({"DI": lo / hi if hi > 0 else None, "SP": hi - lo,
                    "EO": eo.value if eo.status == "ok" else None,
                    "most_favoured": dict(ppv.most_favoured), "least_favoured": dict(ppv.least_favoured),
                    "n_groups": len(ppv.per_group),
                    "bound_ppv": ppv.bound.ppv_additive if ppv.bound else None,
                    "epsilon0": ppv.bound.epsilon0 if ppv.bound else None})
    return out


def main_table(data_dir: Path, quick: bool):
    rows = []
    sets = ["ricci", "titanic", "compas", "adult", "german"]
    for name in sets:
        ds = LOADERS[name](data_dir)
        train, test = split(ds)
        tree, tdata, tinfo = prepare_tree(ds, train, test)
        rule, ldata, linfo = prepare_lr(ds, train, test)
        prots = [[p] for p in ds.protected]
        if len(ds.protected) > 1:
            prots.append(list(ds.protected))
        for prot in prots:
            key = "+".join(prot)
            configs = [("dt", tree, tdata, tinfo, "ssat", "conditional"),
                       ("lr", rule, ldata, linfo, "dp", "conditional"),
                       ("lr", rule, ldata, linfo, "ssat", "conditional")]
            if name in ("adult", "compas"):
                configs += [("dt", tree, tdata, tinfo, "ssat", "bayes"), ("lr", rule, ldata, linfo, "dp", "bayes")]
            for model, clf, data, info, backend, dist in configs:
                if quick and backend == "ssat" and model == "lr" and name in ("adult", "german"):
                    continue
                # SSAT on a linear model is a cross-check (FVGM: the DP is the fast path)
                limit = 20.0 if (backend == "ssat" and (model == "lr" or dist == "bayes")) else 60.0
                r = run_metrics(ds, clf, data, prot, backend, time_limit=limit, dist=dist)
                pub = None
                if len(prot) == 1:
                    pkey = {"race_bin": "race", "age_group": "age"}.get(prot[0], prot[0])
                    pub = PUBLISHED_METRICS.get((name, pkey, model))
                rows.append({"dataset": name, "rows": len(ds.frame), "test_rows": len(test),
                             "protected": key, "model": model, "backend": backend, **info, **r,
                             "published_time": PUBLISHED_TIME.get((name, model)),
                             "published_DI_SP_EO": pub})
                print(_fmt_row(rows[-1]), flush=True)
    return rows


def _fmt_row(r):
    def f(x):
        return "   -  " if x is None else f"{x:6.3f}"
    pub = r["published_DI_SP_EO"]
    return (f"{r['dataset']:8s} {r['protected']:14s} {r['model']:3s} {r['backend']:5s} {r['distribution'][:5]:5s} "
            f"DI {f(r.get('DI'))} SP {f(r.get('SP'))} EO {f(r.get('EO'))}  "
            f"time {r['solve_seconds']:7.3f}s (Justicia {'-' if r['published_time'] is None else str(r['published_time']) + 's'})  "
            f"paper DI/SP/EO {pub if pub else '-'}  agree {r.get('agreement', 0):.3f} {r['status']}")


def groups_experiment(data_dir: Path, quick: bool):
    """Enumeration vs learning for 2..40 compound groups on Adult (Justicia Fig. 4).

    enumerate_seq: Justicia_enum, one RE-SSAT solve per group (one solver, shared cache);
    enumerate:     the same RE-SSAT formulas solved in one batched search;
    learn:         Justicia_learn, ER-SSAT for the most favoured group and ER-SSAT on
                   the negated tree for the least favoured one.
    """
    from fairspec.analyses.distribution import conditional
    from fairspec.backends import ssat
    ds = LOADERS["adult"](data_dir)
    # multi-valued race and four age groups: up to 2 x 5 x 4 = 40 compound groups
    ds.categorical = [c for c in ds.categorical if c != "race_bin"] + ["race", "age_group"]
    train, test = split(ds)
    tree, tdata, _ = prepare_tree(ds, train, test)
    configs = [["sex"], ["race"], ["sex", "race"], ["race", "age_group"], ["sex", "race", "age_group"]]
    out = []
    for prot in configs:
        names = [n for n in tree.features if n not in prot]
        bn = conditional(tdata, prot, names=names)
        ng = int(np.prod([bn.variables[a].k for a in prot]))
        row = {"protected": "+".join(prot), "groups": ng}
        runs = {"enumerate": lambda: ssat.ppv_per_group(bn, tree, prot, time_limit=300),
                "enumerate_seq": lambda: ssat.ppv_per_group(bn, tree, prot, batch=False, time_limit=300),
                "learn": lambda: ssat.ppv_extremes(bn, tree, prot, time_limit=300)}
        for key, fn in runs.items():
            ts = []
            for _ in range(REPEAT):
                t = time.perf_counter()
                r = fn()
                ts.append(time.perf_counter() - t)
            row[key + "_seconds"] = min(ts)
            row[key + "_status"] = r.status
            row[key + "_max"] = r.best[1] if r.best else None
            row[key + "_min"] = r.worst[1] if r.worst else None
        out.append(row)
        print(f"adult groups {ng:3d} ({row['protected']:22s}) enumerate(batched) {row['enumerate_seconds']:6.3f}s "
              f"enumerate(per group) {row['enumerate_seq_seconds']:6.3f}s learn(ER) {row['learn_seconds']:6.3f}s  "
              f"max {row['enumerate_max']:.4f}/{row['learn_max']:.4f} min {row['enumerate_min']:.4f}/{row['learn_min']:.4f}",
              flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results as JSON to this file")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="folder with the raw data sets")
    ap.add_argument("--quick", action="store_true", help="skip the slowest configurations")
    args = ap.parse_args(argv)
    data_dir = Path(args.data)
    # import the solvers' libraries once, outside the timings (python-sat takes 0.3 s)
    import sklearn.tree  # noqa: F401
    import pysat.pb  # noqa: F401
    import os
    load0 = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"load average {load0} (timings are the best of {REPEAT} runs)", flush=True)
    t0 = time.perf_counter()
    table = main_table(data_dir, args.quick)
    groups = groups_experiment(data_dir, args.quick)
    import platform
    res = {"table": table, "groups": groups, "seconds": time.perf_counter() - t0,
           "load_average_at_start": load0, "repeat": REPEAT,
           "python": platform.python_version(), "machine": platform.machine(),
           "note": "solve_seconds: encoding + exact solve of all groups' PPVs (DI and SP), best of "
                   "`repeat` runs; EO needs two more solves, not timed"}
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2, default=_default))
    return 0


def _default(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, tuple):
        return list(x)
    return str(x)


if __name__ == "__main__":
    sys.exit(main())
