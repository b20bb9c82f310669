"""Exact ties on the whole-domain solver path (audit s19 engines #6, s18 #6): a small ReLU network with
dyadic weights whose logit is exactly 0 (or whose largest difference is exactly eps) at grid points.
With enumeration off (``FAIRSPEC_ENUMERATE_PAIRS=0``: the path of a domain too large to enumerate)
the solvers' only candidates lie on the post-condition's boundary within their tolerance; the verdict
was ``unknown`` at once, where ``partitions = 4`` decided the same property. Every verdict here is
compared with brute force on the model's own runtime (torch float32 / float64, onnxruntime): never a
wrong one, and the tie cases named in ``DECIDED`` are decided (``holds (proved)`` with certify's
Proof, or ``violated`` with a witness that violates on the runtime).

No test here runs under a tight time limit: the specs set a generous one that only guards a hang."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

A, B, S = range(0, 6), range(0, 4), (0, 1)
POINTS = [(a, b, s) for a in A for b in B for s in S]

# (W1 (H x 3), b1, W2 (1 x H), b2) over the inputs (a, b, s); every weight dyadic: float32 computes them
# exactly, so the logit is exactly 0 at grid points
NETS = {
    # z = relu(0.5a - 0.25b + 0.25s - 1) - relu(0.5 - 0.5a): 0 at (a 2, b 0, s F), 0.25 at s M -> a flip
    "t1": ([[0.5, -0.25, 0.25], [-0.5, 0.0, 0.0]], [-1.0, 0.5], [[1.0, -1.0]], [0.0]),
    # the weight of s is exactly 0: no pair differs, every logit difference is exactly 0
    "t2": ([[0.5, -0.25, 0.0], [-0.5, 0.0, 0.0]], [-1.0, 0.5], [[1.0, -1.0]], [0.0]),
    # ties where s changes
    "t3": ([[0.5, -0.5, 0.5], [0.25, 0.25, -0.5]], [-1.0, -0.5], [[1.0, 0.5]], [-0.25]),
}

HEAD = """features F {{
  a : int in [0, 5]
  b : int in [0, 3]
  s : {{F, M}} protected
}}
model m = {decl}
encode F for m {{
  a, b : raw
  s : code
}}
"""


def _prop(name: str, post: str) -> str:
    return (f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n  ensure {post}\n"
            "  timeout = 600s\n}\n")


def _pairs():
    for x, y in itertools.product(POINTS, POINTS):
        if x[0] == y[0] and x[1] == y[1] and x[2] != y[2]:
            yield x, y


def _build(tmp_path, net: str, lib: str):
    """The model file, its declaration and its runtime's scores of POINTS (float, as the runtime gives them):
    logits, or probabilities for a ``-sig`` lib (a Sigmoid head)."""
    W1, b1, W2, b2 = (np.array(v, dtype=np.float64) for v in NETS[net])
    X = np.array(POINTS, dtype=np.float64)
    sig = lib.endswith("-sig")
    lib = lib.removesuffix("-sig")
    if lib == "onnx":
        onnx = pytest.importorskip("onnx")
        ort = pytest.importorskip("onnxruntime")
        from onnx_nets import mlp_model

        onnx.save(mlp_model([(W1, b1, True), (W2, b2, False)], final="Sigmoid" if sig else None, batch="N"),
                  str(tmp_path / "m.onnx"))
        sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
        z = sess.run(None, {"x": X.astype(np.float32)})[0][:, 0]
        return 'onnx("m.onnx", score = prob)' if sig else 'onnx("m.onnx")', {p: float(v) for p, v in zip(POINTS, z)}
    torch = pytest.importorskip("torch")
    dt = {"torch32": torch.float32, "torch64": torch.float64}[lib]
    m = torch.nn.Sequential(torch.nn.Linear(3, W1.shape[0]), torch.nn.ReLU(), torch.nn.Linear(W1.shape[0], 1),
                            *([torch.nn.Sigmoid()] if sig else [])).to(dt)
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor(W1))
        m[0].bias.copy_(torch.tensor(b1))
        m[2].weight.copy_(torch.tensor(W2))
        m[2].bias.copy_(torch.tensor(b2))
    m.eval()
    torch.jit.save(torch.jit.script(m), str(tmp_path / "m.pt"))
    with torch.no_grad():
        z = m(torch.tensor(X, dtype=dt)).double().numpy()[:, 0]
    return 'torch("m.pt", score = prob)' if sig else 'torch("m.pt")', {p: float(v) for p, v in zip(POINTS, z)}


def _truth(z: dict, sig: bool = False):
    """Brute force on the runtime: does label break (logit > 0, probability > 0.5), the largest |z - z'|
    (exact)."""
    cut = 0.5 if sig else 0.0
    lab = any((z[x] > cut) != (z[y] > cut) for x, y in _pairs())
    dmax = max(abs(Fraction(z[x]) - Fraction(z[y])) for x, y in _pairs())
    return lab, dmax


#: the torch Sigmoid heads whose ties the runtime may round otherwise in another batch: undecided by the
#: enumeration of the whole domain too (whether the property holds depends on how the model is batched)
BATCHED = {("t1", "torch64-sig"): {"le", "lt"}, ("t3", "torch64-sig"): {"le", "lt"},
           ("t2", "torch32-sig"): {"lab", "le"}, ("t2", "torch64-sig"): {"lab", "le"}}


def _judge(report, net, lib, z, truth, sig, E):
    """Every verdict sound (brute force on the runtime; a witness violates on it); the undecided names."""
    undecided = set()
    for v in report.verdicts:
        assert v.status in ("holds", "violated", "unknown"), (v.name, v.status, v.reason)
        if v.status == "holds":
            assert truth[v.name], (net, lib, v.name, "holds but is false", v.reason)
            assert v.how == "proved" and v.proof is not None, (v.name, v.how, v.reason)
        if v.status == "violated":
            assert not truth[v.name], (net, lib, v.name, "violated but holds", v.reason)
            w = v.witness
            zx, zy = z[tuple(int(t) for t in w.x)], z[tuple(int(t) for t in w.x_prime)]
            if v.name == "lab":
                assert (zx > 0.5 * sig) != (zy > 0.5 * sig), (w.x, w.x_prime, zx, zy)
            elif v.name == "le":
                assert abs(Fraction(zx) - Fraction(zy)) > E
            else:
                assert abs(Fraction(zx) - Fraction(zy)) >= E
        if v.status == "unknown":
            undecided.add(v.name)
    return undecided


@pytest.mark.parametrize("lib", ["torch32", "torch64", "onnx", "torch32-sig", "torch64-sig", "onnx-sig"])
@pytest.mark.parametrize("net", sorted(NETS))
def test_ties_on_the_solver_path_agree_with_brute_force(tmp_path, monkeypatch, net, lib):
    """The solver path (enumeration off) decides what the enumeration of the whole domain decides, never
    wrongly; the one thing neither decides is a tie the runtime may round otherwise in another batch."""
    from fairspec.pipeline import check

    decl, z = _build(tmp_path, net, lib)
    sig = lib.endswith("-sig")
    lab, dmax = _truth(z, sig)
    out = "prob" if sig else "logit"
    # the largest difference as written: exact for the logit nets (dyadic); a probability's is rounded to 17
    # digits (FS307), and the truth is that decimal compared exactly with the runtime's difference
    eps = repr(float(dmax))
    E = Fraction(eps)
    assert sig or E == dmax
    spec = HEAD.format(decl=decl) + _prop("lab", "label(m(x)) == label(m(x'))") + \
        _prop("le", f"|{out}(m(x)) - {out}(m(x'))| <= {eps}")
    if dmax > 0:                                     # `< 0` is refused by lint (FS307)
        spec += _prop("lt", f"|{out}(m(x)) - {out}(m(x'))| < {eps}")
    (tmp_path / ".git").mkdir()
    (tmp_path / "spec.fair").write_text(spec)
    truth = {"lab": not lab, "le": dmax <= E, "lt": dmax < E}          # does the property hold?
    names = ["lab", "le", "lt"][:3 if dmax > 0 else 2]
    by_enumeration = check(tmp_path / "spec.fair")
    assert [v.name for v in by_enumeration.verdicts] == names, by_enumeration.diagnostics
    expected = BATCHED.get((net, lib), set())
    assert _judge(by_enumeration, net, lib, z, truth, sig, E) == expected & set(names)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the whole-domain solver path
    by_solvers = check(tmp_path / "spec.fair")
    assert [v.name for v in by_solvers.verdicts] == names
    undecided = _judge(by_solvers, net, lib, z, truth, sig, E)
    assert undecided <= expected, (net, lib, [(v.name, v.reason) for v in by_solvers.verdicts if v.name in undecided])


@pytest.mark.parametrize("lib", ["torch32", "onnx"])
@pytest.mark.parametrize("net", sorted(NETS))
def test_label_maximize_at_a_tie_reports_the_flip(tmp_path, monkeypatch, net, lib):
    """maximize of label on the solver path: the largest measure min(z, -z') is exactly 0 on t1 and t2
    (t1: a flip z = 0.25 > 0 = z'; t2: no flip, z = z' = 0). The MILP's optimum pair could be the tie that
    is no flip; the flip is asked for as in prove. Violated only with a flip that replays, never on t2."""
    from fairspec.pipeline import check

    decl, z = _build(tmp_path, net, lib)
    lab, _ = _truth(z)
    (tmp_path / ".git").mkdir()
    (tmp_path / "spec.fair").write_text(HEAD.format(decl=decl) + _prop(
        "ml", "label(m(x)) == label(m(x'))\n  mode = maximize"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (v,) = check(tmp_path / "spec.fair").verdicts
    if not lab:
        assert v.status != "violated", v.reason
        return
    assert v.status == "violated", v.reason          # t1 (was unknown: "equals the threshold within solver tolerance")
    zx, zy = z[tuple(int(t) for t in v.witness.x)], z[tuple(int(t) for t in v.witness.x_prime)]
    assert (zx > 0) != (zy > 0)
    truth = max(min(Fraction(z[x]), -Fraction(z[y])) for x, y in _pairs() if z[x] > 0 >= z[y])
    assert v.bound is not None and v.bound[0] <= truth <= v.bound[1], (v.bound, truth)


def _mprop(name: str, post: str) -> str:
    return (f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n  ensure {post}\n"
            "  mode = maximize\n  timeout = 600s\n}\n")


def _label_max(z: dict) -> Fraction:
    """The largest min(z, -z') over the admissible ordered pairs, exact (a logit runtime's label measure)."""
    return max(min(Fraction(z[x]), -Fraction(z[y])) for x, y in _pairs())


@pytest.mark.parametrize("lib", ["torch32", "torch64", "onnx", "torch32-sig", "onnx-sig"])
@pytest.mark.parametrize("net", sorted(NETS))
def test_maximize_at_a_tie_on_the_solver_path(tmp_path, monkeypatch, net, lib):
    """maximize where the largest measure is exactly the threshold (``<=`` at the exact largest
    difference; label on t2, whose largest min(z, -z') is exactly 0 without a flip): the solver path
    decides it as find and prove are decided (the refinement over the whole domain), never wrongly, and
    whatever the enumeration decides. A ``holds`` carries certify's Proof and an interval holding the
    exact maximum (brute force on the runtime); ``[v, v]`` on these exact runtimes (dyadic weights:
    the logit nets score every point exactly)."""
    from fairspec.pipeline import check

    decl, z = _build(tmp_path, net, lib)
    sig = lib.endswith("-sig")
    lab, dmax = _truth(z, sig)
    out = "prob" if sig else "logit"
    eps = repr(float(dmax))
    E = Fraction(eps)
    (tmp_path / ".git").mkdir()
    (tmp_path / "spec.fair").write_text(HEAD.format(decl=decl) + _mprop("mx", f"|{out}(m(x)) - {out}(m(x'))| <= {eps}")
                                        + _mprop("ml", "label(m(x)) == label(m(x'))"))
    truth = {"mx": dmax <= E, "ml": not lab}
    top = {"mx": dmax, "ml": None if sig else _label_max(z)}      # a probability runtime: label has no value
    decided = {v.name: v.status for v in check(tmp_path / "spec.fair").verdicts if v.status != "unknown"}
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    verdicts = check(tmp_path / "spec.fair").verdicts
    assert [v.name for v in verdicts] == ["mx", "ml"]
    for v in verdicts:
        assert v.status in ("holds", "violated", "unknown"), (v.name, v.status, v.reason)
        if v.status == "holds":
            assert truth[v.name], (net, lib, v.name, "holds but is false", v.reason)
            assert v.how == "proved" and v.proof is not None, (v.name, v.how, v.reason)
        if v.status == "violated":
            assert not truth[v.name], (net, lib, v.name, "violated but holds", v.reason)
        if v.bound is not None:
            assert top[v.name] is not None, (v.name, v.bound)
            assert Fraction(v.bound[0]) <= top[v.name] <= Fraction(v.bound[1]), (net, lib, v.name, v.bound, top[v.name])
        if v.status == "holds" and not sig:
            assert v.bound is not None and v.bound[0] == v.bound[1] == v.value, (v.name, v.bound, v.value)
        # what the enumeration decides, the solver path decides (the same status)
        assert decided.get(v.name, "unknown") in (v.status, "unknown"), (net, lib, v.name, v.status, decided)
        if v.name in decided:
            assert v.status == decided[v.name], (net, lib, v.name, v.reason)
