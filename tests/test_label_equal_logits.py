"""A label at a real tie: every pair's runtime logits equal (``z = z'``) and some pair exactly at the
threshold (z = z' = 0). The label claim ``min(z, -z') < -E`` is strict, so even at E = 0 it cannot close
that pair; certify's equal-logits route (``certify.network.equal_logits_readout``, wired for ``prob`` at
eps 0 before) proves ``z - z' <= 0`` for every ordered pair where the runtime's logit difference is the
proof's exactly, and equal runtime logits flip no label whatever the runtime's rule at the threshold
(bench/results/exact_ties_s25.md, "Session 26": seed-46 network-solver 46000002 p1 / p2). Every verdict
is checked against brute force over every pair with the runtime's own decision: a flip at exactly 0 is
violated with a witness that flips, no flip is never violated (and, on the real ties, proved by every
path). The solvers decide: pair enumeration is off."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import LABEL_PAIR_PROP

import fairspec

HEAD = """features F {{
  g : {{A, B, C}} protected
  f0 : int in [17, 20]
}}
model m = {model}
encode F for m {{
  g : code
  f0 : raw
}}
"""
PROP = LABEL_PAIR_PROP
CASES = ["using smt", "using milp", "using milp\n  engine = scip", "using milp\n  mode = maximize",
         "partitions = 3", "using smt\n  mode = maximize", "using milp\n  partitions = 2",
         "mode = maximize\n  partitions = 2"]
GRID = np.array([[g, f] for g in range(3) for f in range(17, 21)], dtype=np.float64)


def _judge(tmp_path, model_text, decide, truth):
    """Every case's verdict against the brute-force truth of ``decide`` (the runtime's labels on GRID)."""
    lab = {tuple(r): int(v) for r, v in zip(GRID, decide(GRID))}
    flips = any(lab[a] != lab[b] for a, b in itertools.product(lab, lab) if a[1] == b[1] and a[0] != b[0])
    assert flips == (truth == "violated")
    (tmp_path / "s.fair").write_text(HEAD.format(model=model_text)
                                     + "".join(PROP.format(k=k, using=u) for k, u in enumerate(CASES)))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    for k, case in enumerate(CASES):
        v = rep[f"p{k}"]
        if truth == "violated":
            assert v.status == "violated", (case, v.reason)
            assert lab[tuple(map(float, v.witness.x))] != lab[tuple(map(float, v.witness.x_prime))], case
        elif truth == "tie":
            assert v.status == "holds" and v.how == "proved" and v.proof is not None, (case, v.reason)
        else:       # no flip, logits unequal: never violated, holds only with a proof
            assert v.status in ("holds", "unknown"), (case, v.reason)
            assert v.status != "holds" or v.proof is not None


@pytest.mark.parametrize("coef_g, intercept, truth", [
    (0.0, -35.0, "tie"),                   # z = 1.75 f0 - 35: exactly 0 at f0 = 20 for every g, no flip
    (0.0, -35.0 + 2.0 ** -47, "tie"),      # 7.1e-15 above 0 at f0 = 20 for every g: equal labels
    (2.0 ** -10, -35.0, "violated"),       # 0 at (A, 20) (label 0) against 2**-10 at (B, 20) (label 1)
    (-2.0 ** -10, -35.0, "holds"),         # 0 at (A, 20), below 0 elsewhere: no flip, logits unequal
])
def test_label_at_a_real_tie_sklearn(tmp_path, monkeypatch, coef_g, intercept, truth):
    pytest.importorskip("sklearn")
    skio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = LogisticRegression().fit(np.array([[0.0, 17.0], [2.0, 20.0], [1.0, 18.0], [0.0, 20.0]]), [0, 1, 0, 1])
    est.coef_, est.intercept_ = np.array([[coef_g, 1.75]]), np.array([intercept])
    skio.dump(est, tmp_path / "m.skops")
    if truth == "tie":
        assert len(set(est.decision_function(GRID[GRID[:, 1] == 20]))) == 1
    _judge(tmp_path, 'sklearn("m.skops")', est.predict, truth)


@pytest.mark.parametrize("w_g, v_g, truth", [
    (0.0, 0.0, "tie"),           # the hidden layer ignores g: z = z' on every pair, exactly 0 at f0 = 20
    (2.0 ** -10, 0.0, "violated"),  # g reaches the first unit: 0 at (A, 20) against 2**-11 at (B, 20)
    (0.0, 1.0, "holds"),         # g in the second unit: z = 0 at (A, 20) and (B, 20), -1/4 at (C, 20), no
                                 # flip; equal logits asked at the tie (A, B) and refused ((A, C) differ)
])
def test_label_at_a_real_tie_torch_float64(tmp_path, monkeypatch, w_g, v_g, truth):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    # h1 = relu(w_g g + f0 - 17), h2 = relu(v_g g + 20 - v_g - f0), z = h1 / 2 - h2 / 4 - 3/2: dyadic, rows exact
    l1, l2 = torch.nn.Linear(2, 2).double(), torch.nn.Linear(2, 1).double()
    with torch.no_grad():
        l1.weight.copy_(torch.tensor([[w_g, 1.0], [v_g, -1.0]], dtype=torch.float64))
        l1.bias.copy_(torch.tensor([-17.0, 20.0 - v_g], dtype=torch.float64))
        l2.weight.copy_(torch.tensor([[0.5, -0.25]], dtype=torch.float64))
        l2.bias.copy_(torch.tensor([-1.5], dtype=torch.float64))
    seq = torch.nn.Sequential(l1, torch.nn.ReLU(), l2).eval()
    torch.jit.save(torch.jit.script(seq), str(tmp_path / "m.pt"))

    def decide(X):
        with torch.no_grad():
            return (seq(torch.from_numpy(np.asarray(X, dtype=np.float64))).numpy().reshape(-1) > 0).astype(int)

    if truth == "tie":
        with torch.no_grad():
            assert 0.0 in seq(torch.from_numpy(GRID)).numpy()
    _judge(tmp_path, 'torch("m.pt", score = logit)', decide, truth)
