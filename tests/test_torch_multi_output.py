"""torch modules with several output columns, certified as ONNX graphs are: two columns read by ``index``
(the label / prob / logit posts: the margin of the two logits, or the softmax head's probability of one,
``models.runtime_layers``), K logits read by ``class(m(x))`` (argmax) and K softmax probabilities read by
``prob(m(x), c)``; and the data path's batch re-check of a ``class =`` decision on K columns, whose near
rows are chosen by the certified spread of every column (``models.batching.certified_spread(columns=True)``).

Brute force: small float32 torch nets biased to ties (dyadic weights, exact zeros, integer grids, a network
blind to the protected input so that proofs are needed), the solvers forced (``FAIRSPEC_ENUMERATE_PAIRS=0``)
and every verdict judged against torch's own forward pass on every grid point: ``holds`` only where no
admissible pair violates, ``violated`` only with a witness that violates on torch. A module whose forward()
is not its children run in order is refused, never proved."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")

N = 12
FEATURES = f"""features F {{
  a : int in [0, {N}]
  b : int in [0, {N}]
  s : {{F, M}} protected
}}
"""
ENCODE = "encode F for m { a : raw  b : raw  s : onehot }\n"


def _grid():
    return np.array([[a, b, s == 0, s == 1] for a, b, s in itertools.product(range(N + 1), range(N + 1), range(2))],
                    dtype=np.float64)


def _seq(seed: int, K: int, softmax: bool, blind: bool, half: bool = False):
    rng = np.random.default_rng(seed)
    W1 = rng.integers(-4, 5, (5, 4)) / 4.0
    W1[rng.random(W1.shape) < 0.25] = 0.0
    if blind:
        W1[:, 2:] = 0.0
    else:                                  # the protected input moves one unit by a dyadic step
        W1[:, 2:] = 0.0
        W1[0, 2:] = rng.integers(-2, 3, 2) / 8.0
    b1 = rng.integers(-2, 3, 5) / 4.0
    W2 = rng.integers(-4, 5, (K, 5)) / 4.0
    b2 = rng.integers(-2, 3, K) / 4.0
    if rng.random() < 0.5:                 # two columns equal: exact ties between classes
        W2[1], b2[1] = W2[0], b2[0]
    l1, l2 = torch.nn.Linear(4, 5), torch.nn.Linear(5, K)
    with torch.no_grad():
        for lin, W, b in ((l1, W1, b1), (l2, W2, b2)):
            lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
    mods = [l1, torch.nn.ReLU(), l2] + ([torch.nn.Softmax(dim=1)] if softmax else [])
    seq = torch.nn.Sequential(*mods).eval()
    return seq.half() if half else seq


def _outputs(seq, X):
    dtype = next(seq.parameters()).dtype
    with torch.no_grad():
        return seq(torch.from_numpy(np.asarray(X, dtype=np.float32)).to(dtype)).double().numpy()


def _prop(name, ensure, backend, mode):
    return (f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n  ensure {ensure}\n"
            f"  mode = {mode}\n  using {backend}\n  timeout = 120s\n}}\n")


def _run(tmp_path, monkeypatch, seq, decl, props):
    from fairspec.pipeline import check
    from fairspec.report import to_json

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    torch.jit.save(torch.jit.script(seq), str(tmp_path / "m.pt"))
    (tmp_path / "spec.fair").write_text(FEATURES + f"model m = {decl}\n" + ENCODE + "".join(props))
    return {v["name"]: v for v in json.loads(to_json(check(tmp_path / "spec.fair")))["properties"]}


def _judge(v, truth_violated: bool, violates):
    """One verdict against the brute force: ``violates(Yx, Yx')`` on torch's outputs of a witness."""
    assert v["status"] in ("holds", "violated", "unknown"), v
    if v["status"] == "holds":
        assert not truth_violated, v
        assert v["how"] == "proved", v
    elif v["status"] == "violated":
        assert truth_violated, v
        w = v["witness"]
        assert violates(w["x"], w["x_prime"]), v


def _pairs(X):
    return X[0::2], X[1::2]          # the grid alternates s = F, s = M: each row pair is an admissible pair


def _encoded(seq, w):
    """torch's outputs of a witness pair (its encoded inputs)."""
    return _outputs(seq, np.array([w[0], w[1]], dtype=np.float64))


@pytest.mark.parametrize("blind", [True, False])
@pytest.mark.parametrize("head", ["logit", "prob"])
@pytest.mark.parametrize("seed,half", [(0, False), (1, False), (2, False), (0, True), (1, True)])
def test_two_columns_read_by_index_agree_with_brute_force(tmp_path, monkeypatch, seed, head, blind, half):
    """label / prob posts on a two-column torch output read by ``index`` (float32, and float16 ``.half()``):
    certified (the margin or the softmax head's probability; before, "a multi-column output is outside the
    runtime error model" and unknown)."""
    seq = _seq(seed, 2, head == "prob", blind, half)
    i = seed % 2
    Y = _outputs(seq, _grid())
    A, B = _pairs(Y)

    def label(Yr):
        # index = i is "predict is class i": the argmax, the first largest column at an exact tie (two softmax
        # probabilities too since s37 h2, where this read p_i > 0.5)
        return Yr[:, 0] >= Yr[:, 1] if i == 0 else Yr[:, 1] > Yr[:, 0]

    def prob(Yr):                      # the post's probability: the column, or the softmax of the two logits
        if head == "prob":
            return [Fraction(float(p)) for p in Yr[:, i]]
        return [1.0 / (1.0 + np.exp(-(float(r[i]) - float(r[1 - i])))) for r in Yr]

    label_viol = bool(np.any(label(A) != label(B)))
    dp = [abs(p - q) for p, q in zip(prob(A), prob(B))]
    # the exact largest difference as the tolerance (a tie), written as the spec reads it (a decimal)
    text = repr(float(max(dp))) if head == "prob" and max(dp) > 0 else "0.05"
    eps = Fraction(text)
    prob_viol = any(d > eps for d in dp)
    props = [_prop("lab", "label(m(x)) == label(m(x'))", "milp", "prove"),
             _prop("lab_smt", "label(m(x)) == label(m(x'))", "smt", "find"),
             _prop("pr", f"|prob(m(x)) - prob(m(x'))| <= {text}", "milp", "prove")]
    out = _run(tmp_path, monkeypatch, seq, f'torch("m.pt", index = {i}, score = {head})', props)
    for name in ("lab", "lab_smt"):
        _judge(out[name], label_viol, lambda x, xp: (lambda Z: label(Z)[0] != label(Z)[1])(_encoded(seq, (x, xp))))
    _judge(out["pr"], prob_viol, lambda x, xp: (lambda Z: abs(prob(Z)[0] - prob(Z)[1]) > eps)(_encoded(seq, (x, xp))))
    if blind and not half:             # every pair scores alike: the certificate is needed and given
        assert out["pr"]["status"] == "holds" and out["pr"]["how"] == "proved", out["pr"]
        if head == "logit":            # index = 0: decided as the negation of index = 1 (s37 h2; was unknown)
            assert out["lab"]["status"] == "holds", out["lab"]
    for v in out.values():             # float16: a tolerance within its larger bound is unknown, with the reason
        assert v["status"] != "unknown" or "multi-column" not in v["reason"], v


@pytest.mark.parametrize("blind", [True, False])
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_k_logits_class_and_softmax_probabilities_agree_with_brute_force(tmp_path, monkeypatch, seed, blind):
    for softmax in (False, True):
        seq = _seq(seed, 3, softmax, blind)
        Y = _outputs(seq, _grid())
        A, B = _pairs(Y)
        k_viol = bool(np.any(np.argmax(A, axis=1) != np.argmax(B, axis=1)))
        props = [_prop("cls", "class(m(x)) == class(m(x'))", "milp", "prove")]
        if softmax:
            dp = [abs(Fraction(float(a)) - Fraction(float(b))) for a, b in zip(A[:, 1], B[:, 1])]
            text = repr(float(max(dp))) if max(dp) > 0 else "0.01"
            eps = Fraction(text)
            p_viol = any(d > eps for d in dp)
            props.append(_prop("cp", f"|prob(m(x), 1) - prob(m(x'), 1)| <= {text}", "milp", "prove"))
        out = _run(tmp_path, monkeypatch, seq, f'torch("m.pt", score = {"prob" if softmax else "logit"})', props)
        _judge(out["cls"], k_viol, lambda x, xp: (lambda Z: np.argmax(Z[0]) != np.argmax(Z[1]))(_encoded(seq, (x, xp))))
        if softmax:
            _judge(out["cp"], p_viol, lambda x, xp: (lambda Z: abs(Fraction(float(Z[0, 1])) - Fraction(float(Z[1, 1])))
                                                     > eps)(_encoded(seq, (x, xp))))
            if blind:
                assert out["cp"]["status"] == "holds", out["cp"]
        elif blind:
            assert out["cls"]["status"] == "holds", out["cls"]


class _Tampered(torch.nn.Module):
    """Linear, ReLU, Linear as children, but forward() moves column 0 by ``delta``: not the network read."""

    def __init__(self, seq, delta: float):
        super().__init__()
        self.l1, self.act, self.l2 = seq[0], seq[1], seq[2]
        self.delta = delta

    def forward(self, x):
        y = self.l2(self.act(self.l1(x)))
        return y + torch.tensor([self.delta, 0.0, 0.0], dtype=y.dtype)


@pytest.mark.parametrize("structural", [True, False])
@pytest.mark.parametrize("delta,shift", [(2.0 ** -4, 0.0), (2.0 ** -12, 0.0), (2.0 ** -7, 100.0)])
def test_a_forward_that_is_not_its_children_is_refused(tmp_path, monkeypatch, delta, shift, structural):
    """The reader's agreement check, within certify's float32 bound at each check input: a logit of
    magnitude 100 moved by 2^-7 passed the fixed tolerance of 1e-4 relative (and a class proof about the
    children's network held where the module's class changed). The structural check
    (``models.torch_chain``) refuses it first; the agreement check, behind it, is tested with the module
    read as its declared children (the reader before the structural check)."""
    if not structural:
        monkeypatch.setattr("fairspec.models.torch_chain.torch_chain",
                            lambda module, output=None: list(module.named_children()))
    seq = _seq(3, 3, False, True)
    with torch.no_grad():
        seq[2].bias += shift
    out = _run(tmp_path, monkeypatch, _Tampered(seq, delta), 'torch("m.pt", score = logit)',
               [_prop("cls", "class(m(x)) == class(m(x'))", "milp", "prove")])
    v = out["cls"]
    assert v["status"] != "holds" or v["how"] != "proved", v
    assert ("not a plain chain" if structural else "children in order") in v["reason"], v["reason"]


@pytest.mark.parametrize("softmax", [False, True])
def test_a_class_decision_on_k_columns_is_rechecked_within_the_certified_spread(tmp_path, softmax):
    """The data path's ``class = c`` on a K-column torch output: the rows whose two largest columns lie within
    twice the certified spread of each other are re-decided (``details.batching.bound = "certified"``; it was
    the assumed spread), here every row whose columns 0 and 1 tie exactly; torch scores the two copies alike
    in every batch, so the verdict stands, with a note."""
    from fairspec import api
    from fairspec.models.batching import certified_spread
    from fairspec.models.torch_model import load_torch

    seq = _seq(6, 3, softmax, False)
    with torch.no_grad():
        seq[2].weight[1] = seq[2].weight[0]
        seq[2].bias[1] = seq[2].bias[0]
    torch.jit.save(torch.jit.script(seq), str(tmp_path / "m.pt"))
    G = _grid()
    rows = ["a,b,s,y"] + [f"{int(r[0])},{int(r[1])},{'F' if r[2] else 'M'},{int(r[0] + r[1]) % 3}" for r in G]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    Y = _outputs(seq, G)
    k = np.argmax(Y, axis=1)
    rate = [float(np.mean(k[G[:, 2] == v] == 0)) for v in (1, 0)]
    gap = abs(rate[0] - rate[1])
    (tmp_path / "spec.fair").write_text(
        f'data d = csv("d.csv")\nfeatures F from d {{\n  a : int in [0, {N}]\n  b : int in [0, {N}]\n'
        f'  s : {{F, M}} protected\n}}\nmodel m = torch("m.pt", score = {"prob" if softmax else "logit"})\n' + ENCODE
        + f"property sp {{\n  statistical_parity(m, groups s, class = 0) <= {gap + 0.25:.6f}\n  bootstrap = 50\n"
          "  seed = 1\n  min_group_size = 1\n}\n")
    r = api.check(str(tmp_path / "spec.fair"))
    assert not r.diagnostics, r.diagnostics
    v = {x.name: x for x in r.verdicts}["sp"]
    b = v.details["batching"]
    assert b["bound"] == "certified", b
    top = np.sort(Y, axis=1)
    assert b["near_threshold"] >= int(np.sum(top[:, -1] == top[:, -2])) > 0 and b["fragile_rows"] == 0, b
    assert v.status != "unknown", v.reason
    model = load_torch(tmp_path / "m.pt", score_kind="prob" if softmax else "logit")
    s = certified_spread(model, G, columns=True)
    assert s is not None and 0 < s < 1e-3
    # every evaluation of a column in any batch lies within s / 2 of the exact one: so within s of another
    for X in (G, G[::-1].copy(), G[:7].copy()):
        Z = _outputs(seq, X)
        Zs = np.vstack([_outputs(seq, X[i:i + 1]) for i in range(len(X))])
        assert np.all(np.abs(Z - Zs) <= s)
