"""k-discrimination of tree models in leaf boxes (session 30): the ``kdisc`` family's tree instances
(scikit-learn, XGBoost, LightGBM), checked with the cut of ``fairspec.kinds.tree_kdisc`` lowered
(``MAX_POINTS`` = 1, the leaf boxes' own budget 400,000), so that every claim goes through the path a
user meets beyond 400,000 cells: the products of cells on which every tree reaches one leaf
(``certify.trees.leaf_boxes``), one representative individual each, counted by
``certify.trees.kdisc_by_boxes``; with FAIRSPEC_ENUMERATE_PAIRS=0, as ``kdisc-solver``, so that the
domain is not enumerated whole first. The truth is the kdisc family's: every individual and its K
counterfactuals on the library, buckets exact.

Only the budget changes (the ``*-solver`` families do the same with FAIRSPEC_ENUMERATE_PAIRS=0):
the boxes are certify's, and what they do not decide falls back to the paths of any k-discrimination.
"""

from __future__ import annotations

from . import kdisc

FAMILY = "kdisc-boxes"
BOX_BUDGET = 400_000


def generate(seed: int):
    """The first kdisc instance with a tree model among seeds derived from ``seed``."""
    for k in range(40):
        inner = 80_000_000 + seed * 40 + k
        inst = kdisc.generate(inner)
        if inst.info.get("model") not in ("onnx", "torch"):
            break
    inst.family, inst.seed = FAMILY, seed
    inst.info["kdisc_seed"] = inner
    inst.info["env"] = {"FAIRSPEC_ENUMERATE_PAIRS": "0"}     # not enumerated whole first (kdisc-solver too)
    for p in inst.props:
        p.family = FAMILY
        p.meta["boxes_forced"] = True
        p.meta["solver_forced"] = True      # a user gets enumeration here: outside the unknown target
    inst.judge = judge
    return inst


def judge(spec, props, base):
    """The kdisc family's judgement, with the cells' cut lowered for the check (restored after)."""
    import fairspec.certify.trees as ct
    import fairspec.kinds.tree_kdisc as tk

    from .judge import _check_group

    cut, boxes = tk.MAX_POINTS, ct.leaf_boxes

    def leaf_boxes(*a, max_boxes=None, **kw):
        return boxes(*a, max_boxes=BOX_BUDGET, **kw)

    tk.MAX_POINTS, ct.leaf_boxes = 1, leaf_boxes
    try:
        return _check_group(spec, props, base)
    finally:
        tk.MAX_POINTS, ct.leaf_boxes = cut, boxes
