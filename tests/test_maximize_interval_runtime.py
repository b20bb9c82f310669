"""A ``maximize`` interval ``[lower, upper]`` (``bound``) never claims more than the runtime and certify
give: the lower end is the best pair's measure as the model's runtime scores it (not the solver's
float64 evaluation, which the runtime's rounding may put above every pair the runtime scores), the
upper end a certified bound only (a solver's own bound goes to ``details.solver_upper_bound``).

Seen before (session 21, audit t3): an ONNX network with a Sigmoid head, ``unknown`` with the lower end
0.1243530018 where the runtime's largest difference is 0.1243529618. Here: float32 ONNX 6-4-1 networks
with a Sigmoid head whose float64 largest ``|p - p'|`` lies above onnxruntime's (checked per seed), the
truth by brute force over the integer domain, the solvers' path forced (FAIRSPEC_ENUMERATE_PAIRS=0).
Deterministic without a time-out: ``eps = 0.9`` gives a certified ``holds`` (whose lower end was the
float64 value, and its ``details.maximum`` said "proved"); ``eps`` between the runtime's largest and
the float64 one: the solver's best pair breaks eps in float64, not on the runtime -- a tie, which the
refinement over the whole domain decides (``holds``, proved on the runtime: its interval's upper end
the threshold, the lower end the best pair replayed). That case was ``unknown`` while the refinement
refused the unprotected one-hot block ``c`` (tests/test_tie_unprotected_onehot.py), and before that its
lower end was the float64 value too."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

SPEC = """features F {{
  g : bool  protected
  f0 : int in [0, 7]
  f1 : int in [0, 7]
  c : {{a, b, c}}
}}
model m = onnx("m.onnx", output = "y", score = prob)
encode F for m {{
  f0 : raw
  g : raw
  f1 : raw
  c : onehot
}}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |prob(m(x)) - prob(m(x'))| <= {eps}
  mode = maximize
}}
"""

#: seeds whose float64 largest difference lies above the runtime's (checked in the test)
SEEDS = (0, 2, 11)


def _net(folder, seed):
    """Save the seed's network; (the runtime's largest |p - p'| by brute force, the float64 one)."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    rng = np.random.default_rng(seed)
    layers = [(rng.normal(0, 1, (4, 6)), rng.normal(0, 0.5, 4), True),
              (rng.normal(0, 1, (1, 4)), rng.normal(0, 0.5, 1), False)]
    m = mlp_model(layers, "Sigmoid", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    rest = np.array([(a, b, *np.eye(3)[k]) for a, b, k in itertools.product(range(8), range(8), range(3))])
    s = ort.InferenceSession(str(folder / "m.onnx"), providers=["CPUExecutionProvider"])

    def X(g):
        return np.column_stack([rest[:, 0], np.full(len(rest), g), rest[:, 1:]])

    def runtime(g):
        return s.run(None, {"x": X(g).astype(np.float32)})[0].astype(np.float64).ravel()

    def real(g):
        h = X(g).astype(np.float64)
        for W, b, relu in layers:
            h = h @ W.astype(np.float32).astype(np.float64).T + b.astype(np.float32).astype(np.float64)
            h = np.maximum(h, 0.0) if relu else h
        return 1.0 / (1.0 + np.exp(-h.ravel()))

    return float(np.max(np.abs(runtime(1) - runtime(0)))), float(np.max(np.abs(real(1) - real(0))))


def _check(folder, monkeypatch, eps):
    from fairspec.pipeline import check
    from fairspec.report import to_json

    (folder / "s.fair").write_text(SPEC.format(eps=repr(eps)))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    return json.loads(to_json(check(folder / "s.fair")))["properties"][0]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("at", ["holds", "between"])
def test_the_interval_holds_the_runtimes_maximum(tmp_path, monkeypatch, seed, at):
    top, real = _net(tmp_path, seed)
    assert real > top, (seed, real, top)           # the float64 maximum overstates the runtime's
    eps = 0.9 if at == "holds" else (top + real) / 2
    v = _check(tmp_path, monkeypatch, eps)
    assert v["details"]["engine"] != "enumeration", v
    assert v["status"] == "holds" and v["how"] == "proved", v
    bound = v.get("bound")
    assert bound is not None, v                    # the runtime replays the best pair; certify bounds it
    lo, hi = bound
    assert lo <= top <= hi, (lo, top, hi, v)
    assert v["value"] == lo, v
    # proved only where the two ends meet (a holds' own "proved" is about the verdict, not the maximum)
    assert v["details"]["maximum"] != "proved" or hi - lo <= 1e-7, v


def test_a_solvers_bound_that_certify_did_not_give_is_no_upper_end(tmp_path, monkeypatch):
    """certify bounds nothing (its branch and bound stubbed to give up): the MILP's float64 bound is
    never the interval's upper end; the holds' proof that no pair exceeds the threshold is (the
    threshold as written, rounded up: 0.3 is 3/10, above the float 0.3), not called the maximum."""
    import math
    from fractions import Fraction

    import fairspec.backends.pair.certify as pc

    top, _ = _net(tmp_path, SEEDS[0])
    monkeypatch.setattr(pc, "certified_bound", lambda problem, left: (math.inf, None, None))
    for eps in (0.9, 0.3):
        v = _check(tmp_path, monkeypatch, eps)
        assert v["status"] == "holds" and v["how"] == "proved", v
        lo, hi = v["bound"]
        assert lo == v["value"] and lo <= top <= hi, v
        assert Fraction(hi) >= Fraction(str(eps)) and math.nextafter(hi, 0) < Fraction(str(eps)), v
        assert "threshold" in v["details"]["maximum"] and not v["details"]["maximum"].startswith("proved"), v


def test_an_unreported_witness_gives_its_runtime_measure(tmp_path, monkeypatch):
    """A violated maximize whose witness is not reported (here every witness declared fragile: another
    batch may round it away) is unknown; its lower end is the pair's runtime measure, not the
    solver's float64 one."""
    import fairspec.kinds.individual_fairness as indiv

    top, real = _net(tmp_path, SEEDS[0])
    monkeypatch.setattr(indiv, "_fragile", lambda prop, model, X2, details: {"moved": 1, "reproduced": False})
    v = _check(tmp_path, monkeypatch, 0.01)
    assert v["status"] == "unknown" and "batch" in v["reason"], v
    lo, hi = v["bound"]
    assert lo <= top <= hi and v["value"] == lo, (lo, top, hi, v)
    assert v["details"]["solver_best_value"] == pytest.approx(real, rel=0, abs=1e-12), v


# ------------------------------------------------------------------ the class post (kinds/multi_pairs.py)

CLASS_SPEC = """features F {
  a : int in [0, 30]
  b : int in [0, 40]
  sex : {F, M} protected
}
model m = onnx("m.onnx", output = "y", score = logit)
encode F for m { a : raw  b : raw  sex : onehot }
property p {
  forall x, x' : F
  require x.* == x'.* except {sex}
  ensure class(m(x)) == class(m(x'))
  mode = maximize
}
"""


@pytest.mark.parametrize("seed", [7, 9, 10])
def test_a_class_maximum_holds_the_runtimes(tmp_path, monkeypatch, seed, stub=False):
    """A float32 4-6-3 ONNX network whose class never changes (holds, certified): the largest
    min(g_c(x), -g_c(x')) on onnxruntime's logits by brute force lies inside the interval (these seeds'
    float64 value lay above it, and details.maximum said "proved" across a gap of about 1e-5)."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    from fairspec.pipeline import check

    rng = np.random.default_rng(seed)
    W1 = rng.normal(0, 1, (6, 4))
    W1[:, :2] /= 20.0
    W1[:, 2:] /= 50.0                       # sex moves the logits little: the class never changes
    m = mlp_model([(W1, rng.normal(0, 0.5, 6), True), (rng.normal(0, 1, (3, 6)), rng.normal(0, 0.5, 3), False)],
                  "Identity", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    s = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    A = np.array([(a, b) for a in range(31) for b in range(41)], dtype=np.float32)
    Y = [s.run(None, {"x": np.column_stack([A, np.tile(e, (len(A), 1))]).astype(np.float32)})[0].astype(np.float64)
         for e in ((1, 0), (0, 1))]

    def g(Yi, c):
        return Yi[:, c] - np.max(np.delete(Yi, c, axis=1), axis=1)

    truth = max(float(np.max(np.minimum(g(Y[i], c), -g(Y[1 - i], c)))) for i in (0, 1) for c in range(3))
    (tmp_path / "s.fair").write_text(CLASS_SPEC)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = check(tmp_path / "s.fair").verdicts[0]
    assert v.status == "holds" and v.bound is not None, (v.status, v.reason, v.details)
    lo, hi = v.bound
    assert lo <= truth <= hi and v.value == lo, (lo, truth, hi)
    assert v.details["maximum"] != "proved" or hi - lo <= 1e-7, v.details
    if stub:       # no certified bound: the proof that no pair changes class bounds the measure by 0
        assert hi == 0.0 and "threshold" in v.details["maximum"], v.details


def test_a_class_holds_without_a_bound_gives_the_threshold(tmp_path, monkeypatch):
    """solve_class's certified bound stubbed to infinity (certify bounded nothing): the certified
    holds still says no pair changes class, i.e. no min(g_c(x), -g_c(x')) above 0."""
    import dataclasses

    import fairspec.backends.pair.multiclass as mc

    real = mc.solve_class
    monkeypatch.setattr(mc, "solve_class", lambda *a, **k: dataclasses.replace(real(*a, **k), bound=float("inf")))
    test_a_class_maximum_holds_the_runtimes(tmp_path, monkeypatch, 7, stub=True)


@pytest.mark.parametrize("enumerate_pairs", [True, False])
def test_a_lower_end_is_not_above_the_exact_largest_difference(tmp_path, monkeypatch, enumerate_pairs):
    """The harness's multiclass-4-p6 (|prob(m(x), 0) - prob(m(x'), 0)| < 1.0 on a logit head: the softmax
    computed in float64): the largest difference's nearest float lies 2**-55 above its exact value. The
    enumeration and the softmax branch and bound reported it as the lower end; it is the float at or
    below it now (the enumeration's value stays the nearest; the branch and bound's, on the real softmax's
    bounds since session 33, is their certain lower end), the interval holding the exact maximum. Session 34:
    both report the exact maximum rounded down (certify.softmax_exact), not the float64 nearest above it; the
    harness's truth is the REAL softmax's (mpmath, differential/softmax_real.py)."""
    from fractions import Fraction

    from differential import multiclass
    from differential.judge import run_instance

    if not enumerate_pairs:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    inst = multiclass.generate(4)
    (o,) = run_instance(inst, tmp_path, only=["p6"])
    T = next(p for p in inst.props if p.name == "p6").truth.exact
    from fairspec.certify.rounding import float_down

    assert float(T) > float_down(T), "the case: the nearest float lies above the exact maximum"
    assert o.value == float_down(T), (o.value, T)       # the exact maximum, rounded down (either path)
    assert o.klass == "correct", (o.defect, o.why, o.bound)
    assert Fraction(o.bound[0]) <= T <= Fraction(o.bound[1]), o.bound


@pytest.mark.parametrize("case", ["regression-solver-38000022-p2", "regression-solver-38000024-p0"])
def test_an_smt_violated_maximum_reports_its_best_pair(tmp_path, case):
    """using smt, mode = maximize on a torch regressor (the harness's cases): the witness was the decision's
    first violation (measure 1.375) while the interval's "proved" was about the best pair (5.140625) and
    the certified bound: the reported lower end, the witness's measure, lay far below the maximum that
    details.maximum called proved. The best pair, a violation too, is the witness now."""
    from differential import campaign
    from differential.judge import run_instance

    fam, seed, name = case.rsplit("-", 2)
    inst = campaign.families()[fam](int(seed))
    (o,) = run_instance(inst, tmp_path, only=[name])
    assert o.status == "violated" and o.klass == "correct", (o.defect, o.why, o.bound)
    assert o.value == o.truth_value == o.bound[0], (o.value, o.truth_value, o.bound)
