"""Session 36 audit (h4): PBA and the pre-condition search on runtimes that round by batch (README, "Whatever the
batch"): torch on CPU rounds one row's score differently in a batch of 1, 2 or 6 rows, so a status decided from
one batch's scores is no fact where a score lies within that rounding of the threshold. Each net here is built on
this machine's torch to sit on a tie in one batch size and not another (the output bias set a few float32 ulps
around minus the centre's score), and every verdict is compared with brute force over those batchings."""

from __future__ import annotations

import numpy as np
import pytest


def _enc(rows):
    """(g, f0, f1) -> the model's input [f0, f1, g = false, g = true]."""
    return np.array([[f0, f1, 1 - g, g] for g, f0, f1 in rows], dtype=np.float32)


def _net(seed: int = 0, H: int = 8):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    l1, l2 = torch.nn.Linear(4, H), torch.nn.Linear(H, 1)
    with torch.no_grad():
        l1.weight.copy_(torch.from_numpy(rng.normal(size=(H, 4)).astype(np.float32)))
        l1.bias.copy_(torch.from_numpy(rng.normal(size=H).astype(np.float32)))
        l2.weight.copy_(torch.from_numpy(rng.normal(size=(1, H)).astype(np.float32)))
        l2.bias.zero_()
    return torch.nn.Sequential(l1, torch.nn.ReLU(), l2).eval()


def _run(net, X):
    import torch

    with torch.no_grad():
        return net(torch.from_numpy(np.ascontiguousarray(X))).numpy().ravel().astype(np.float64)


def _biases(net, centre, enc=_enc):
    """Output biases a few float32 ulps around minus the centre's score (no bias)."""
    base = np.float32(_run(net, enc([centre]))[0])
    out, b = [], -base
    for _ in range(4):
        b = np.nextafter(b, np.float32(np.inf))
    for _ in range(9):
        out.append(b)
        b = np.nextafter(b, np.float32(-np.inf))
    return out


def _with_bias(net, b, path):
    import torch

    with torch.no_grad():
        net[2].bias.fill_(float(b))
    torch.jit.save(torch.jit.script(net), str(path))


def _centre_decisions(net, centre, other):
    """The centre's decision (score > 0) scored alone, beside its counterfactual, and in six copies."""
    return {_run(net, _enc([centre]))[0] > 0, _run(net, _enc([centre, other]))[0] > 0,
            _run(net, _enc([centre] * 6))[0] > 0}


PBA_SPEC = """data dd = csv("{d}/d.csv", label = y == 1)
features F from dd {{
  g : bool  protected
  f0 : int in [0, 7]
  f1 : int in [0, 3]
}}
model m = torch("{d}/m.pt", score = logit)
encode F for m {{
  f0 : raw
  f1 : raw
  g : onehot
}}

property p {{
  pba(m, flip g, around dd, delta {{f0: 1}})
  timeout = 60s
}}
"""


def test_pba_a_point_whose_centre_one_batch_excludes_is_not_refuted(tmp_path):
    """One point (g false, f0 2, f1 1, true class 1) whose score sits within float32 rounding of 0: decided class 1
    in one batch of the torch net and class 0 in another (scored beside its counterfactual, as the witness is
    replayed). fairspec said `violated` (1 of 1 eligible points refuted, at an offset clear of the threshold), but
    in the batch that decides the centre class 0 the point is not eligible and nothing is refuted. A point whose
    centre's decision rests on one batch is unknown now (failed before: violated, for every such bias)."""
    from fairspec.pipeline import check

    net = _net()
    centre, other = (0, 2, 1), (1, 2, 1)
    (tmp_path / "d.csv").write_text("g,f0,f1,y\nfalse,2,1,1\n")
    (tmp_path / "s.fair").write_text(PBA_SPEC.format(d=tmp_path))
    fragile = 0
    for b in _biases(net, centre):
        _with_bias(net, b, tmp_path / "m.pt")
        if len(_centre_decisions(net, centre, other)) == 1:
            continue            # the centre's decision is the same in every batch here
        fragile += 1
        v = check(str(tmp_path / "s.fair")).verdicts[0]
        assert v.status == "unknown", (float(b), v.status, v.reason)
        assert "batched" in v.reason, v.reason           # not 'time budget or solver limits'
        # robustness accuracy of x: its centre's decision differs by batch, so neither proved nor refuted
        row = v.details["table"]["rows"][0]
        assert row["rb_observed_unknown"] == 1, row
        assert any("SP, TPR and CFA" in n for n in v.details["notes"]), v.details["notes"]
    if not fragile:
        pytest.skip("this machine's torch decides the centre alike in every batch for every bias tried")


def test_pba_robustness_accuracy_resting_on_one_batch_is_unknown(tmp_path):
    """The point (g false, f0 3, f1 1), true class 1, decided clearly at its centre; its neighbourhood's offset f0 = 2
    sits on the tie (class 1 in one batch, 0 in another). Its robustness accuracy (every offset decided class 1) was
    reported from one batch's decisions (proved or refuted); it is unknown now (failed before: 0 unknown)."""
    from fairspec.pipeline import check

    net = _net()
    tie, other = (0, 2, 1), (1, 2, 1)
    (tmp_path / "d.csv").write_text("g,f0,f1,y\nfalse,3,1,1\n")
    (tmp_path / "s.fair").write_text(PBA_SPEC.format(d=tmp_path))
    fragile = 0
    for b in _biases(net, tie):
        _with_bias(net, b, tmp_path / "m.pt")
        if len(_centre_decisions(net, tie, other)) == 1 or _run(net, _enc([(0, 3, 1)]))[0] <= 1e-3:
            continue
        fragile += 1
        v = check(str(tmp_path / "s.fair")).verdicts[0]
        row = v.details["table"]["rows"][0]
        assert row["rb_observed_unknown"] == 1, (float(b), row)
    if not fragile:
        pytest.skip("this machine's torch decides the tie alike in every batch for every bias tried")


PRE_DECLS = ("features F {\n  g : {A, B, C} protected\n  s : bool protected\n  a : int in [0, 9]\n}\n"
             'model m = torch("m.pt", score = logit)\n'
             "encode F for m {\n  g : onehot\n  s : raw\n  a : raw\n}\n")


def _pre_net(path, seed: int):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    l1, l2 = torch.nn.Linear(5, 8), torch.nn.Linear(8, 1)
    with torch.no_grad():
        l1.weight.copy_(torch.from_numpy(rng.normal(size=(8, 5)).astype(np.float32)))
        l1.bias.copy_(torch.from_numpy(rng.normal(size=8).astype(np.float32)))
        l2.weight.copy_(torch.from_numpy(rng.normal(size=(1, 8)).astype(np.float32)))
        l2.bias.copy_(torch.from_numpy(rng.normal(size=1).astype(np.float32)))
    net = torch.nn.Sequential(l1, torch.nn.ReLU(), l2).eval()
    torch.jit.save(torch.jit.script(net), str(path))
    return net


def _pre_x(rows):
    return np.array([[float(g == k) for k in range(3)] + [s, a] for g, s, a in rows], dtype=np.float32)


@pytest.mark.parametrize("seed", [1, 4])
def test_pre_search_maximize_lower_end_holds_every_batch_s_maximum(tmp_path, monkeypatch, seed):
    """maximize under a pre-condition the relaxation drops (an `or`), its region one cell (g, a): one pair, s flipped.
    The pre-condition search's pair was measured as a pair (a batch of two) and that measure was the interval's
    lower end; torch scoring each point alone gives the pair a smaller difference (seed 1, cell (A, 1):
    1.9273276329040527 as a pair, 1.9273271560668945 alone), so every batch's maximum but one lay below the
    interval. The lower end is widened by the runtime's spread now (kinds/pre_search_batches; failed before)."""
    from fractions import Fraction

    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    net = _pre_net(tmp_path / "m.pt", seed)
    for g, a in [(g, a) for g in range(3) for a in range(10)]:
        P = [(g, 0, a), (g, 1, a)]
        alone = [_run(net, _pre_x([p]))[0] for p in P]
        runs = [alone, _run(net, _pre_x(P)), _run(net, _pre_x(P[::-1]))[::-1], _run(net, _pre_x(P * 4))[:2]]
        maxima = {abs(Fraction(float(z[0])) - Fraction(float(z[1]))) for z in runs}
        if len(maxima) > 1:
            break
    else:
        pytest.skip("this machine's torch scores every cell's pair alike in every batch")
    t = float(min(maxima) / 2)           # violated: the search finds the region's one pair
    cell = f"(x.g == {'ABC'[g]} and x.a == {a})"
    (tmp_path / "p.fair").write_text(
        PRE_DECLS + f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n"
        f"  require {cell} or {cell}\n  ensure |logit(m(x)) - logit(m(x'))| <= {t!r}\n  using milp\n"
        "  mode = maximize\n}\n")
    v = check(str(tmp_path / "p.fair")).verdicts[0]
    assert v.status == "violated", (v.status, v.reason)
    assert v.bound is not None
    lo, hi = v.bound
    assert all(Fraction(lo) <= m <= Fraction(hi) for m in maxima), (v.bound, sorted(float(m) for m in maxima))


def test_pre_search_label_witness_on_a_batch_tie_reproduces_and_says_so(tmp_path, monkeypatch):
    """label under a dropped pre-condition (one cell): x's score sits on the tie, deciding its label one way in a batch
    of 1 or 2 and the other in a batch of 8 or 16. The searched pair may be reported violated only where it breaks
    the post scored alone, as the pair and reversed (README, "Whatever the batch"), and then with the note every
    such witness carries (details.runtime_rounding; the search's verdict had none: failed before)."""
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    net = _pre_net(tmp_path / "m.pt", 1)
    with __import__("torch").no_grad():
        net[2].bias.zero_()

    def runs(P):
        return [[_run(net, _pre_x([p]))[0] for p in P], _run(net, _pre_x(P)), _run(net, _pre_x(P[::-1]))[::-1],
                _run(net, _pre_x(P * 4))[:2], _run(net, _pre_x(P * 8))[8:10]]
    cells = [(g, a) for g in range(3) for a in range(10)
             if len({float(r[0]) for r in runs([(g, 0, a), (g, 1, a)])}) > 1]
    if not cells:
        pytest.skip("this machine's torch scores every point alike in every batch")
    g, a = cells[0]
    P = [(g, 0, a), (g, 1, a)]
    cell = f"(x.g == {'ABC'[g]} and x.a == {a})"
    (tmp_path / "p.fair").write_text(
        PRE_DECLS + f"property p {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n"
        f"  require {cell} or {cell}\n  ensure label(m(x)) == label(m(x'))\n  using milp\n}}\n")
    fragile = 0
    for b in _biases(net, P[0], _pre_x):
        _with_bias(net, b, tmp_path / "m.pt")
        broken = [(r[0] > 0) != (r[1] > 0) for r in runs(P)]
        if len(set(broken)) == 1:
            continue
        fragile += 1
        v = check(str(tmp_path / "p.fair")).verdicts[0]
        if v.status == "violated":
            assert all(broken[:3]), (float(b), broken)
            assert "runtime_rounding" in v.details, (float(b), sorted(v.details))
    if not fragile:
        pytest.skip("no bias tried sits on a tie one batch decides otherwise")


def _pba_share(net, rows, labels, batching: str):
    """PBA's share (verified / eligible) by brute force, every score of the runtime taken ``batching``: each point
    ``alone``, or x + d beside x' + d as a ``pair``."""
    def scores(P):
        return [_run(net, _enc([p]))[0] for p in P] if batching == "alone" else list(_run(net, _enc(P)))
    eligible = verified = 0
    for (g, f0, f1), c in zip(rows, labels):
        sx, sp = scores([(g, f0, f1), (1 - g, f0, f1)])
        if (sx > 0) != c or (sp > 0) != c:
            continue
        eligible += 1
        ok = True
        for d0 in range(max(0, f0 - 1), min(7, f0 + 1) + 1):
            a, b = scores([(g, d0, f1), (1 - g, d0, f1)])
            if (a > 0) == c and (b > 0) == c and not ((a - b) > 0 if c else (b - a) > 0):
                ok = False
        verified += ok
    return None if not eligible else verified / eligible


def _group_metrics(net, rows, labels, batching: str) -> dict:
    """Per group ("not g" / "g", the flipped attribute's): SP, TPR and CFA by brute force, the rows' and their
    counterfactuals' decisions scored ``alone``, x beside x' as a ``pair``, or every row in one batch (``whole``)."""
    flip = [(1 - g, f0, f1) for g, f0, f1 in rows]
    if batching == "alone":
        sx, sp = ([_run(net, _enc([r]))[0] for r in R] for R in (rows, flip))
    elif batching == "pair":
        sx, sp = zip(*(_run(net, _enc([r, q])) for r, q in zip(rows, flip)))
    else:
        sx, sp = _run(net, _enc(rows)), _run(net, _enc(flip))
    out = {}
    for name, gv in (("not g", 0), ("g", 1)):
        idx = [i for i, r in enumerate(rows) if r[0] == gv]
        pos = [i for i in idx if labels[i]]
        out[name] = {"sp": sum(sx[i] > 0 for i in idx) / len(idx),
                     "tpr": sum(sx[i] > 0 for i in pos) / len(pos) if pos else None,
                     "cfa": sum((sx[i] > 0) == (sp[i] > 0) for i in idx) / len(idx)}
    return out


def test_pba_share_bounds_hold_every_batching(tmp_path):
    """A few rows around the tie of the first test's net, `pba(...) >= 0.5`: the verdict's [proved, proved or
    unknown] share bound holds the share brute force gives with every score taken alone and with every x + d
    scored beside x' + d, and a holds / violated agrees with both."""
    from fairspec.pipeline import check

    net = _net()
    rows = [(0, 2, 1), (0, 3, 1), (1, 2, 1), (0, 5, 2), (1, 6, 0), (0, 1, 3)]
    (tmp_path / "s.fair").write_text(PBA_SPEC.format(d=tmp_path).replace(
        "delta {f0: 1})", "delta {f0: 1}) >= 0.5"))
    for b in _biases(net, rows[0])[2:7]:
        _with_bias(net, b, tmp_path / "m.pt")
        labels = [bool(_run(net, _enc([r]))[0] > 0) for r in rows]
        labels[0] = True
        (tmp_path / "d.csv").write_text("g,f0,f1,y\n" + "".join(
            f"{'true' if g else 'false'},{f0},{f1},{int(y)}\n" for (g, f0, f1), y in zip(rows, labels)))
        v = check(str(tmp_path / "s.fair")).verdicts[0]
        shares = [s for s in (_pba_share(net, rows, labels, k) for k in ("alone", "pair")) if s is not None]
        # the table's SP, TPR and CFA: every batching's within the printed range (else the one share printed)
        # -- they were this batch's alone, with a note (failed before: 'not g' SP 0.75 where alone gives 1.0)
        for k in ("alone", "pair", "whole"):
            truth = _group_metrics(net, rows, labels, k)
            for r in v.details["table"]["rows"]:
                for key, t in truth[r["group"]].items():
                    lo, hi = r.get(f"{key}_range") or (r[key], r[key])
                    assert t is None or lo <= t <= hi, (float(b), k, r["group"], key, t, r[key], r.get(f"{key}_range"))
        if any(r.get("sp_range") for r in v.details["table"]["rows"]):     # the text report prints the range
            from fairspec.backends.pba.aggregate import _cells

            r = next(r for r in v.details["table"]["rows"] if r.get("sp_range"))
            lo, hi = r["sp_range"]
            assert _cells(r, ("SP",)) == [f"{100 * lo:.1f}-{100 * hi:.1f}%"], _cells(r, ("SP",))
        if v.bound is not None:
            lo, hi = v.bound
            assert all(lo - 1e-12 <= s <= hi + 1e-12 for s in shares), (float(b), v.bound, shares, v.reason)
        if v.status == "holds":
            assert all(s >= 0.5 for s in shares), (float(b), shares)
        if v.status == "violated":
            assert all(s < 0.5 for s in shares), (float(b), shares)


@pytest.mark.parametrize("eps, status", [("0", "violated"), ("5", "holds")])
def test_milp_maximize_lower_end_holds_the_whole_domain_batch_s_maximum(tmp_path, monkeypatch, eps, status):
    """The milp solver's maximize, no pre-condition, a torch 5-8-1 network (seed 2 of the search tests): the
    interval's lower end was the witness's (violated) or best pair's (holds) measure scored as a pair,
    4.6219799518585205, where the whole domain scored in one batch gives every pair at most 4.621979475021362. The
    lower end is widened by the runtime's spread now (kinds/pre_search_batches.pair_lower_end / best_pair_low;
    both failed before on this machine's torch)."""
    from fractions import Fraction

    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    net = _pre_net(tmp_path / "m.pt", 2)
    pts = [(g, s, a) for g in range(3) for s in (0, 1) for a in range(10)]
    pairs = [(i, j) for i, p in enumerate(pts) for j, q in enumerate(pts)
             if p[0] == q[0] and p[2] == q[2] and p[1] != q[1]]
    A = _pre_x(pts)
    outs = [_run(net, A), np.array([_run(net, A[i:i + 1])[0] for i in range(len(A))]),
            np.concatenate([_run(net, A[i:i + 2]) for i in range(0, len(A), 2)])]
    maxima = [max(abs(Fraction(o[i]) - Fraction(o[j])) for i, j in pairs) for o in outs]
    (tmp_path / "p.fair").write_text(
        PRE_DECLS + "property p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n"
        f"  ensure |logit(m(x)) - logit(m(x'))| <= {eps}\n  using milp\n  mode = maximize\n}}\n")
    v = check(str(tmp_path / "p.fair")).verdicts[0]
    assert v.status == status and v.bound is not None, (v.status, v.reason)
    lo, hi = v.bound
    assert all(Fraction(lo) <= m <= Fraction(hi) for m in maxima), (v.bound, [float(m) for m in maxima])


def test_maximum_at_a_tie_lower_end_holds_the_whole_domain_batch_s_maximum(tmp_path, monkeypatch):
    """kinds/pair_ties.maximum_at_a_tie's ``holds`` (the refinement over the whole domain proved the property after
    the solver stopped at a tie): its lower end was the solver's best pair scored as a pair, 4.6219799518585205 on
    the torch 5-8-1 network of the test above, where the whole domain scored in one batch gives every pair at most
    4.621979475021362. On this net at eps 4.6221 the refinement itself stops at the runtime's rounding (the path's
    holds was not reached end to end), so its arguments are taken from a real run and the refinement's answer is a
    holds (true: every batching's maximum is below eps). Widened by kinds/pre_search_batches.best_pair_low now;
    failed before."""
    from dataclasses import replace
    from fractions import Fraction

    import fairspec.kinds.individual_fairness as indiv
    import fairspec.kinds.pair_ties as ties
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    net = _pre_net(tmp_path / "m.pt", 2)
    pts = [(g, s, a) for g in range(3) for s in (0, 1) for a in range(10)]
    pairs = [(i, j) for i, p in enumerate(pts) for j, q in enumerate(pts)
             if p[0] == q[0] and p[2] == q[2] and p[1] != q[1]]
    A = _pre_x(pts)
    whole = _run(net, A)
    top = max(abs(Fraction(whole[i]) - Fraction(whole[j])) for i, j in pairs)
    seen = []
    real = ties.maximum_at_a_tie
    monkeypatch.setattr(indiv, "maximum_at_a_tie", lambda *a: seen.append(a) or real(*a))
    (tmp_path / "p.fair").write_text(
        PRE_DECLS + "property p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n"
        "  ensure |logit(m(x)) - logit(m(x'))| <= 4.6221\n  using milp\n  mode = maximize\n}\n")
    check(str(tmp_path / "p.fair"))
    assert seen, "the solver did not stop at a tie"
    prop, problem, res, _, model, runtime = seen[0]
    monkeypatch.setattr(ties, "decide_at_a_tie", lambda p, pr, r, *a, **k: replace(r, status="holds", how="proved"))
    got = real(prop, problem, res, None, model, runtime)
    assert got.status == "holds" and got.value is not None and got.bound is not None, got
    assert Fraction(got.value) <= top <= Fraction(got.bound), (got.value, got.bound, float(top))


def _k_net(path, seed: int, K: int = 3):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    l1, l2 = torch.nn.Linear(5, 8), torch.nn.Linear(8, K)
    with torch.no_grad():
        l1.weight.copy_(torch.from_numpy(rng.normal(size=(8, 5)).astype(np.float32)))
        l1.bias.copy_(torch.from_numpy(rng.normal(size=8).astype(np.float32)))
        l2.weight.copy_(torch.from_numpy(rng.normal(size=(K, 8)).astype(np.float32)))
        l2.bias.copy_(torch.from_numpy(rng.normal(size=K).astype(np.float32)))
    net = torch.nn.Sequential(l1, torch.nn.ReLU(), l2).eval()
    torch.jit.save(torch.jit.script(net), str(path))
    return net


def _real_p(row, c):
    """The real softmax's class-c probability of a float logit row, exactly enough (mpmath, 300 bits)."""
    from fractions import Fraction

    mpmath = pytest.importorskip("mpmath")
    with mpmath.workprec(300):
        den = sum(mpmath.exp(mpmath.mpf(float(v)) - mpmath.mpf(float(row[c]))) for v in row)
        man, exp = (1 / den).man_exp
        return Fraction(int(man)) * Fraction(2) ** int(exp)


@pytest.mark.parametrize("eps, status", [("0", "violated"), ("1", "holds")])
def test_class_prob_maximize_lower_end_holds_every_batch_s_maximum(tmp_path, monkeypatch, eps, status):
    """kinds/class_prob (the softmax branch and bound), maximize, a torch 5-8-3 logit network (seed 0): the lower end
    was the best pair's real-softmax measure scored as a pair, 0.10769955526840867, where the whole domain scored
    in one batch gives every pair at most 0.1076995549004625. Widened by the runtime's spread now
    (kinds/pre_search_batches.lower_end); both failed before on this machine's torch."""
    from fractions import Fraction

    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    net = _k_net(tmp_path / "m.pt", 0)
    pts = [(g, s, a) for g in range(3) for s in (0, 1) for a in range(10)]
    pairs = [(i, j) for i, p in enumerate(pts) for j, q in enumerate(pts)
             if p[0] == q[0] and p[2] == q[2] and p[1] != q[1]]
    A = _pre_x(pts)

    def rows(X):
        import torch

        with torch.no_grad():
            return net(torch.from_numpy(np.ascontiguousarray(X))).numpy().astype(np.float64)

    maxima = []
    for out in (rows(A), np.array([rows(A[i:i + 1])[0] for i in range(len(A))])):
        P = [_real_p(r, 1) for r in out]
        maxima.append(max(abs(P[i] - P[j]) for i, j in pairs))
    # every pair scored as a pair of its own
    maxima.append(max(abs(_real_p(Y[0], 1) - _real_p(Y[1], 1)) for Y in (rows(A[[i, j]]) for i, j in pairs)))
    (tmp_path / "p.fair").write_text(
        PRE_DECLS + "property p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n"
        f"  ensure |prob(m(x), 1) - prob(m(x'), 1)| <= {eps}\n  mode = maximize\n}}\n")
    v = check(str(tmp_path / "p.fair")).verdicts[0]
    assert v.status == status and v.bound is not None and v.details.get("engine") == "softmax-bab", (v.status, v.reason)
    lo, hi = v.bound
    assert all(Fraction(lo) <= m <= Fraction(hi) for m in maxima), (v.bound, [float(m) for m in maxima])


EDGE_SPEC = """features F {
  g : {A, B} protected
  a : int in [0, 3]
  b : int in [0, 3]
  c : int in [0, 3]
  e : int in [0, 3]
}
model m = sklearn("m.skops")
property p {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
}
"""


def _edge_pipeline():
    """An unfolded Pipeline(onehot g + passthrough a, b, c, e; PCA(2); HistGradientBoostingClassifier(max_iter=1))
    whose root split is set at a domain point's first PCA value where the whole domain's batch and the point alone
    round it one ulp apart (HGB compares float64 inputs), its two sides' leaves -5 and +5: the point's label
    depends on the batch. (pipeline, domain frame, the point's row) or a skip where no value differs by batch."""
    import itertools
    import warnings

    pd = pytest.importorskip("pandas")
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    cols = ["a", "b", "c", "e"]
    df = pd.DataFrame({"g": rng.choice(["A", "B"], 400), **{k: rng.integers(0, 4, 400) for k in cols}})
    y = ((df.a + df.b - df.c + (df.g == "B") + rng.normal(0, 1, 400)) > 3).astype(int)
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["g"]), ("num", "passthrough", cols)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("pca", PCA(2)),
                         ("clf", HistGradientBoostingClassifier(max_iter=1, max_depth=2))]).fit(df, y)
    dom = pd.DataFrame([dict(g=g, **dict(zip(cols, v))) for g in "AB" for v in itertools.product(range(4), repeat=4)])
    whole = pipe[:-1].transform(dom)[:, 0]
    i = next((i for i in range(len(dom)) if pipe[:-1].transform(dom.iloc[i:i + 1])[0, 0] != whole[i]), None)
    if i is None:
        pytest.skip("this machine's BLAS gives PCA the same value in every batch here")
    alone = {i: pipe[:-1].transform(dom.iloc[i:i + 1])[0, 0]}
    nodes = pipe[-1]._predictors[0][0].nodes
    nodes["feature_idx"][0], nodes["num_threshold"][0] = 0, min(whole[i], alone[i])      # `<=`: one each side

    def leaves(k, v):
        if nodes["is_leaf"][k]:
            nodes["value"][k] = v
        else:
            leaves(nodes["left"][k], v)
            leaves(nodes["right"][k], v)
    leaves(nodes["left"][0], -5.0)
    leaves(nodes["right"][0], 5.0)
    return pipe, dom, i


def edge_verdict_is_a_replayed_violation(v, pipe, dom) -> bool:
    """Is ``v`` a ``violated`` whose witness the pipeline's own predict labels apart alone, as a pair and reversed?
    Where this machine's BLAS rounds the edge point so that such a pair exists (an AMD EPYC: apart alone and as a
    pair, alike only in the whole domain's batch), that is a witness fairspec may report (it replays a witness
    alone, as a pair and reversed); else the verdict must be unknown. Never holds."""
    import pandas as pd

    assert v.status != "holds", (v.status, v.how, v.reason)
    if v.status != "violated":
        return False
    w = v.witness
    pair = pd.DataFrame([w.features, w.features_prime])[dom.columns].astype(dom.dtypes.to_dict())
    labels = {"alone": [pipe.predict(pair.iloc[k:k + 1])[0] for k in (0, 1)],
              "pair": list(pipe.predict(pair)), "reversed": list(pipe.predict(pair.iloc[::-1]))[::-1]}
    assert all(a != b for a, b in labels.values()), (labels, w)
    return True


def test_trees_behind_a_pca_on_a_split_edge_are_not_proved(tmp_path, monkeypatch):
    """The pipeline of :func:`_edge_pipeline`, `label(m(x)) == label(m(x'))` enumerated: fairspec said holds (proved),
    its runtime_rounding an assumed spread of 1.2e-11 on the output, which does not bound a tree's jump -- but the
    pipeline's own predict, each point alone, labels the edge point 1 and its counterfactual 0 (violated), while in
    the whole domain's batch no pair differs. A row whose tree input lies on a split edge now widens the assumed
    spread over every output (models/split_edges), so the verdict is unknown (failed before: holds proved)."""
    skops = pytest.importorskip("skops.io")
    import fairspec.models.split_edges as edges
    from fairspec.pipeline import check

    real = edges.at_split_edges

    pipe, dom, i = _edge_pipeline()
    n = len(dom) // 2
    j = (i + n) % len(dom)                           # its counterfactual (g flipped)
    alone = [pipe.predict(dom.iloc[k:k + 1])[0] for k in (i, j)]
    whole = pipe.predict(dom)
    by_batch = {"alone": bool(alone[0] != alone[1]), "whole": bool(whole[i] != whole[j])}
    if len(set(by_batch.values())) == 1:
        pytest.skip("the edge point's label does not depend on the batch here")
    skops.dump(pipe, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(EDGE_SPEC)
    seen = []
    monkeypatch.setattr(edges, "at_split_edges", lambda m, X: seen.append(real(m, X)) or seen[-1])
    v = check(str(tmp_path / "s.fair")).verdicts[0]
    if edge_verdict_is_a_replayed_violation(v, pipe, dom):
        return
    assert v.status == "unknown", (v.status, v.how, v.reason, by_batch)
    assert "batched" in v.reason, v.reason
    # the edge is read off the trees: of the whole domain's rows, the point's flagged, not every row
    big = max(seen, key=len)
    assert len(big) == len(dom) and 1 <= int(big.sum()) < len(dom), int(big.sum())


def test_data_rows_on_a_split_edge_behind_a_pca_are_decided_again(tmp_path):
    """The same pipeline on data rows (the domain's 512 points as a CSV), statistical parity: the edge row's decision
    differs alone and in the data's batch, which gives SP 0 where the edge row alone gives 1/256. Its output gap to
    0.5 is far above the assumed spread, so it was never re-decided (details.batching absent: failed before); a row
    whose tree input lies on a split edge is re-decided now, and the value's range covers both."""
    skops = pytest.importorskip("skops.io")
    pd = pytest.importorskip("pandas")
    from fairspec.pipeline import check

    pipe, dom, i = _edge_pipeline()
    skops.dump(pipe, tmp_path / "m.skops")
    dom.assign(y=1).to_csv(tmp_path / "d.csv", index=False)
    back = pd.read_csv(tmp_path / "d.csv")
    whole = pipe.predict(back)
    alone = whole.copy()
    alone[i] = pipe.predict(back.iloc[i:i + 1])[0]
    if alone[i] == whole[i]:
        pytest.skip("the edge row's decision does not depend on the batch here")

    def sp(pred):
        return abs(pred[back.g == "A"].mean() - pred[back.g == "B"].mean())
    (tmp_path / "s.fair").write_text('data people = csv("d.csv", label = y == 1)\n' + EDGE_SPEC.split(
        "property p")[0].replace("features F {", "features F from people {") +
        f"property sp {{\n  statistical_parity(m, groups g) <= {float(sp(whole) + sp(alone)) / 2!r}\n}}\n")
    v = check(str(tmp_path / "s.fair")).verdicts[0]
    b = (v.details or {}).get("batching")
    assert b and b["fragile_rows"] >= 1, (v.status, v.reason, sorted(v.details or {}))
    lo, hi = b["value_range"]
    assert lo <= min(sp(whole), sp(alone)) and max(sp(whole), sp(alone)) <= hi, (b, sp(whole), sp(alone))
    assert v.status != "holds" or max(sp(whole), sp(alone)) <= float(sp(whole) + sp(alone)) / 2
