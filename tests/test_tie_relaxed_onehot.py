"""The tie fallback (``pair_ties.decide_at_a_tie``: the refinement over the whole domain as one
box) for the two shapes it used to leave ``unknown`` (session 21, h5): a **relaxed** input (the pair's
``b`` may differ by at most 1, ``require |x.b - x'.b| <= 1``) and a protected attribute encoded
**one-hot** (three categories). Tiny ReLU networks biased to ties -- dyadic weights and biases (float32
computes them exactly), exact zeros, eps the exact largest difference -- on the whole-domain solver path
(``FAIRSPEC_ENUMERATE_PAIRS=0``); every verdict compared with brute force over every admissible pair on
the model's own runtime and with the enumeration of the whole domain, and every property decided (``holds (proved)`` with certify's Proof, or
``violated`` with a witness that violates on the runtime).

The refinement takes a relaxed input as counterfactual values (``counterfactuals.counterfactuals``: its every
value, pairs within the tolerance); certify accepts such a tiling only when each part's recorded relation
holds every pair the property admits (``certify.partitions._relation_ok``), which the last tests tamper
with. No test here depends on the machine's speed: the specs' timeout only guards a hang."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

A, B = range(0, 6), range(0, 4)

HEAD = """features F {{
  a : int in [0, 5]
  b : int in [0, 3]
  s : {cats} protected
}}
model m = {decl}
encode F for m {{
  a, b : raw
  s : {enc}
}}
"""


def _net(seed: int, n_in: int):
    """A 2-hidden-unit ReLU net with dyadic weights and biases, many exact zeros (ties at grid points)."""
    rng = np.random.default_rng(seed)
    W1 = rng.choice([-1.0, -0.5, -0.25, 0.0, 0.0, 0.25, 0.5, 1.0], size=(2, n_in))
    b1 = rng.choice([-1.0, -0.5, 0.0, 0.25, 0.5], size=2)
    W2 = rng.choice([-1.0, -0.5, 0.5, 1.0], size=(1, 2))
    b2 = rng.choice([-0.25, 0.0, 0.25], size=1)
    return W1, b1, W2, b2


def _build(tmp_path, seed: int, shape: str, lib: str):
    """The model file, its declaration, and the runtime's logit per point ``(a, b, s)`` (s: the category)."""
    onehot = shape == "onehot"
    cats = 3 if onehot else 2
    n_in = 2 + (cats if onehot else 1)
    W1, b1, W2, b2 = _net(seed, n_in)
    points = [(a, b, s) for a in A for b in B for s in range(cats)]
    X = np.array([[a, b, *([float(s == c) for c in range(cats)] if onehot else [s])] for a, b, s in points],
                 dtype=np.float64)
    if lib == "onnx":
        onnx = pytest.importorskip("onnx")
        ort = pytest.importorskip("onnxruntime")
        from onnx_nets import mlp_model

        onnx.save(mlp_model([(W1, b1, True), (W2, b2, False)], batch="N"), str(tmp_path / "m.onnx"))
        sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
        z = sess.run(None, {"x": X.astype(np.float32)})[0][:, 0]
        decl = 'onnx("m.onnx")'
    else:
        torch = pytest.importorskip("torch")
        m = torch.nn.Sequential(torch.nn.Linear(n_in, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
        with torch.no_grad():
            for layer, (W, b) in zip((m[0], m[2]), ((W1, b1), (W2, b2))):
                layer.weight.copy_(torch.tensor(W))
                layer.bias.copy_(torch.tensor(b))
        m.eval()
        torch.jit.save(torch.jit.script(m), str(tmp_path / "m.pt"))
        with torch.no_grad():
            z = m(torch.tensor(X, dtype=torch.float32)).double().numpy()[:, 0]
        decl = 'torch("m.pt")'
    head = HEAD.format(cats="{F, M, X}" if onehot else "{F, M}", decl=decl, enc="onehot" if onehot else "code")
    return head, {p: float(v) for p, v in zip(points, z)}


def _pairs(z: dict, relaxed: bool):
    """Every admissible ordered pair: the same a, another s, b equal (or within 1 when relaxed)."""
    for x, y in itertools.product(z, z):
        if x[0] == y[0] and x[2] != y[2] and (abs(x[1] - y[1]) <= 1 if relaxed else x[1] == y[1]):
            yield x, y


def _prop(name: str, post: str, relaxed: bool, strict: bool = False) -> str:
    # ``< 2`` on an integral input is ``<= 1`` (individual_fairness._relaxed): the same pairs
    rel = ("  require |x.b - x'.b| < 2\n" if strict else "  require |x.b - x'.b| <= 1\n") if relaxed else ""
    return (f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n{rel}  ensure {post}\n"
            "  timeout = 600s\n}\n")


CASES = [(seed, shape) for shape in ("relaxed", "onehot") for seed in range(6)]


@pytest.mark.parametrize("lib", ["torch32", "onnx"])
@pytest.mark.parametrize("seed,shape", CASES)
def test_ties_with_relaxed_inputs_or_onehot_groups_agree_with_brute_force(tmp_path, monkeypatch, seed, shape, lib):
    from fairspec.pipeline import check

    head, z = _build(tmp_path, seed, shape, lib)
    relaxed = shape == "relaxed"
    pairs = list(_pairs(z, relaxed))
    flip = any((z[x] > 0) != (z[y] > 0) for x, y in pairs)
    dmax = max(abs(Fraction(z[x]) - Fraction(z[y])) for x, y in pairs)
    eps = repr(float(dmax))
    assert Fraction(eps) == dmax                     # dyadic: the largest difference is written exactly
    odd = bool(seed % 2)
    spec = head + _prop("lab", "label(m(x)) == label(m(x'))", relaxed, odd) + \
        _prop("le", f"|logit(m(x)) - logit(m(x'))| <= {eps}", relaxed, odd)
    truth = {"lab": not flip, "le": True}
    if dmax > 0:                                     # `< 0` is refused by lint (FS307)
        spec += _prop("lt", f"|logit(m(x)) - logit(m(x'))| < {eps}", relaxed, odd)
        truth["lt"] = False
    (tmp_path / ".git").mkdir()
    (tmp_path / "spec.fair").write_text(spec)
    enumerated = {v.name: v.status for v in check(tmp_path / "spec.fair").verdicts}
    assert enumerated == {k: "holds" if t else "violated" for k, t in truth.items()}
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the whole-domain solver path
    report = check(tmp_path / "spec.fair")
    assert [v.name for v in report.verdicts] == list(truth), report.diagnostics
    for v in report.verdicts:
        assert v.status == enumerated[v.name], (seed, shape, lib, v.name, v.status, v.reason)
        if v.name == "le":          # the tie: the solvers stop at it, the refinement over the domain decides it,
            # unless the runtime is exact over the box (dyadic weights, integral inputs: E = 0,
            # certify.exact_runtime.exact_rows), where certify's exact single-pair leaves prove the tie
            assert (v.details or {}).get("at_a_tie") or v.proof is not None and v.proof.method == "bab-certificate" \
                and (v.proof.detail.get("runtime") or {}).get("runtime_error") == 0.0, (seed, shape, lib, v.reason)
        assert (v.status == "holds") == truth[v.name], (seed, shape, lib, v.name, v.status, v.reason)
        if v.status == "holds":
            assert v.how == "proved" and v.proof is not None, (v.name, v.how, v.reason)
            continue
        x = tuple(int(t) for t in v.witness.x[:2]) + (_category(v.witness.x, shape),)
        y = tuple(int(t) for t in v.witness.x_prime[:2]) + (_category(v.witness.x_prime, shape),)
        assert (x, y) in set(pairs), (x, y)
        if v.name == "lab":
            assert (z[x] > 0) != (z[y] > 0), (x, y, z[x], z[y])
        else:
            assert abs(Fraction(z[x]) - Fraction(z[y])) >= dmax, (x, y)


@pytest.mark.parametrize("seed,shape", [(0, "relaxed"), (3, "relaxed"), (0, "onehot"), (3, "onehot")])
def test_maximize_and_partitions_at_such_a_tie(tmp_path, monkeypatch, seed, shape):
    """``mode = maximize`` (``pair_ties.maximum_at_a_tie``) and ``partitions = 4`` (the decision pass per partition,
    combined by certify) at the same ties: ``<=`` holds -- maximize's interval holds the exact largest
    difference -- and ``<`` is violated."""
    from fairspec.pipeline import check

    head, z = _build(tmp_path, seed, shape, "torch32")
    relaxed = shape == "relaxed"
    dmax = max(abs(Fraction(z[x]) - Fraction(z[y])) for x, y in _pairs(z, relaxed))
    eps = repr(float(dmax))
    spec = head
    for extra, nm in (("  mode = maximize\n", "m"), ("  partitions = 4\n", "p")):
        for op, tag in (("<=", "le"), ("<", "lt")):
            spec += _prop(nm + tag, f"|logit(m(x)) - logit(m(x'))| {op} {eps}", relaxed).replace(
                "  timeout", extra + "  timeout")
    (tmp_path / ".git").mkdir()
    (tmp_path / "spec.fair").write_text(spec)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in check(tmp_path / "spec.fair").verdicts}
    assert {k: v.status for k, v in got.items()} == {"mle": "holds", "mlt": "violated", "ple": "holds",
                                                     "plt": "violated"}, {k: v.reason for k, v in got.items()}
    assert got["mle"].proof is not None and got["ple"].proof is not None
    lo, hi = got["mle"].bound
    assert Fraction(lo) <= dmax <= Fraction(hi)


def _category(row, shape: str) -> int:
    return int(np.argmax(row[2:])) if shape == "onehot" else int(row[2])


# ---------------------------------------------------------------------------------------------
# certify: a relaxed property's tiling is accepted only with every admitted pair compared
# ---------------------------------------------------------------------------------------------

def _relaxed_problem(eps: float = 4.0, strict: bool = False, seed: int = 1):
    from fairspec.backends.pair import PairProblem
    from conftest import protected_weight_net

    net = protected_weight_net(seed, 1.0, True, False, name="relaxed-tie")
    return PairProblem(net, lo=[0, 0, 0, 0], hi=[5, 5, 3, 1], integer=[True] * 4, free=(3,), relaxed=((2, 1.0),),
                       post="logit", eps=eps, eps_strict=strict)


def _largest(p) -> float:
    """The largest |z - z'| over the admissible pairs (b within 1, s differs), brute force on the float64 net."""
    X = np.array(list(itertools.product(range(6), range(6), range(4), range(2))), dtype=np.float64)
    z = dict(zip(map(tuple, X.astype(int).tolist()), np.asarray(p.net.forward(X), dtype=np.float64).reshape(-1)))
    return max(abs(z[x] - z[y]) for x, y in itertools.product(z, z)
               if x[:2] == y[:2] and abs(x[2] - y[2]) <= 1 and x[3] != y[3])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_relaxed_tie_is_decided_by_the_refinement_as_brute_force_says(seed):
    """eps the exact largest difference (a tie): ``<=`` holds -- the tiling combined by certify into a proof
    of the whole domain -- and ``<`` is refuted by a pair that is admissible (b within 1) and breaks it."""
    from fairspec.backends.pair.certify import replays
    from fairspec.backends.counterfactuals import counterfactuals
    from fairspec.backends.refine import decide_partitions
    from fairspec.certify.partitions import combine_partitions, whole_claim

    dmax = _largest(_relaxed_problem(seed=seed))
    for strict in (False, True):
        p = _relaxed_problem(dmax, strict, seed)
        cases, pairs = counterfactuals(p)
        assert len(cases) == 8 and len(pairs) == 2 * (4 + 2 * 3)    # s ordered x (b, b') within 1
        whole = [(np.asarray(p.lo, dtype=np.float64), np.asarray(p.hi, dtype=np.float64))]
        (d,) = decide_partitions(p, whole, seconds=600.0, max_boxes=4096)
        if not strict:
            assert d.status == "fair", d.reason
            expect = whole_claim(p, readout=("logit", 0), precision="float64")
            proof = combine_partitions([d.proof], whole, p.lo, p.hi, p.integer, expect=expect, claim="test")
            assert proof is not None
        else:
            assert d.status == "unfair", d.reason
            x, xp = d.pair
            assert abs(x[2] - xp[2]) <= 1 and x[3] != xp[3] and np.array_equal(x[:2], xp[:2])
            assert abs(float(p.net.forward(x[None])[0]) - float(p.net.forward(xp[None])[0])) >= dmax
            assert replays(p, x, xp)


def test_certify_refuses_a_relation_that_misses_an_admitted_pair():
    from fairspec.backends.refine import decide_partitions
    from fairspec.certify.partitions import _relation_ok, whole_claim

    p = _relaxed_problem(_largest(_relaxed_problem()))
    whole = [(np.asarray(p.lo, dtype=np.float64), np.asarray(p.hi, dtype=np.float64))]
    (d,) = decide_partitions(p, whole, seconds=600.0, max_boxes=4096)
    assert d.status == "fair", d.reason
    scope = whole_claim(p, readout=("logit", 0), precision="float64")["pair"]
    rels = [r["_relation"] for r in d.proof.detail["records"]]
    assert rels and all(_relation_ok(rel, scope, p.lo, p.hi) for rel in rels)
    rel = rels[0]
    # one admitted pair left out, or a wider tolerance than the relation compared: refused
    assert not _relation_ok((rel[0], rel[1][1:]), scope, p.lo, p.hi)
    assert not _relation_ok(rel, {**scope, "relaxed": [[2, repr(2.0)]]}, p.lo, p.hi)
    # the cases missing a value of the relaxed input: refused
    keep = {c: k for k, c in enumerate(c for c in rel[0] if dict(c)[2] != 3.0)}
    sub = tuple((keep[rel[0][a]], keep[rel[0][b]]) for a, b in rel[1] if rel[0][a] in keep and rel[0][b] in keep)
    assert not _relation_ok((tuple(keep), sub), scope, p.lo, p.hi)
    # a tiling without a recorded relation is no part of a relaxed property's proof
    from fairspec.certify import partitions

    bare = [{k: v for k, v in r.items() if k != "_relation"} for r in d.proof.detail["records"]]
    assert not partitions._tiled_ok(_with_records(d.proof, bare), whole_claim(p, readout=("logit", 0),
                                                                              precision="float64"), p.lo, p.hi)


def _with_records(proof, records):
    from fairspec.certify.proof import _mint

    return _mint(proof.method, proof.claim, **{**proof.detail, "records": records})


def test_the_shares_refinement_still_takes_no_relaxed_input():
    """refine_partitions counts individuals over every non-protected input (quantify's shares): a relaxed
    input is no counterfactual value there, and it is still refused; the decision pass takes it."""
    from fairspec.backends.refine import refinable

    p = _relaxed_problem()
    assert refinable(p) == "the refinement does not handle relaxed inputs"
    assert refinable(p, relaxed=True) == ""


def test_what_the_decision_pass_still_refuses_says_why():
    """A relaxed input with too many values (or real-valued), and a one-hot group outside the protected
    inputs with too many categories (each is a case: tests/test_tie_unprotected_onehot.py), stay
    undecided, each with its own reason (the tie fallback reports it); a small such group is decided."""
    from fairspec.backends.pair import PairProblem
    from fairspec.backends.refine import decide_partitions
    from fairspec.models.network import random_net
    from conftest import protected_weight_net

    net = protected_weight_net(1, 1.0, True, False, name="refused")
    wide = PairProblem(net, lo=[0, 0, 0, 0], hi=[5, 5, 40, 1], integer=[True] * 4, free=(3,), relaxed=((2, 1.0),),
                       post="logit", eps=1.0)
    real = PairProblem(net, lo=[0, 0, 0, 0], hi=[5, 5, 3, 1], integer=[True, True, False, True], free=(3,),
                       relaxed=((2, 1.0),), post="logit", eps=1.0)
    grouped = PairProblem(net, lo=[0, 0, 0, 0], hi=[5, 1, 1, 1], integer=[True] * 4, onehot_groups=((1, 2),),
                          free=(3,), post="logit", eps=1.0)
    many = PairProblem(random_net(1, 41, (3,)), lo=[0] * 41, hi=[1] * 41, integer=[True] * 41,
                       onehot_groups=(tuple(range(40)),), free=(40,), post="logit", eps=1.0)
    for p, why in ((wide, "relaxed inputs are not all integral with at most 16 values"),
                   (real, "relaxed inputs are not all integral"),
                   (many, "categories of the unprotected one-hot groups make too many cases")):
        (d,) = decide_partitions(p, [(p.lo, p.hi)], seconds=60.0, max_boxes=64)
        assert d.status == "open" and why in d.reason, d.reason
    (d,) = decide_partitions(grouped, [(grouped.lo, grouped.hi)], seconds=60.0, max_boxes=4096)
    assert d.status in ("fair", "unfair"), d.reason
