"""Session 37 audit (h5): k-discrimination (HyFair) against brute force, and what its explanation prints.

The verdicts (max k, witnesses, counts) of networks with dyadic weights and ties, tree models with code-valued
thresholds, several protected features of 3-5 values, multiclass classes / class probabilities, `index` columns and
banded attributes agreed with brute force on the runtime (scratch runs, not repeated here). What did not: the
`explain tree` output of the search --

* a bool feature in a path printed `x.f >= 1` (raw) or `x.f == "true"` (code): the guardrail fragment does not
  type-check (FS301 "cannot compare a condition with a number / a string"); now `x.f == true`;
* a path's share of the domain ("0.25 of the domain") counted each one-hot coordinate as an independent 0/1:
  `x.f == true and x.c != c2` (c of three categories) printed 0.25, the truth 1/3 (and 0.25 for 1/6);
* the negated samples of a path ("mean k ... vs ... negated") set a one-hot coordinate alone: rows with two
  categories, or none, that no individual is, scored by the model and averaged in.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

SPEC = """features F {{
  g : {{g0, g1, g2, g3}} protected
  f : bool
  a : int in [0, 9]
  c : {{c0, c1, c2}}
}}
model m = onnx("m.onnx")
encode F for m {{
  g : code
  f : {f}
  a : raw
  c : onehot
}}
property gr {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
{guard}
  ensure label(m(x)) == label(m(x'))
}}
"""


def _spec(tmp_path, f_enc: str, guard: str = ""):
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(f=f_enc, guard=guard))
    return p


def _onnx(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    W = np.ones((1, 6), dtype=np.float32)
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["z"], transB=1),
                           helper.make_node("Sigmoid", ["z"], ["prob"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 6])],
                          [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [None, 1])],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(np.zeros(1, np.float32), "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")


@pytest.mark.parametrize("f_enc,true_rank", [("raw", 1), ("code {false = 1, true = 0}", 0)])
def test_a_bool_feature_in_an_explanation_prints_true_or_false(tmp_path, f_enc, true_rank):
    """Failed before: the decoder printed `x.f >= 1` / `x.f == "true"`, which lint refuses (FS301)."""
    from fairspec.kinds.k_discrimination import _coordinate_names
    from fairspec.pipeline import lint

    _onnx(tmp_path)
    spec = lint(_spec(tmp_path, f_enc)).spec
    names, dec = _coordinate_names(spec.encoding_for("m"), spec.feature_set("F"))
    f = names.index("f")
    # a tree's split between 0 and 1 of the coordinate (the rank of the code in the sorted table)
    above, below = dec("x", f, 0.5, None), dec("x", f, None, 0.5)
    assert {above, below} == {"x.f == true", "x.f == false"}, (above, below)
    assert above == ("x.f == true" if true_rank == 1 else "x.f == false")
    for cond in (above, below, f"{above} and x.a >= 3"):
        res = lint(_spec(tmp_path, f_enc, f"  require not ({cond})"))
        assert not [d for d in res.diagnostics if d.is_error], (cond, res.diagnostics)


def _space():
    from fairspec.backends.search.space import Box, Protected, Space

    # coordinates: g (code rank, protected), f (0/1), a (int 0..9), c (one-hot, 3 columns)
    box = Box.make([0, 0, 0, 0, 0, 0], [3, 1, 9, 1, 1, 1], [True] * 6, [(3, 4, 5)])
    return Space(box, (Protected((0,), ((0.0,), (1.0,), (2.0,), (3.0,)), (), "g"),))


def _domain():
    """Every individual (g fixed at 0): f, a, one category of c."""
    rows = []
    for f, a, c in itertools.product(range(2), range(10), range(3)):
        r = [0.0, f, a, 0.0, 0.0, 0.0]
        r[3 + c] = 1.0
        rows.append(r)
    return np.array(rows)


@pytest.mark.parametrize("preds", [
    [(1, ">", 0.5), (5, "<=", 0.5)],                  # x.f == true and x.c != c2: 1/3
    [(1, ">", 0.5), (5, ">", 0.5)],                   # x.f == true and x.c == c2: 1/6
    [(3, "<=", 0.5), (4, "<=", 0.5)],                 # x.c == c2: 1/3
    [(3, ">", 0.5), (4, ">", 0.5)],                   # no individual: 0
    [(2, ">", 2.5), (2, "<=", 6.5), (3, "<=", 0.5)],  # 4 of 10 values of a, 2 of 3 categories
])
def test_a_paths_share_of_the_domain_counts_categories(preds):
    """Failed before: each one-hot coordinate was an independent 0/1 (1/4, 1/4, 1/4, 1/4, 1/5)."""
    from fairspec.backends.search.explain import Predicate, box_volume

    P = [Predicate(*p) for p in preds]
    D = _domain()
    truth = np.mean(np.all([p.holds(D) for p in P], axis=0))
    assert box_volume(P, _space()) == pytest.approx(truth, abs=1e-12), (preds, truth)


@pytest.mark.parametrize("pred", [(5, "<=", 0.5), (5, ">", 0.5), (3, ">", 0.5)])
def test_a_paths_negation_keeps_one_category(pred):
    """Failed before: `x.c != c2` was negated by setting c2 = 1 beside the row's own category (two categories),
    `x.c == c2` by setting c2 = 0 (none)."""
    from fairspec.backends.search.explain import Predicate, _negate

    p = Predicate(*pred)
    D = _domain()
    S = D[p.holds(D)]
    N = _negate(np.random.default_rng(0), _space(), S, [p])
    assert N.shape[0] == S.shape[0]
    assert np.all(N[:, 3:6].sum(axis=1) == 1), N[:, 3:6]
    assert not p.holds(N).any()
