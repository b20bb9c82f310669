"""A fixed-seed slice of the soundness campaign (issue 20, deliverable 7; bench/soundness.py
runs the long campaign): small random instances of every family, each property's truth by
enumeration on the model's own runtime (tests/differential/), fairspec's verdict judged
against it.

The slice is cut into *cells* -- a family and a setting (network and trees: backend x
decide/maximize; distributions: backend; k-discrimination: network or tree model; PBA:
engine; data: how the decisions are given) -- and each cell is one test: no wrong verdict (a
false proof, a false violation, a witness that is no domain point or does not replay, a
maximum or exact value that is not, a crash). A cell whose slice still has wrong verdicts on
main is marked ``xfail(strict=True)`` naming its issue-20 classes and the engineer who owns the
fix: the fix turns it into an XPASS, i.e. a failure, and the fixer removes the marker. The
seeds were chosen so that every marked cell holds at least two wrong verdicts where the
campaign found them (bench/soundness.py --seed 0 --count 40 on main 33ecb05), on instances that
take seconds. The *-solver families run the network, tree and k-discrimination instances with
enumeration of small domains switched off, so the solver path stays under test while
enumeration decides what a user's small domains get.

Per family, `unknown` on small domains (at most 1,000 points) is at most 1% of the properties
(rounded up); an `unknown` whose reason is a time limit is not counted there (a loaded machine
may time out; the campaign measures those), so no test here depends on the machine's speed.
A generator error or a spec that lint rejects fails the family's `runs` test (a harness bug).

Re-run one property alone: ``python bench/soundness.py --case network-16-p5`` (the instance
seed is the slice's seed).
"""

from __future__ import annotations

import math

import pytest

from differential import campaign
from differential.api import CELLS as API_SHAPES
from differential.model_readings import CELLS as READING_SHAPES
from differential.pipelines import CELLS as PIPELINE_SHAPES

# family -> instance seeds of the slice (each instance has 4-8 properties). The *-solver families
# are the same instances with enumeration of small pair domains switched off
# (FAIRSPEC_ENUMERATE_PAIRS=0): fairspec's MILP / SMT / certified branch-and-bound path, which a
# user meets on domains too large to enumerate, judged where the truth is still known.
SLICE = {
    # 13000045: torch, a maximize bound from one batch below another batch's maximum (session 13);
    # 13000020 (solver): a maximize value in float64, not the witness's runtime scores;
    # 20000043 (solver): a float16 ONNX graph, bounded as if it computed in float32 (a maximize bound
    # below the runtime's maximum); 25000020 (solver): an ONNX graph that doubles a hidden layer (an exact
    # Mul) and halves the next weights, proved and maximized; 25000007 (solver): a first layer spelt
    # MatMul by 10 W, Mul by 0.1 (two roundings, not the runtime's own layer: unknown, never proved)
    "network": (4, 12, 16, 21, 4000038, 13000045),
    "network-solver": (7, 10, 12, 20, 21, 22, 30, 32, 3000028, 5000017, 13000020, 20000043, 25000020, 25000007),
    "network-sklearn-solver": (3000026,),   # a logistic regression's label maximize (prob vs logit units)
    "trees": (5, 6, 7, 9, 12),
    "trees-solver": (7, 20, 24, 69, 70, 108, 117),
    # 90000000 (session 33): bootstrap = N over distributions estimated from the rows; 93000010: q12's
    # `disparate_impact(...) >= 1` with bootstrap = 200, true conditional DI exactly 1, was violated (every resample
    # lies at or below 1: the percentile interval excludes it whatever the truth)
    # 103000001 (session 34): influence(...) and path_specific(..., mediators {...}) over the declared network
    "distribution": (3, 5, 15, 16, 20, 32, 33, 38, 90000000, 93000010, 103000001),
    # 49000002: a share claim `> 1` (FS507 since session 26) that the generator wrote until session 27
    "pba": (1, 3, 4, 5, 7, 4000001, 4000003, 49000002),
    # 90000008 (session 33): decisions spelt as words in any case, a file without its header line, the metrics
    # of differential/data_more.py (FDR / FOR, ratios, entropy indices, a derived group, to_overall on a tree)
    # 103000021 (session 34): calibration_gap on the logged scores, over the CSV and over the rows read from Parquet;
    # group metrics over a `where =` row filter and a shipped policy applied (every instance from 103,000,000 on)
    "data": (0, 1, 2, 6, 8, 90000008, 103000021),
    # 18000044: torch, counterfactuals within the runtime's rounding of a bucket boundary (batch ties)
    "kdisc": (1, 4, 5, 6, 8, 10, 39, 18000044),
    "kdisc-solver": (10, 39),
    # 91000003 (session 33): torch, k-discrimination of the multiclass network (classes, class = c)
    "multiclass": (2, 4, 91000003),
    # 18000022: torch, class-change witnesses on a class boundary, replayed alone, as a pair and reversed
    "multiclass-solver": (4, 6, 18000022),
    "regression": (6, 10),
    "regression-solver": (6, 10),
    "trees-multiclass": (0, 11),
    "trees-regression": (1, 7),
    "trees-multiclass-solver": (0, 11),
    "trees-regression-solver": (1, 7),
    # one instance of each shape (the seed's remainder by 8: shipped.SHAPES), each with its expected
    # refusals (the ambiguous declaration) and the verdicts of the declaration that names the choice
    "shipped": tuple(range(8)),
    # the Python API on in-memory objects: one instance of each shape (the seed's remainder by 9:
    # api.SHAPES); 175 is a pipeline with StandardScaler(with_mean=False) (folded with its mean_
    # subtracted until session 19: false proofs); 6 an XGBClassifier whose early stopping leaves rounds out,
    # fit on pandas category columns (its slice lost their categories until session 19); 104 and 142 an
    # XGBClassifier and an LGBMClassifier fit on categories in another order than declared (the declared
    # order was read as the model's codes until session 19; FS420 now); 7 a raw LightGBM Booster, 16 an
    # LGBMClassifier with early stopping; 35 a torch module with Dropout, given in training mode.
    # Session 20, one wide pipeline per final estimator (api.WIDE_FINALS; "whole": preprocessing fairspec
    # cannot fold, evaluated by the pipeline's own predict): 13 gradient boosting (a NaN in a feature
    # column of the frame), 67 MLP (whole), 40 extra trees (whole; NaN in a column no property reads),
    # 202 histogram GB (NaN in a feature), 103 logistic (whole; NaN labels), 112 decision tree (NaN
    # labels), 364 random forest (whole; NaN in a feature); 35000050 a logistic pipeline evaluated whole
    # whose logit post was an internal error, 35000005 gradient boosting evaluated whole (unknown on a
    # 42-point domain until session 20), 36000077 an XGBoost binary:hinge model declared output =
    # "margin" (api-solver: a data flip on the logistic of its margin reported violated; its prob posts are
    # FS415 since session 21). Session 21, one wide pipeline per final regressor (api.WIDE_REGRESSORS,
    # value posts): 38000002 histogram GB, 38000011 MLP, 38000083 GB, 38000110 linear, 38000155 forest,
    # 38000335 decision tree
    "api": (0, 1, 2, 3, 175, 5, 104, 6, 7, 16, 142, 8, 35, 13, 67, 40, 202, 103, 112, 364, 35000050, 35000005,
            36000077, 38000002, 38000011, 38000083, 38000110, 38000155, 38000335),
    "api-solver": (0, 1, 2, 3, 175, 5, 104, 6, 7, 16, 142, 8, 35, 13, 67, 40, 202, 103, 112, 364, 35000050,
                   35000005, 36000077, 38000002, 38000011, 38000083, 38000110, 38000155, 38000335),
    # group metrics and flips on data rows of batch-dependent runtimes (data_batched.py), one per kind:
    # 40000001 an MLPClassifier and 40000032 a torch Sigmoid network whose tie rows change label with the
    # batch (verdicts that must be unknown), 40000002 an SVC(probability=True), 40000003 a GaussianNB
    # 49000017: an error_rate_ratio `> 1` (FS507), written by the generator until session 27
    # 50000008: a torch model whose flips on data were two rows, the reported one with a score at the
    # threshold itself (another batching decided it alike); the farthest flip is reported since session 27
    "data-batched": (40000001, 40000032, 40000002, 40000003, 49000017, 50000008,
                     66000008,    # 66000008: the only flip decided at the threshold (torch): unknown
                     82000052),   # 82000052 (and 50000008): eflips, the only |p - p'| a few ulps above eps (torch)
    # session 28's pipeline constructs through the API (pipelines.SHAPES, the seed's remainder by 6):
    # 0 an infrequent-grouping OrdinalEncoder before an LGBMClassifier, 3 an encoder fitted on
    # categories the feature does not declare (FS437; a one-hot so fitted is refused with FS422),
    # 4 an XGBClassifier final, 3000021 a pipeline evaluated
    # whole whose encoder lacks a declared category (FS422 at lint since session 29)
    "pipelines": (0, 1, 2, 3, 4, 5, 3000021),
    # session 30: repair goals on trees and forests (differential/repair.py), judged on the written file;
    # 30000011: a forest whose averaged vote is exactly 1/2 on some rows, where predict and predict_proba > 1/2
    # part (the repair core counted by the latter until session 30: a wrong minimal and budget, and an
    # internal error); 34000005 a forest given tie votes (repair.TIE_VOTES): three internal errors then
    "repair": (0, 1, 2, 3, 30000011, 34000005),
    # session 30: pre-conditions no pair meets (certify's no-pair proof) and neighbours some pair meets
    # (differential/vacuous.py)
    # 90000000 (session 33): three more properties bounding a real feature (read with weight 0) by non-dyadic
    # constants at its range's ends
    "vacuous": (0, 1, 2, 90000000),
    # the same with enumeration off: tied int bounds narrow the solvers' box (kinds/lowering.tied_int_bounds);
    # 41000005: a violation the MILP finds only inside the narrowed box (4 wrong without it, seed 41)
    # 62000006: two tolerance lines on one feature; 83000004 (session 32): a pre-condition testing a boolean coded
    # `code {false = 1, true = 0}`, whose witness value "false" the witness check read as true (a violated pair
    # that breaks `x'.g == true`)
    "vacuous-solver": (0, 41000005, 62000006, 83000004),
    # session 30: tree k-discrimination in leaf boxes (the cells' cut lowered: differential/kdisc_boxes.py)
    "kdisc-boxes": (0, 1),
    # session 31: a network whose hidden layer proves the boxes its bounds leave (differential/network_split.py):
    # 72000007 (float32 weights, so the runtime error bound E > 0): p0 (label) proved with 2 Proofs of
    # certify.layersplit (14 boxes), p1 (logit eps) with 2 of certify.relsplit (28 boxes), in the first decision pass
    "network-split-solver": (72000007,),
    # session 33: a real feature a float32 network is steep or gentle in, bounded to a window a few float32 steps
    # wide with non-dyadic constants (differential/real_window.py): the runtime reads float32(rr)
    "real-window": (0, 3),
    # session 37: one instance of each shape sessions 34-36's auditors found wrong readings in (12: XGBoost with
    # base_score; 5: a linear-tree LightGBM, FS401; 13: a 3-class HistGradientBoosting with categorical splits, its
    # class posts unknown on 8 points before)
    "model-readings": (0, 1, 2, 3, 4, 5, 6, 12, 13),
}


def _pair_cell(m: dict) -> str:
    return f"{m.get('backend')}-{'maximize' if m.get('mode') == 'maximize' else 'decide'}"


CELL_OF = {
    "network": _pair_cell,
    "network-solver": _pair_cell,
    "network-sklearn-solver": _pair_cell,
    "trees": _pair_cell,
    "trees-solver": _pair_cell,
    "distribution": lambda m: m.get("backend"),
    "kdisc": lambda m: "network" if m.get("model") == "onnx" else "trees",
    "kdisc-solver": lambda m: "network" if m.get("model") == "onnx" else "trees",
    "pba": lambda m: m.get("engine"),
    "data": lambda m: m.get("mode"),
    "data-batched": lambda m: m.get("kind"),
    "multiclass": lambda m: m.get("backend"),
    "multiclass-solver": lambda m: m.get("backend"),
    "regression": lambda m: m.get("backend"),
    "regression-solver": lambda m: m.get("backend"),
    "trees-multiclass": lambda m: m.get("backend"),
    "trees-regression": lambda m: m.get("backend"),
    "trees-multiclass-solver": lambda m: m.get("backend"),
    "trees-regression-solver": lambda m: m.get("backend"),
    "shipped": lambda m: m.get("shape"),
    "api": lambda m: m.get("shape"),
    "api-solver": lambda m: m.get("shape"),
    "pipelines": lambda m: m.get("shape"),
    "repair": lambda m: m.get("model"),
    "vacuous": lambda m: m.get("cell"),
    "vacuous-solver": lambda m: m.get("cell"),
    "kdisc-boxes": lambda m: "trees",
    "network-split-solver": lambda m: m.get("kind"),
    "real-window": lambda m: m.get("backend"),
    "model-readings": lambda m: m.get("shape"),
}

PAIR_CELLS = [f"{b}-{d}" for b in ("default", "milp", "milp-scip", "smt") for d in ("decide", "maximize")]
CELLS = {
    "network": PAIR_CELLS,
    "network-solver": PAIR_CELLS,
    "network-sklearn-solver": ["smt-maximize"],
    "trees": PAIR_CELLS,
    "trees-solver": PAIR_CELLS,
    "distribution": ["default", "dp", "ssat", "elimination"],
    "kdisc": ["network", "trees"],
    "kdisc-solver": ["network", "trees"],
    "pba": ["highs", "scip", "lp"],
    "data": ["decision", "score", "rule"],
    "data-batched": ["torch", "mlp", "svc", "gnb"],
    "multiclass": ["default", "milp", "milp-scip", "smt"],
    "multiclass-solver": ["default", "milp", "milp-scip", "smt"],
    "regression": ["default", "milp", "milp-scip", "smt"],
    "regression-solver": ["default", "milp", "milp-scip", "smt"],
    "trees-multiclass": ["default", "milp", "smt"],
    "trees-regression": ["default", "milp", "smt"],
    "trees-multiclass-solver": ["default", "milp", "smt"],
    "trees-regression-solver": ["default", "milp", "smt"],
    "shipped": ["torch-sigmoid", "torch-softmax", "torch-tuple", "onnx-logistic", "onnx-tree", "sklearn-strings",
                "sklearn-12", "linearsvc"],
    "api": list(API_SHAPES),
    "api-solver": list(API_SHAPES),
    "pipelines": list(PIPELINE_SHAPES),
    "repair": ["tree", "forest"],
    "vacuous": ["empty", "met"],
    "vacuous-solver": ["empty", "met"],
    "kdisc-boxes": ["trees"],
    "network-split-solver": ["one_live"],
    "real-window": ["default", "milp", "smt"],
    "model-readings": list(READING_SHAPES),
}

# (family, cell) -> (owner, what is still wrong there).  Remove an entry when its test XPASSes.
# State of main ec598e5 (bench/soundness.py --seed 0 --count 40, --seed 3 --count 40):
# enumeration decides the small domains of every family without a wrong verdict; the network
# solver path still has wrong verdicts in every cell (trees-solver: 0 wrong since 1da3c92, the tree
# engines' holds is unknown unless certified); a `holds (proved)` without a certify Proof is wrong
# (the charter), which PBA and the network solver path still give. The network solver path's
# default / milp / milp-scip cells: 0 wrong since the pairs certification (a MILP holds certified
# by the BaB on the runtime, maximize as [best pair, certified bound], witnesses replayed exactly);
# smt's cells too once a partitions' holds without a Proof is certified as a whole in run_pair.
_MAX = "class 1: maximize reports a value below / above the true maximum (a float solver's optimum)"
_WIT = "classes 3, 5: witnesses outside a (strict) require tolerance"
_NOPROOF = "holds (proved) without a certify Proof (JSON proof null)"
XFAIL: dict = {
}

# family -> (owner, why) while its small-domain unknowns (time limits aside) are over the target
# (the *-solver families are outside the target: a user gets enumeration on their domains)
XFAIL_UNKNOWN: dict = {
}



#: family -> each property's timeout in the slice (seconds), where the campaign's would let the machine's speed decide
#: what a test asserts: network-split-solver's first decision pass gets a quarter of the timeout (the attack
#: another), and the split is reached in it in ~2 s of CPU; 30 s let a loaded machine end it before the split
SLICE_BUDGETS = {"network-split-solver": 600}


def _budget(fam):
    import contextlib

    from differential import network_split

    return network_split.budget(SLICE_BUDGETS[fam]) if fam in SLICE_BUDGETS else contextlib.nullcontext()


@pytest.fixture(scope="module")
def slice_results():
    from fairspec.runtime import executor

    saved = dict(executor._CONFIG)
    executor.configure(workers=1)        # partitions in process: no pool started by the slice
    cache: dict = {}

    def results(fam):
        if fam not in cache:       # each family's slice runs once, for all of its tests
            with _budget(fam):
                cache[fam] = [campaign.run_one(fam, s) for s in SLICE[fam]]
        return cache[fam]

    try:
        yield results
    finally:
        executor._CONFIG.update(saved)


def _describe(o: dict) -> str:
    m = o["meta"]
    where = "/".join(str(m[k]) for k in ("backend", "mode", "post", "op", "model", "engine", "kind", "metric")
                     if m.get(k) not in (None, "", False))
    return (f"{campaign.case_id(o)}: {o['defect']} [{where}] ({o['why'][:160]}); "
            f"re-run: python bench/soundness.py --case {campaign.case_id(o)}")


def _params():
    out = []
    for fam, cells in CELLS.items():
        for cell in cells:
            marks = []
            if (fam, cell) in XFAIL:
                who, why = XFAIL[(fam, cell)]
                marks.append(pytest.mark.xfail(strict=True, reason=f"issue 20, owner {who}: {why}"))
            out.append(pytest.param(fam, cell, marks=marks, id=f"{fam}-{cell}"))
    return out


@pytest.mark.parametrize("family", list(SLICE))
def test_slice_runs(slice_results, family):
    """Every instance generated and checked; no spec rejected by lint (a harness or lint bug)."""
    results = slice_results(family)
    errors = [f"{r['family']} {r['seed']}: {r['error']}" for r in results if r.get("error")]
    assert not errors, errors[0]
    rejected = [f"{campaign.case_id(o)}: {o['why']}" for r in results for o in r["outcomes"]
                if o["klass"] == "rejected"]
    assert not rejected, rejected
    seen = {CELL_OF[family](o["meta"]) for r in results for o in r["outcomes"]}
    assert set(CELLS[family]) <= seen, f"cells without a property in the slice: {set(CELLS[family]) - seen}"


@pytest.mark.parametrize("family, cell", _params())
def test_no_wrong_verdict(slice_results, family, cell):
    outs = [o for r in slice_results(family) for o in r["outcomes"] if CELL_OF[family](o["meta"]) == cell]
    assert outs, f"no property of the slice falls in {family}/{cell}"
    wrong = [_describe(o) for o in outs if o["klass"] == "wrong"]
    assert not wrong, f"{len(wrong)} wrong of {len(outs)}:\n" + "\n".join(wrong)


def _unknown_params():
    out = []
    for fam in [f for f in SLICE if not f.endswith("-solver")]:
        marks = []
        if fam in XFAIL_UNKNOWN:
            who, why = XFAIL_UNKNOWN[fam]
            marks.append(pytest.mark.xfail(strict=True, reason=f"owner {who}: {why}"))
        out.append(pytest.param(fam, marks=marks, id=fam))
    return out


@pytest.mark.parametrize("family", _unknown_params())
def test_unknown_within_target(slice_results, family):
    # group metrics on data are estimates (domain -1): their `unknown` is a statistical answer,
    # outside the target, so that family passes trivially
    small = [o for r in slice_results(family) for o in r["outcomes"] if campaign.is_small(o)]
    unknown = [o for o in small if o["klass"] == "unknown" and not campaign.is_time_limit(o)
               and not campaign.is_batch_tie(o)]
    allowed = math.ceil(campaign.UNKNOWN_TARGET * len(small))
    assert len(unknown) <= allowed, (f"{len(unknown)} unknown of {len(small)} (allowed {allowed}):\n" +
                                     "\n".join(f"{campaign.case_id(o)}: {o['reason']}" for o in unknown))


def test_network_split_reaches_the_split(slice_results):
    """The slice's network-split-solver instance reaches proof-path row 14 through ``fairspec check``: certify's
    split at a hidden layer mints Proofs (counted by the family's wrapper, ``meta.split_proofs``).

    Neither skipped nor failed by the machine's speed: the split is reached in the first decision pass, which
    gets a quarter of the property's timeout; with the campaign's 30 s a loaded machine could end that pass
    before the split (this test was skipped then), so the slice gives the instance a 600 s timeout
    (``SLICE_BUDGETS``: the properties take ~2 s of CPU each; they are decided in the first pass, so the larger
    budget is never spent) and the split must be reached, whatever the load. That the split checks mint Proofs
    for such boxes, with no budget at all, is tests/test_layer_split.py's and tests/test_relational_split.py's
    (test_decide_partitions_proves_partitions_by_the_split, ..._by_the_relational_split)."""
    outs = [o for r in slice_results("network-split-solver") for o in r["outcomes"]]
    assert sum(o["meta"].get("split_proofs") or 0 for o in outs) > 0, \
        [(o["name"], o["status"], o["seconds"], o["meta"].get("split_calls")) for o in outs]
