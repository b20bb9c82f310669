"""Options a backend takes but a run does not read are said, never dropped silently: lint's FS213 when
the spec alone says so (sema.options), else a note of the verdict (kinds.pair_enumeration.
unread_by_enumeration: a small domain enumerated whole reads no max_rows, seed, engine, timeout, ...)."""

import random

from fairspec.pipeline import check, lint
from conftest import people_decls

from pathlib import Path

FIX = Path(__file__).resolve().parent / "fixtures"
SMALL = """features People from people {
  age    : int in [18, 25]
  sex    : {F, M}  protected
  race   : {A, B, C}  protected
  member : bool
  score  : int in [0, 1]
}
"""
NET = ('model net = onnx("../models/people6.onnx", output = "logit")\n'
       "encode People for net { age : standard  sex : onehot  race : code  member, score : raw }\n")


def _project(tmp_path, text, rows=None):
    (tmp_path / "fairspec.toml").write_text("")
    for d in ("data", "models", "specs"):
        (tmp_path / d).mkdir()
    (tmp_path / "models" / "people6.onnx").write_bytes((FIX / "models" / "people6.onnx").read_bytes())
    (tmp_path / "data" / "people.csv").write_bytes((FIX / "data" / "people.csv").read_bytes())
    r = random.Random(1)
    lines = ["age,sex,race,member,score,hired"] + [
        f"{r.randint(18, 25)},{r.choice('FM')},{r.choice('ABC')},{r.choice(['true', 'false'])},{r.randint(0, 1)},"
        f"{r.choice(['yes', 'no'])}" for _ in range(rows or 60)]
    (tmp_path / "data" / "small.csv").write_text("\n".join(lines) + "\n")
    p = tmp_path / "specs" / "s.fair"
    p.write_text(text)
    return p


def _prop(name, opts, ensure="label(net(x)) == label(net(x'))"):
    return (f"property {name} {{\n  forall x, x' : People\n  require x.* == x'.* except {{sex}}\n  ensure {ensure}\n"
            + "".join(f"  {o}\n" for o in opts) + "}\n")


def _fs213(p):
    return {(d.message.split(":")[0], d.span.line) for d in lint(p).diagnostics if d.code == "FS213"}


def test_a_network_small_domain_says_the_options_it_does_not_read(tmp_path):
    """A network's small domain is enumerated whole (kinds.pair_enumeration.decide_small): no data rows
    flipped first (max_rows), no random choice (seed), no solver (engine), no time limit (timeout). Lint
    cannot know the domain is small; the verdict's notes say each, and lint's FS213 is not repeated."""
    head = 'data people = csv("../data/small.csv", label = hired == "yes")\n' + SMALL + NET
    p = _project(tmp_path, head + _prop("pair", ["max_rows = 50", "seed = 3", "engine = scip", "timeout = 30s",
                                                 "using milp"])
                 + _prop("said", ["seed = 3", "using smt"]) + _prop("plain", ["using milp"]))
    assert _fs213(p) == {("option 'seed' has no effect here", 25)}  # 'said': z3 has its own seed, no rows drawn
    v = {v.name: v for v in check(p).verdicts}
    assert all(x.how == "proved" for x in v.values()), {k: (x.status, x.reason) for k, x in v.items()}
    notes = v["pair"].details["notes"]
    assert [n.split(" has no effect here: ")[0] for n in notes] == ["`timeout`", "`engine`", "`max_rows`", "`seed`"]
    assert notes[2].endswith("every pair of the small domain is enumerated on the model's runtime, with no data "
                             "rows flipped first and no random choice"), notes
    assert "notes" not in v["said"].details and "notes" not in v["plain"].details


def test_a_binary_tree_small_domain_says_max_rows_seed_and_engine(tmp_path):
    """The same on a tree model's small domain (kinds.tree_pairs.decide_by_enumeration)."""
    import numpy as np
    import skops.io as sio
    from sklearn.tree import DecisionTreeClassifier

    X = np.array([[g, a] for g in (0, 1) for a in range(4)] * 2, dtype=float)
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, [1, 0, 1, 0, 0, 1, 1, 1] * 2)
    p = _project(tmp_path, "")
    sio.dump(est, tmp_path / "models" / "t.skops")
    (tmp_path / "data" / "t.csv").write_text("g,a\n" + "".join(f"{g},{a}\n" for g, a in X.astype(int)))
    p.write_text('data d = csv("../data/t.csv")\nfeatures F from d {\n  g : int in [0, 1] protected\n'
                 '  a : int in [0, 3]\n}\nmodel m = sklearn("../models/t.skops")\nencode F for m { g : raw  a : raw }\n'
                 "property pair {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n"
                 "  ensure label(m(x)) == label(m(x'))\n  max_rows = 5\n  seed = 2\n  engine = scip\n}\n")
    assert _fs213(p) == set()
    (v,) = check(p).verdicts
    assert v.status == "violated", v.reason
    assert [n.split(" has no effect here: ")[0] for n in v.details["notes"]] == ["`engine`", "`max_rows`", "`seed`"]


def test_seed_that_nothing_draws_with_is_a_warning(tmp_path):
    """`seed` on a pair property: its readers are the sample of max_rows data rows flipped first, the
    partitions' estimate, the prob(m(x), c) attack (kinds.class_prob) and a tree model's leaf boxes; the
    solvers run with fixed seeds of their own. Without one of them lint says FS213 (the data backend's
    flips of every row draw nothing either); with one, nothing."""
    head = people_decls() + ('model net = onnx("../models/people6.onnx", output = "logit")\n'
                             "encode People for net { age : standard  sex : onehot  race : code  member, "
                             "score : raw }\n")
    cases = {  # options -> warned
        ("using milp",): True, ("using smt",): True, ("using data",): True,
        ("using milp", "mode = find"): True, ("using milp", "mode = maximize", "max_rows = 9"): True,
        ("using milp", "max_rows = 9"): False, ("using smt", "max_rows = 9"): False, ("using data", "max_rows = 9"): False,
        ("using milp", "partitions = 4"): False, ("using milp", "partitions = 4", "estimate = 0"): True,
    }
    for i, (opts, warned) in enumerate(cases.items()):
        d = tmp_path / str(i)
        d.mkdir()
        p = _project(d, head + _prop("pair", ["seed = 1", *opts]))
        got = [m for m, _ in _fs213(p) if "seed" in m]
        assert bool(got) == warned, (opts, _fs213(p))
    d = tmp_path / "prob"
    d.mkdir()
    p = _project(d, head.replace('"logit"', '"prob"') + _prop("pair", ["seed = 1", "using milp"],
                                                              ensure="|prob(net(x), 1) - prob(net(x'), 1)| <= 0.1"))
    assert not [m for m, _ in _fs213(p) if "seed" in m]  # the softmax branch and bound's attack draws with it


def test_confidence_without_partitions_is_a_warning(tmp_path):
    """On a pair property confidence is read by the partitions' estimate only (as part_timeout, refine and
    estimate are): FS213 without partitions; a data group metric's confidence is read (no warning)."""
    head = people_decls() + ('model net = onnx("../models/people6.onnx", output = "logit")\n'
                             "encode People for net { age : standard  sex : onehot  race : code  member, "
                             "score : raw }\n")
    p = _project(tmp_path, head + _prop("pair", ["confidence = 0.9", "using milp"]))
    assert {m for m, _ in _fs213(p)} == {"option 'confidence' has no effect without partitions"}
    (tmp_path / "specs" / "s.fair").write_text(head + _prop("pair", ["confidence = 0.9", "partitions = 4"]))
    assert _fs213(p) == set()
    (tmp_path / "specs" / "s.fair").write_text(
        head + "property dp {\n  statistical_parity(net, groups sex) <= 0.2\n  confidence = 0.9\n}\n")
    res = lint(p)
    assert not [d for d in res.diagnostics if d.is_error or d.code == "FS213"], res.diagnostics


def test_options_read_for_one_model_family_only_are_warnings_on_the_other(tmp_path):
    """pba's max_cells and k-discrimination's max_boxes bound a tree model's leaf combinations: on a network
    (ONNX, torch) nothing reads them. pba's engine and workers drive a network's LP / MILP: a tree model's
    neighbourhoods are decided exactly over its leaves, by neither (nor drawn with seed, without a sample of
    points). Lint knows the family from the file
    (a scikit-learn model's estimator read cheaply), so each is FS213; where it is read, nothing is said."""
    net = ('model net = onnx("../models/people6.onnx", output = "logit")\n'
           "encode People for net { age : standard  sex : onehot  race : code  member, score : raw }\n")
    dt = ('model net = sklearn("../models/people_dt.skops")\n'
          "encode People for net { sex, race : onehot  age, member, score : raw }\n")
    pba = "property p {\n  pba(net, flip {sex}, delta {age: 0})\n  OPT\n}\n"
    kd = "property p {\n  k_discrimination(net, over {sex, race}, eps = 0.05) < 4\n  OPT\n}\n"
    cases = [(net, pba, "max_cells = 9", True), (net, pba, "engine = scip", False), (net, pba, "workers = 2", False),
             (net, kd, "max_boxes = 9", True), (dt, kd, "max_boxes = 9", False), (dt, pba, "max_cells = 9", False),
             (dt, pba, "engine = scip", True), (dt, pba, "workers = 2", True), (dt, pba, "seed = 3", True),
             (dt, pba, "seed = 3\n  points = 50", False), (net, pba, "seed = 3", False)]
    for i, (model, prop, opt, warned) in enumerate(cases):
        d = tmp_path / str(i)
        d.mkdir()
        p = _project(d, people_decls() + model + prop.replace("OPT", opt))
        (d / "models" / "people_dt.skops").write_bytes((FIX / "models" / "people_dt.skops").read_bytes())
        res = lint(p)
        assert not [x for x in res.diagnostics if x.is_error], (opt, res.diagnostics)
        said = [x.message for x in res.diagnostics if x.code == "FS213"]
        key = opt.split()[0]
        said = [m for m in said if f"'{key}'" in m]
        assert said == ([f"option '{key}' has no effect here: " + said[0].split(": ", 1)[1]] if warned else []), \
            (model[:20], opt, said)
        if warned:
            assert "model 'net' is a" in said[0], said


def test_method_that_no_ppv_search_reads_is_a_warning(tmp_path):
    """`method` (enumerate | learn) chooses how dp / ssat search the groups' PPVs: elimination sums over the
    tree's paths, and equalized odds / equal opportunity enumerate every group given the label
    (kinds.distribution._compute drops the method); each is FS213. statistical parity on dp reads it."""
    head = ('data people = csv("../data/people.csv", label = hired == "yes")\n' + people_decls().split("\n", 1)[1]
            + "model r = rule(member)\n")
    cases = {"statistical_parity(r, groups sex, distribution independent(people)) <= 1": None,
             "equal_opportunity(r, groups sex, distribution independent(people)) <= 1": "equal_opportunity reads",
             "equalized_odds(r, groups sex, distribution independent(people)) <= 1": "equalized_odds reads",
             "statistical_parity(r, groups sex, distribution independent(people)) <= 1\n  using elimination":
                 "elimination sums"}
    for i, (claim, why) in enumerate(cases.items()):
        d = tmp_path / str(i)
        d.mkdir()
        p = _project(d, head + f"property p {{\n  {claim}\n  method = learn\n}}\n")
        res = lint(p)
        assert not [x for x in res.diagnostics if x.is_error], (claim, res.diagnostics)
        said = [x.message for x in res.diagnostics if x.code == "FS213"]
        assert said == ([] if why is None else [f"option 'method' has no effect here: {why}" + said[0].split(why)[1]]), \
            (claim, said)


def test_resampling_options_over_a_declared_distribution_are_warnings(tmp_path):
    """Over a distribution declared with its probabilities there are no data rows: no bootstrap resample
    (bootstrap, seed) and no estimation error to bound (confidence: analyses.group_metrics_exact.error_bound
    is None without rows). Each is FS213; over a distribution estimated from data rows they are read."""
    from conftest import NOTED_DIST

    opts = "  seed = 4\n  bootstrap = 10\n  confidence = 0.9\n"
    p = _project(tmp_path, NOTED_DIST.replace("<= 0.1\n}", "<= 0.1\n" + opts + "}", 1))
    said = sorted(m for m, _ in _fs213(p))
    assert said == [f"option '{k}' has no effect here" for k in ("bootstrap", "confidence", "seed")], said
    d = tmp_path / "data_rows"
    d.mkdir()
    p = _project(d, people_decls() + "model r = rule(member)\nproperty p {\n  statistical_parity(r, groups sex, "
                                     "distribution independent(people)) <= 1\n" + opts + "}\n")
    assert _fs213(p) == set()


def test_k_discrimination_decided_before_any_search_says_the_search_options(tmp_path):
    """k-discrimination on a small domain is enumerated whole (kinds.k_discrimination._decide_small): the
    search strategy, its seed, explain, timeout and max_boxes are read by nothing; each is a verdict note."""
    head = 'data people = csv("../data/small.csv", label = hired == "yes")\n' + SMALL + NET.replace('"logit"', '"logit", score = logit')
    p = _project(tmp_path, head + "property kd {\n  k_discrimination(net, over {sex, race}, eps = 0.05) < 7\n"
                                  "  search random for 5s\n  seed = 3\n  explain tree\n  timeout = 20s\n}\n"
                                  "property plain {\n  k_discrimination(net, over {sex, race}, eps = 0.05) < 7\n}\n")
    v = {v.name: v for v in check(p).verdicts}
    assert v["kd"].how == "proved" and "enumeration" in str(v["kd"].proof.method), (v["kd"].status, v["kd"].reason)
    notes = v["kd"].details["notes"]
    assert [n.split(" has no effect here: ")[0] for n in notes] == ["`search`", "`seed`", "`explain`", "`timeout`"]
    assert notes[0].endswith("the property was enumerated whole, before any search"), notes
    assert "notes" not in v["plain"].details


def test_compare_on_a_metric_that_compares_no_rate_is_a_warning(tmp_path):
    """`compare` (between_groups | to_overall) chooses what a group's rate is compared with: the most /
    least favoured group's rate, the inequality indices and the largest group loss compare none
    (group_rates.metric_value, output_metrics.compare_values): FS213. A parity metric reads it."""
    from fairspec.analyses.group_rates import METRICS, reads_compare

    assert not reads_compare("bounded_group_loss") and reads_compare("statistical_parity")
    assert {m for m in METRICS if not reads_compare(m)} >= {"most_favoured", "least_favoured", "theil_index",
                                                            "generalized_entropy_index", "between_group_theil_index"}
    cases = {"most_favoured(r, groups sex) >= 0": "most_favoured is the highest group's rate",
             "least_favoured(r, groups sex) >= 0": "least_favoured is the lowest group's rate",
             "theil_index(r, groups sex) <= 1": "theil_index is an inequality index over individuals",
             "generalized_entropy_index(r) <= 1": "generalized_entropy_index is an inequality index over individuals",
             "between_group_theil_index(r, groups sex) <= 1": "between_group_theil_index is an inequality index over "
                                                              "the groups' mean benefits",
             "statistical_parity(r, groups sex) <= 1": None}
    for i, (claim, why) in enumerate(cases.items()):
        d = tmp_path / str(i)
        d.mkdir()
        p = _project(d, people_decls() + f"model r = rule(member)\nproperty p {{\n  {claim}\n  compare = to_overall\n}}\n")
        res = lint(p)
        assert not [x for x in res.diagnostics if x.is_error], (claim, res.diagnostics)
        said = [(x.message, x.span.line) for x in res.diagnostics if x.code == "FS213"]
        assert said == ([] if why is None else [(f"option 'compare' has no effect here: {why}" + said[0][0].split(why)[1],
                                                 12)]), (claim, said)


def test_every_unread_rule_fires_on_some_spec(tmp_path, monkeypatch):
    """Each rule of sema.options.UNREAD (lint's FS213, first match wins) is said on at least one spec
    here, so a rule that nothing can reach any more (shadowed by an earlier one, or its case made an
    error elsewhere) fails this test instead of lingering."""
    import dataclasses

    from conftest import NOTED_DIST
    from fairspec.sema import options

    fired = []

    def spy(rule):
        return dataclasses.replace(rule, why=lambda a: fired.append(rule.name) or rule.why(a))

    monkeypatch.setattr(options, "UNREAD", tuple(spy(r) for r in options.UNREAD))
    dist_head = ('data people = csv("../data/people.csv", label = hired == "yes")\n'
                 + people_decls().split("\n", 1)[1] + "model r = rule(member)\n")
    dt = ('model net = sklearn("../models/people_dt.skops")\n'
          "encode People for net { sex, race : onehot  age, member, score : raw }\n")
    specs = {
        "partitions_only": people_decls() + NET + _prop("pair", ["confidence = 0.9", "using milp"]),
        "max_rows_no_flips": people_decls() + NET + _prop("pair", ["max_rows = 9", "mode = maximize", "using milp"]),
        "other_model_family": people_decls() + NET + "property p {\n  pba(net, flip {sex}, delta {age: 0})\n"
                                                     "  max_cells = 9\n}\n",
        "method_no_ppv_search": dist_head + "property p {\n  equal_opportunity(r, groups sex, distribution "
                                            "independent(people)) <= 1\n  method = learn\n}\n",
        "compare_nothing": people_decls() + "model r = rule(member)\nproperty p {\n  theil_index(r, groups sex) <= 1\n"
                                            "  compare = to_overall\n}\n",
        "individual_index_groups": people_decls() + "model r = rule(member)\nproperty p {\n  theil_index(r, groups "
                                                    "sex) <= 1\n  min_group_size = 5\n}\n",
        "declared_distribution": NOTED_DIST.replace("<= 0.1\n}", "<= 0.1\n  bootstrap = 10\n}", 1),
        "seed_tree_pba": people_decls() + dt + "property p {\n  pba(net, flip {sex}, delta {age: 0})\n  seed = 3\n}\n",
        "seed_pair_draws_nothing": people_decls() + NET + _prop("pair", ["seed = 1", "using smt"]),
    }
    assert set(specs) == {r.name for r in options.UNREAD}
    for i, (name, text) in enumerate(specs.items()):
        d = tmp_path / str(i)
        d.mkdir()
        p = _project(d, text)
        (d / "models" / "people_dt.skops").write_bytes((FIX / "models" / "people_dt.skops").read_bytes())
        fired.clear()
        res = lint(p)
        assert not [x for x in res.diagnostics if x.is_error], (name, res.diagnostics)
        assert fired == [name], (name, fired, [x.message for x in res.diagnostics if x.code == "FS213"])
