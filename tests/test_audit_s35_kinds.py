"""Session 35 audit of the property kinds' definitions (PBA, k-discrimination, repair): each claim
compared with a brute force of the README's definition on the library's own runtime."""

from __future__ import annotations


import numpy as np


def _pba_tree(tmp_path, rows, delta, r_lo="0", r_hi="1"):
    """A scikit-learn tree on (s, r) whose only split on r sits at 0.375 (a dyadic threshold: the float32
    input of 0.5 - 0.125 is exactly the threshold), and a pba spec flipping s with r moving."""
    import skops.io as sio
    from sklearn.tree import DecisionTreeClassifier

    X = np.array([[0, 0.25], [0, 0.5], [1, 0.25], [1, 0.5]])
    y = np.array([0, 1, 0, 1])
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert est.tree_.threshold[0] == 0.375 and est.tree_.feature[0] == 1
    sio.dump(est, tmp_path / "m.skops")
    (tmp_path / "d.csv").write_text("s,r,lab\n" + "".join(f"{s},{r},{lab}\n" for s, r, lab in rows))
    spec = tmp_path / "p.fair"
    spec.write_text(f'''data dd = csv("{tmp_path}/d.csv", label = lab == "yes")
features F from dd {{
  s : {{F, M}} protected
  r : real in [{r_lo}, {r_hi}]
}}
model m = sklearn("{tmp_path}/m.skops")
encode F for m {{
  s : code
  r : raw
}}
property p {{
  pba(m, flip s, around dd, delta {{r: {delta}}})
}}
''')
    return est, spec


def test_pba_tree_real_delta_cut_at_a_float32_threshold_is_decided(tmp_path):
    """A real feature moving across a split whose threshold the float32 input hits exactly: the cut
    stepped one float64 ulp at a time (float32(0.375 + 1 ulp) is still 0.375, still left) until past
    max_cells, so every point was `unknown`. The tree reads no s: no point is PBA-verified (x and x'
    score alike), so the property is violated; before the fix it was unknown."""
    from fairspec.pipeline import check

    est, spec = _pba_tree(tmp_path, [("F", 0.5, "yes"), ("M", 0.5, "yes"), ("F", 0.25, "no")], "0.25")
    v = check(spec).verdicts[0]
    assert v.status == "violated", (v.status, v.reason)
    counts = v.details["table"]["overall"]
    assert counts["observed"]["unknown"] == 0 and counts["flipped"]["unknown"] == 0


def _multiclass_lr(tmp_path, claim):
    """A three-class LogisticRegression on (a, s) over a domain too large to enumerate (a in [0, 10^7])."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 10, 60), rng.integers(0, 3, 60)]).astype(float)
    est = LogisticRegression().fit(X, (X[:, 0] + X[:, 1]).astype(int) % 3)
    sio.dump(est, tmp_path / "m.skops")
    spec = tmp_path / "k.fair"
    spec.write_text(f'''features F {{
  a : int in [0, 10000000]
  s : {{F, M, X}} protected
}}
model m = sklearn("{tmp_path}/m.skops")
encode F for m {{
  a : raw
  s : code
}}
property p {{
  {claim}
  timeout = 20s
}}
''')
    return spec


def test_kdisc_multiclass_claim_no_model_can_break_is_proved_by_counting(tmp_path):
    """README: a claim no model can break (k <= min(K, ceil(1 / eps))) is `holds (proved: exact
    arithmetic)` before any search. Over the predicted classes (or class c's buckets) of a multiclass
    model on a domain too large to enumerate it was `unknown` ("too many individuals")."""
    from fairspec.pipeline import check

    for claim, bound in (("k_discrimination(m, over {s}) < 4", 3),          # K = 3 counterfactuals
                         ("k_discrimination(m, over {s}) <= 3", 3),
                         ("k_discrimination(m, over {s}, class = 1, eps = 0.5) <= 2", 2)):   # 2 buckets
        v = check(_multiclass_lr(tmp_path, claim)).verdicts[0]
        assert (v.status, v.how) == ("holds", "proved"), (claim, v.status, v.reason)
        assert v.proof.method == "exact-arithmetic" and v.details["max_k_bound"] == bound, claim
    for claim in ("k_discrimination(m, over {s}) < 3", "k_discrimination(m, over {s}, class = 1, eps = 0.25) <= 2"):
        v = check(_multiclass_lr(tmp_path, claim)).verdicts[0]
        assert v.status != "holds" or v.proof.method != "exact-arithmetic", claim     # not by counting
