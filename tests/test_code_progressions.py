"""A protected feature encoded by a code table that is not 0..k-1 (``g : code {A = 0.5, B = 0.0, C = 1.0}``)
on the solver backends: the pair problem's variable is the code's rank in the sorted table and the model's
input ``first + step * rank`` (``certify.network.code_progression``: exact, every code a number of the
runtime's precision; the certify kind ``codes`` adds no rounding). Before, every such property beyond
enumeration was unknown ("the code table of g is not 0..2; solver backends need consecutive codes").

Against brute force on the library's own outputs over the whole (small) domain, every domain sent to the
solvers (``FAIRSPEC_ENUMERATE_PAIRS=0``): every ``holds`` is one where no pair breaks the property, every
``violated`` witness replays on the library. Dyadic weights; tie-biased: two classes tie on every input
(argmax takes the first), and a value property's eps is the exact largest difference (``<=`` holds,
``<`` is violated)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

TABLES = {"halves": ("0.5", "0.0", "1.0"), "shifted": ("-1.5", "0.5", "-0.5")}

HEAD = """features F {
  a : int in [0, 3]
  b : int in [0, 3]
  g : {A, B, C} protected
}
model m = MODEL
encode F for m { a : raw  b : raw  g : code {A = @A@, B = @B@, C = @C@} }
"""

PROP = """
property @NAME@ {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure @ENSURE@
  mode = @MODE@@USING@
  timeout = 600s
}
"""

CLASS = "class(m(x)) == class(m(x'))"


def _grid(table):
    codes = [float(c) for c in table]
    return np.array([[a, b, codes[g]] for a, b, g in itertools.product(range(4), range(4), range(3))])


def _pairs():
    idx = list(itertools.product(range(4), range(4), range(3)))
    return [(i, j) for i, j in itertools.permutations(range(len(idx)), 2) if idx[i][:2] == idx[j][:2]]


def _layers(seed, n_out, tie):
    """Dyadic (W, b): 3 -> 4 (ReLU) -> n_out; g read by two hidden units; class biases 1/64, 2/64, ...
    keep margins off 0 unless ``tie`` copies class 0's row onto class 1's."""
    rng = np.random.default_rng(seed)
    W1 = rng.integers(-4, 5, (4, 3)) / 4.0
    W1[2:, 2] = 0.0
    W1[0, 2], W1[1, 2] = 2.0, -1.0
    b1 = rng.integers(-2, 3, 4) / 4.0
    W2 = rng.integers(-4, 5, (n_out, 4)) / 4.0
    b2 = rng.integers(-2, 3, n_out) / 4.0 + (np.arange(1, n_out + 1) / 64.0 if n_out > 1 else 0.0)
    if tie:
        W2[1], b2[1] = W2[0], b2[0]
    return [(W1, b1), (W2, b2)]


def _torch_file(folder, layers):
    torch = pytest.importorskip("torch")
    (W1, b1), (W2, b2) = layers
    l1, l2 = torch.nn.Linear(3, 4), torch.nn.Linear(4, W2.shape[0])
    with torch.no_grad():
        for lin, W, b in ((l1, W1, b1), (l2, W2, b2)):
            lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
    seq = torch.nn.Sequential(l1, torch.nn.ReLU(), l2).eval()
    torch.jit.save(torch.jit.script(seq), str(folder / "m.pt"))

    def outputs_of(X):
        with torch.no_grad():
            return seq(torch.from_numpy(np.asarray(X, dtype=np.float32))).double().numpy()

    return outputs_of


def _check(folder, table, score, props) -> dict:
    from fairspec.pipeline import check
    from fairspec.report import to_json

    text = HEAD.replace("MODEL", f'torch("m.pt", score = {score})')
    for k, c in zip("ABC", table):
        text = text.replace(f"@{k}@", c)
    for name, ensure, mode, using in props:
        text += PROP.replace("@NAME@", name).replace("@ENSURE@", ensure).replace("@MODE@", mode).replace(
            "@USING@", f"\n  using {using}" if using else "")
    p = folder / "spec.fair"
    p.write_text(text)
    return {v["name"]: v for v in json.loads(to_json(check(p)))["properties"]}


def _softmax(Y):
    Z = np.exp(Y - Y.max(axis=1, keepdims=True))
    return Z / Z.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("seed,tie", [(0, False), (1, False), (2, True), (3, False)])
def test_class_on_a_code_table_that_is_not_0_to_k_agrees_with_brute_force(tmp_path, monkeypatch, table, seed, tie):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    codes = TABLES[table]
    outputs_of = _torch_file(tmp_path, _layers(seed, 3, tie))
    Y = outputs_of(_grid(codes))
    k = np.argmax(Y, axis=1)
    flips = any(k[i] != k[j] for i, j in _pairs())
    P = _softmax(Y)
    top = float(max(abs(P[i, c] - P[j, c]) for i, j in _pairs() for c in range(3)))
    props = [("cls", CLASS, "prove", None), ("cls_smt", CLASS, "prove", "smt"), ("cls_max", CLASS, "maximize", None),
             ("prob_above", f"forall c: |prob(m(x), c) - prob(m(x'), c)| <= {top + 0.01!r}", "prove", None)]
    if top > 0.02:
        props.append(("prob_below", f"forall c: |prob(m(x), c) - prob(m(x'), c)| <= {top - 0.01!r}", "prove", None))
    v = _check(tmp_path, codes, "logit", props)
    for n in ("cls", "cls_smt", "cls_max"):
        r = v[n]
        assert "consecutive codes" not in str(r.get("reason")), r
        if r["status"] == "holds":
            assert r["how"] == "proved" and not flips, r
        elif r["status"] == "violated":
            assert flips, r
            w = r["witness"]
            kw = np.argmax(outputs_of(np.array([w["x"], w["x_prime"]])), axis=1)
            assert kw[0] != kw[1], (r, kw)
        else:
            assert tie, r
    assert v["prob_above"]["status"] == "holds" and v["prob_above"]["how"] == "proved", v["prob_above"]
    if "prob_below" in v:
        r = v["prob_below"]
        assert r["status"] == "violated", r
        Pw = _softmax(outputs_of(np.array([r["witness"]["x"], r["witness"]["x_prime"]])))
        assert float(np.max(np.abs(Pw[0] - Pw[1]))) > top - 0.01, r


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("seed", [0, 4])
def test_a_value_at_its_exact_largest_difference_on_a_code_table(tmp_path, monkeypatch, table, seed):
    """eps is the exact largest |value(x) - value(x')| over the domain (dyadic: float32 computes it exactly):
    ``<=`` holds (proved), ``<`` is violated by a pair that replays; on HiGHS and z3."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    codes = TABLES[table]
    outputs_of = _torch_file(tmp_path, _layers(seed, 1, False))
    y = outputs_of(_grid(codes))[:, 0]
    top = float(max(abs(y[i] - y[j]) for i, j in _pairs()))
    assert top > 0
    ens = [(f"{'le' if op == '<=' else 'lt'}_{using or 'milp'}", f"|value(m(x)) - value(m(x'))| {op} {top!r}", "prove", using)
           for op in ("<=", "<") for using in (None, "smt")]
    v = _check(tmp_path, codes, "value", ens)
    for name, _, _, using in ens:
        r = v[name]
        if name.startswith("le"):
            assert r["status"] == "holds" and r["how"] == "proved", r
        else:
            assert r["status"] == "violated", r
            w = outputs_of(np.array([r["witness"]["x"], r["witness"]["x_prime"]]))[:, 0]
            assert abs(w[0] - w[1]) >= top, r


def test_code_progression():
    from fairspec.certify.network import code_progression

    assert code_progression(("1", "0", "2")) == (1.0, 0.0)
    assert code_progression((0.5, 0.0, 1.0)) == (0.5, 0.0)
    assert code_progression((-1.5, 0.5, -0.5)) == (1.0, -1.5)
    assert code_progression((0.0, 1.0, 3.0)) is None              # not evenly spaced
    assert code_progression((0.1, 0.2, 0.3)) is None              # 0.1 + 2 * step is not 0.3 exactly
    assert code_progression((2.0, 2.0)) is None                   # a repeated code


def test_codes_that_are_not_numbers_of_the_runtime_s_precision_are_refused():
    """The certify kind ``codes`` claims no rounding: a table whose codes float32 cannot hold is refused
    (a reason, never a bound that misses the cast)."""
    from fairspec.certify.network import InputEncoding, _encoded_box_and_error

    e = (InputEncoding("codes", 2.0 ** -40, 1.0 + 2.0 ** -40),)
    lo, hi = np.array([0.0]), np.array([2.0])
    xlo, xhi, err = _encoded_box_and_error(e, lo, hi, np.array([True]), "float64")
    assert xlo[0] == 1.0 + 2.0 ** -40 and xhi[0] == 1.0 + 3 * 2.0 ** -40 and err[0] == 0.0
    with pytest.raises(ValueError, match="not float32 numbers"):
        _encoded_box_and_error(e, lo, hi, np.array([True]), "float32")
    xlo, xhi, err = _encoded_box_and_error((InputEncoding("codes", 0.5, -1.0),), lo, hi, np.array([True]), "float32")
    assert (xlo[0], xhi[0], err[0]) == (-1.0, 0.0, 0.0)


def test_a_code_table_that_is_not_evenly_spaced_is_refused_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    outputs_of = _torch_file(tmp_path, _layers(0, 3, False))
    assert outputs_of(_grid(("0", "1", "3"))).shape == (48, 3)
    v = _check(tmp_path, ("0", "1", "3"), "logit", [("cls", CLASS, "prove", "milp")])
    assert v["cls"]["status"] == "unknown" and "not evenly spaced" in v["cls"]["reason"], v["cls"]
