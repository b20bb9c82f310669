"""exact-smt leaves a pair out of its query only where the runtime scores it so in EVERY batch (session 35, review r7).

The exact SMT backend asks z3 for a violating pair; a pair within the runtime's rounding of the threshold that one
replay scored fair was excluded and the query asked again, and certify accepted the proof "except N pairs each
evaluated on the runtime and fair". But torch on CPU rounds one input's score differently in batches of other
sizes (README, "Whatever the batch"): on a 4-6-3 float32 network with normal weights, logit column 0 of the pair
((10, 2, F), (10, 2, M)) differs by 5.0892424583 in a batch of two and by exactly float(5.089242577552795) in a
batch of 16 or more rows, so `|logit(m(x), 0) - logit(m(x'), 0)| < 5.089242577552795` was `holds (proved)` where
the runtime violates it. The milp backend said unknown there. Now certify.smt.prove_unsat accepts an excluded pair
only where certify.exact_runtime.scored_in_every_order shows its points exact in every order (dyadic weights and
inputs), and the backend says unknown ("depends on how the model is batched") otherwise."""

from __future__ import annotations

import numpy as np
import pytest

SPEC = """features F {
  a : int in [0, 12]
  b : int in [0, 12]
  s : {F, M} protected
}
model m = torch("m.pt", score = logit)
encode F for m { a : raw  b : raw  s : onehot }
property q {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure |logit(m(x), 0) - logit(m(x'), 0)| OP 5.089242577552795
  mode = prove
  using smt
  timeout = 600s
}
"""


def _normal_net(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    l1, l2 = torch.nn.Linear(4, 6), torch.nn.Linear(6, 3)
    with torch.no_grad():
        for lin in (l1, l2):
            lin.weight.copy_(torch.from_numpy(rng.normal(size=tuple(lin.weight.shape)).astype(np.float32)))
            lin.bias.copy_(torch.from_numpy((rng.normal(size=tuple(lin.bias.shape)) * 0.5).astype(np.float32)))
    seq = torch.nn.Sequential(l1, torch.nn.ReLU(), l2).eval()
    torch.jit.save(torch.jit.script(seq), str(tmp_path / "m.pt"))
    return seq


@pytest.mark.parametrize("op", ["<", "<="])
def test_a_pair_fair_in_one_batch_is_not_left_out_of_a_proof(tmp_path, monkeypatch, op):
    from fairspec import pipeline

    pytest.importorskip("z3")
    _normal_net(tmp_path)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (tmp_path / "s.fair").write_text(SPEC.replace("OP", op))
    v = pipeline.check(tmp_path / "s.fair").verdicts[0]
    # the pair ((10, 2, F), (10, 2, M)) is within the runtime's rounding of eps: fair in a batch of two, unfair in a
    # batch of 16 rows on this machine's torch; no proof may rest on one batch's scores of it
    assert v.status != "holds", (v.status, v.how, v.reason)
    if v.status == "unknown":
        assert "batched" in v.reason, v.reason


def test_certify_refuses_an_excluded_pair_not_exact_in_every_order():
    from fairspec.certify.exact_runtime import scored_in_every_order

    W1 = np.array([[0.1, 0.3], [-0.7, 0.2]], dtype=np.float32).astype(np.float64)
    b1 = np.array([0.1, 0.0], dtype=np.float32).astype(np.float64)
    W2 = np.array([[0.3, -0.9]], dtype=np.float32).astype(np.float64)
    b2 = np.array([0.05], dtype=np.float32).astype(np.float64)
    layers = [(W1, b1, True), (W2, b2, False)]
    X = np.array([[3.0, 1.0], [3.0, 0.0]])
    H = np.maximum(X.astype(np.float32) @ W1.T.astype(np.float32) + b1.astype(np.float32), 0)
    z = (H @ W2.T.astype(np.float32) + b2.astype(np.float32)).astype(np.float64)[:, 0]
    # generic float32 weights: not shown exact in every order
    assert not scored_in_every_order(layers, None, "float32", ("logit", 0), X, z)
    # dyadic weights and integer inputs: every partial sum exact, the scores are the exact ones
    Wd1, bd1, Wd2, bd2 = np.array([[0.5, 0.25], [-0.75, 1.0]]), np.array([0.125, 0.0]), np.array([[2.0, -0.5]]), \
        np.array([0.25])
    d = [(Wd1, bd1, True), (Wd2, bd2, False)]
    zd = (np.maximum(X @ Wd1.T + bd1, 0) @ Wd2.T + bd2)[:, 0]
    assert scored_in_every_order(d, None, "float32", ("logit", 0), X, zd)
    assert not scored_in_every_order(d, None, "float32", ("logit", 0), X, zd + 2.0 ** -10)   # not those scores
    assert not scored_in_every_order(d, None, "float32", ("softmax", 0, 1), X, zd)          # a softmax: never
    assert not scored_in_every_order(d, None, "float32", ("prob", 0), X, zd)                # a head not elementwise
    assert scored_in_every_order(d, None, "float32", ("prob", 0), X, [0.6, 0.7], fixed_head=True)


def test_prove_unsat_refuses_exclusions_without_the_runtime():
    """certify's gate itself: an excluded pair with no runtime network to show it exact is no proof."""
    from fairspec.certify import smt

    q = type("Q", (), {})()
    # prove_unsat refuses before reading the query when an exclusion has no evidence
    assert smt.prove_unsat(q, "", "unsat", solver="z3", excluded=[([1.0, 0.0], [1.0, 1.0], (0.5, 0.5))],
                           post="logit", eps=1.0, readout=("logit", 0), precision="float32") is None
