"""``|logit(m(x), c) - logit(m(x'), c)| op eps`` of a network on the solver paths (FAIRSPEC_ENUMERATE_PAIRS=0:
no domain enumerated), decided by the binary logit path on the network cut to logit column c
(fairspec/kinds/logit_column.py), against brute force on small domains. Biased to ties: dyadic weights
(float32 logits exact), eps exactly the largest reachable difference, `<` against `<=`, one-column
models with c = 0 and c = 1, K = 3 columns, a column the protected feature does not move."""

from fractions import Fraction

import numpy as np
import pytest

from onnx_nets import mlp_model

_SPEC = """\
features F {
  a : int in [0, 3]
  b : int in [0, 4]
  sex : {F, M} protected
}
model m = onnx("m.onnx", score = logitINDEX)
encode F for m { a : raw  b : raw  sex : onehot }
"""

_PROP = """property P{i} {{
  forall x, x' : F
  require x.* == x'.* except {{sex}}
  mode = {mode}
  ensure |logit(m(x), {c}) - logit(m(x'), {c})| {op} {eps}
  using {backend}
}}
"""


def _net(rng, K, still):
    W1 = rng.integers(-4, 5, (5, 4)) / 4.0
    b1 = rng.integers(-2, 3, 5) / 4.0
    W2 = rng.integers(-4, 5, (K, 5)) / 4.0
    b2 = rng.integers(-1, 2, K) / 4.0
    if still is not None:          # column `still` reads no neuron that reads sex (the one-hot columns 2, 3)
        W2[still, np.any(W1[:, 2:] != 0, axis=1)] = 0.0
    return [(W1, b1, True), (W2, b2, False)]


def _truth(layers, c):
    """The largest |logit(x, c) - logit(x', c)| over the domain's pairs, in float32 as the runtime."""
    pts = np.array([[a, b] for a in range(4) for b in range(5)], dtype=np.float32)
    ones = np.ones((len(pts), 1), np.float32)
    zero = np.zeros((len(pts), 1), np.float32)

    def fwd(X):
        for W, b, relu in layers:
            X = X @ W.T.astype(np.float32) + b.astype(np.float32)
            X = np.maximum(X, 0) if relu else X
        return X.astype(np.float64)

    yF = fwd(np.hstack([pts, ones, zero]))
    yM = fwd(np.hstack([pts, zero, ones]))
    col = (lambda Y: Y[:, c]) if yF.shape[1] > 1 else (lambda Y: Y[:, 0] if c == 1 else -Y[:, 0])
    return float(np.max(np.abs(col(yF) - col(yM))))


def _fmt(x: float) -> str:
    return repr(float(x))


@pytest.mark.parametrize("K,c,seed,still", [(1, 0, 1, None), (1, 1, 2, None), (1, 0, 3, 0), (3, 2, 4, None),
                                            (3, 0, 5, None), (3, 1, 6, 1), (2, 1, 7, None)])
def test_logit_column_against_brute_force(tmp_path, monkeypatch, K, c, seed, still):
    onnx = pytest.importorskip("onnx")
    from fairspec import pipeline

    rng = np.random.default_rng(seed)
    layers = _net(rng, K, still)
    m = mlp_model(layers, "Identity", "logits", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    D = _truth(layers, c)
    cases = []
    for backend in ("milp", "smt"):
        for mode in ("prove", "maximize"):
            for op, eps in (("<=", D), ("<", D), ("<=", D / 2)):
                if D == 0 and (op, eps) != ("<=", 0.0):
                    continue
                cases.append((backend, mode, op, eps, D > eps or (op == "<" and D >= eps)))
    spec = _SPEC.replace("INDEX", ", index = 1" if K == 2 else "") + "".join(_PROP.format(i=i, mode=mode, c=c, op=op, eps=_fmt(eps), backend=backend)
                           for i, (backend, mode, op, eps, _) in enumerate(cases))
    (tmp_path / "s.fair").write_text(spec)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    rep = pipeline.check(tmp_path / "s.fair")
    got = {v.name: v for v in rep.verdicts}
    decided = 0
    from fairspec.models import load_model

    model = load_model("onnx", str(tmp_path / "m.onnx"), score_kind="logit", index=1 if K == 2 else None)
    for i, (backend, mode, op, eps, broken) in enumerate(cases):
        v = got[f"P{i}"]
        where = (backend, mode, op, eps, D, v.status, v.reason)
        assert v.status in ("violated" if broken else "holds", "unknown"), where
        decided += v.status != "unknown"
        if v.status == "holds":
            assert v.how == "proved" and v.proof is not None, where
        if v.status == "violated":
            w = v.witness
            X2 = np.array([w.x, w.x_prime])
            Y = np.asarray(model.outputs(X2), dtype=np.float64)
            s = Y[:, c] if Y.shape[1] > 1 else (Y[:, 0] if c == 1 else -Y[:, 0])
            d = abs(Fraction(float(s[0])) - Fraction(float(s[1])))
            assert d > Fraction(eps) or op == "<" and d >= Fraction(eps), where
            assert w.outputs == (float(s[0]), float(s[1])), where      # column c's logits (-z for c = 0 of one column)
        if mode == "maximize" and v.bound is not None:
            lo, hi = v.bound
            assert lo <= D + 1e-12 and hi >= D - 1e-12, where
    assert decided >= len(cases) - 2, [(c_, got[f"P{i}"].status, got[f"P{i}"].reason) for i, c_ in enumerate(cases)]


_FORALL = """property P{i} {{
  forall x, x' : F
  require x.* == x'.* except {{sex}}
  mode = {mode}
  ensure forall c: |logit(m(x), c) - logit(m(x'), c)| {op} {eps}
  using {backend}
}}
"""


def _judge_forall(v, layers, K, op, eps, where):
    """``v`` against brute force: holds only when no column moves beyond eps, proved, its proof naming every column;
    violated only when one does, its witness's column c breaking the post on the runtime (its logits shown)."""
    Ds = [_truth(layers, c) for c in range(K)]
    D = max(Ds)
    broken = D > eps or (op == "<" and D >= eps)
    assert v.status in ("violated" if broken else "holds", "unknown"), (where, Ds, v.status, v.reason)
    if v.status == "holds":
        assert v.how == "proved" and v.proof is not None, where
        assert v.proof.method == "per-column" and v.proof.detail["columns"] == K, v.proof.to_json()
        assert f"every one of {K} logit columns proved" in v.label, v.label
        assert [p["column"] for p in v.details["per_column"]] == list(range(K))
    if v.status == "violated":
        c = v.details["class"]
        x, xp = v.witness.outputs
        d = abs(Fraction(x) - Fraction(xp))
        assert d > Fraction(eps) or op == "<" and d >= Fraction(eps), where
        assert d <= Fraction(Ds[c]), where              # column c's logits on the runtime (float32 exact here)
    return D


@pytest.mark.parametrize("K,seed,still", [(3, 4, None), (3, 6, 1), (2, 7, None), (3, 21, 0), (2, 22, None)])
def test_forall_columns_against_brute_force(tmp_path, monkeypatch, K, seed, still):
    """forall c beyond small domains (session 35): the conjunction of the K one-column runs, against brute force.
    eps the largest column's difference (`<=` proved, `<` violated), a smaller column's (violated, by the largest
    column), half of it; milp and smt, prove and maximize (whose interval holds the largest difference). It was
    unknown ("not yet decided ... forall c")."""
    from fairspec import pipeline

    layers = _save(tmp_path, K, seed, still)
    Ds = sorted({_truth(layers, c) for c in range(K)})
    D = Ds[-1]
    cases = [("milp", "prove", "<=", D), ("milp", "prove", "<", D), ("smt", "prove", "<=", D),
             ("milp", "maximize", "<=", D), ("milp", "prove", "<=", Ds[0]), ("smt", "prove", "<=", D / 2)]
    cases = [c for c in cases if c[3] > 0 or c[2] == "<="]
    txt = _SPEC.replace("INDEX", ", index = 1" if K == 2 else "") + "".join(
        _FORALL.format(i=i, mode=mode, op=op, eps=_fmt(eps), backend=backend)
        for i, (backend, mode, op, eps) in enumerate(cases))
    (tmp_path / "s.fair").write_text(txt)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    for i, (backend, mode, op, eps) in enumerate(cases):
        v = got[f"P{i}"]
        _judge_forall(v, layers, K, op, eps, (backend, mode, op, eps))
        assert v.status != "unknown", (backend, mode, op, eps, v.reason)
        if mode == "maximize":
            lo, hi = v.bound
            assert lo <= D <= hi


def test_forall_columns_one_undecided_is_unknown_naming_it(tmp_path, monkeypatch):
    """A column left undecided (its run unknown, here made so) keeps forall c unknown, naming that column, even with
    every other column proved; a pre-condition that reads the model's outputs is refused as for one column."""
    from fairspec import pipeline
    from fairspec.kinds import logit_column
    from fairspec.verdict import unknown

    _save(tmp_path, 3, 4)
    real = logit_column.run_logit_column

    def one_undecided(prop, *a):
        return unknown(prop, "made undecided by the test") if prop.cls == 1 else real(prop, *a)

    monkeypatch.setattr(logit_column, "run_logit_column", one_undecided)
    (tmp_path / "s.fair").write_text(_SPEC.replace("INDEX", "") + _FORALL.format(
        i=0, mode="prove", op="<=", eps="100", backend="milp") + _FORALL.format(
        i=1, mode="prove", op="<=", eps="100", backend="milp").replace("  mode", "  require class(m(x)) == 1\n  mode"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    v = got["P0"]
    assert v.status == "unknown" and "column 1 of 3 not decided" in v.reason and "made undecided" in v.reason, v.reason
    assert [p["status"] for p in v.details["per_column"]] == ["holds", "unknown", "holds"]
    assert got["P1"].status != "holds" or "superset of the pairs" in got["P1"].reason, got["P1"].reason
    assert "internal error" not in (got["P1"].reason or "")


def test_join_logit_columns_refuses_a_missing_column():
    from fairspec.certify.argmax import join_logit_columns

    layers = _net(np.random.default_rng(4), 2, None)
    assert join_logit_columns({}, layers, 0.5, False) is None
    assert join_logit_columns({0: object(), 1: object()}, layers, 0.5, False) is None


@pytest.mark.parametrize("swap", [{1: 0}, {1: 2, 2: 1}, {0: 1}])
def test_forall_columns_refuses_a_part_about_another_column(tmp_path, monkeypatch, swap):
    """Each column's part is about its own column of this network: a part proved for another column (column 0's
    proof given for column 1 too, columns 1 and 2 swapped, column 1's for column 0) is refused by certify
    (certify.argmax.join_logit_columns: the fingerprint of the network cut to the column), so forall c is unknown,
    not holds. It was holds (the join checked only that every column had a proof of this eps)."""
    from dataclasses import replace

    from fairspec import pipeline
    from fairspec.kinds import logit_column

    layers = _save(tmp_path, 3, 4)
    assert len({(tuple(layers[-1][0][c]), layers[-1][1][c]) for c in range(3)}) == 3      # three distinct columns
    real = logit_column.run_logit_column

    def other_column(prop, *a):
        return real(replace(prop, cls=swap.get(prop.cls, prop.cls)), *a)

    (tmp_path / "s.fair").write_text(_SPEC.replace("INDEX", "") + _FORALL.format(
        i=0, mode="prove", op="<=", eps="100", backend="milp") + _FORALL.format(
        i=1, mode="prove", op="<=", eps="100", backend="smt") + _FORALL.format(
        i=2, mode="prove", op="<=", eps="100", backend="milp").replace("  mode", "  partitions = 2\n  mode"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    assert [got[f"P{i}"].status for i in range(3)] == ["holds"] * 3, [v.reason for v in got.values()]
    monkeypatch.setattr(logit_column, "run_logit_column", other_column)
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    for i in range(3):
        v = got[f"P{i}"]
        assert v.status == "unknown" and v.proof is None, (i, v.status, v.reason)
        assert "certify did not join the columns' proofs" in v.reason, v.reason


def _save(tmp_path, K, seed, still=None):
    onnx = pytest.importorskip("onnx")
    layers = _net(np.random.default_rng(seed), K, still)
    m = mlp_model(layers, "Identity", "logits", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    return layers


def test_partitions_decide_one_column(tmp_path, monkeypatch):
    """`partitions = 4` (and their certified combination) on the network cut to logit column 2: eps the largest
    reachable difference holds with `<=` and is violated with `<`; maximize's interval holds that difference."""
    from fairspec import pipeline

    D = _truth(_save(tmp_path, 3, 4), 2)
    txt = _SPEC.replace("INDEX", "")
    cases = [("<=", "milp", "prove"), ("<", "milp", "prove"), ("<=", "smt", "prove"), ("<=", "milp", "maximize")]
    for i, (op, backend, mode) in enumerate(cases):
        txt += _PROP.format(i=i, mode=mode, c=2, op=op, eps=_fmt(D), backend=backend).replace(
            "  mode", "  partitions = 4\n  mode")
    (tmp_path / "s.fair").write_text(txt)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    assert [got[f"P{i}"].status for i in range(4)] == ["holds", "violated", "holds", "holds"], \
        [v.reason for v in got.values()]
    for i in (0, 2, 3):
        assert got[f"P{i}"].proof is not None and got[f"P{i}"].details["coverage"]["partitions"] == 4
    lo, hi = got["P3"].bound
    assert lo <= D <= hi


def test_small_domain_notes_the_solver_options(tmp_path):
    """Enumerated whole, one class's logit(m(x), c) reads none of the solver path's options: each said in the
    verdict's notes, as logit(m(x))'s are (kinds.individual_fairness.unread_by_enumeration)."""
    from fairspec import pipeline
    from fairspec.report import verdict_notes

    _save(tmp_path, 3, 4)
    (tmp_path / "s.fair").write_text(_SPEC.replace("INDEX", "") + _PROP.format(
        i=0, mode="prove", c=1, op="<=", eps="0.5", backend="milp").replace("  mode", "  partitions = 4\n  mode"))
    (v,) = pipeline.check(tmp_path / "s.fair").verdicts
    assert v.proof is None or v.proof.method == "enumeration"
    assert any(n.startswith("`partitions` has no effect here: every pair of the small domain is enumerated")
               for n in verdict_notes(v)), verdict_notes(v)


@pytest.mark.parametrize("seed,half,blind", [(0, False, False), (1, False, True), (2, True, False), (3, True, True)])
def test_torch_logit_column_against_brute_force(tmp_path, monkeypatch, seed, half, blind):
    """A torch K = 3 logit module (float32 and float16 `.half()`: the runtime's own arithmetic, certified as
    for logit(m(x))), column seed % 3, on the solvers against torch's own forward pass on every grid point."""
    pytest.importorskip("torch")
    import test_torch_multi_output as T

    seq = T._seq(seed, 3, False, blind, half)
    c = seed % 3
    A, B = T._pairs(T._outputs(seq, T._grid()))
    d = [abs(Fraction(float(p)) - Fraction(float(q))) for p, q in zip(A[:, c], B[:, c])]
    D = max(d)
    text = repr(float(D))
    props = [T._prop("le", f"|logit(m(x), {c}) - logit(m(x'), {c})| <= {text}", "milp", "prove"),
             T._prop("le_smt", f"|logit(m(x), {c}) - logit(m(x'), {c})| <= {text}", "smt", "prove"),
             T._prop("mx", f"|logit(m(x), {c}) - logit(m(x'), {c})| <= {text}", "milp", "maximize")]
    if D > 0:
        props.append(T._prop("lt", f"|logit(m(x), {c}) - logit(m(x'), {c})| < {text}", "milp", "find"))
    out = T._run(tmp_path, monkeypatch, seq, 'torch("m.pt", score = logit)', props)

    def broken(op):
        def check(x, xp):
            Z = T._encoded(seq, (x, xp))
            g = abs(Fraction(float(Z[0, c])) - Fraction(float(Z[1, c])))
            return g > D or (op == "<" and g >= D)
        return check

    for name in ("le", "le_smt", "mx"):
        T._judge(out[name], False, broken("<="))
    if D > 0:
        T._judge(out["lt"], True, broken("<"))
    decided = [n for n, v in out.items() if v["status"] != "unknown"]
    assert len(decided) >= len(out) - 1, {n: (v["status"], v.get("reason")) for n, v in out.items()}
    if out["mx"]["status"] != "unknown" and out["mx"].get("bound"):
        lo, hi = out["mx"]["bound"]
        assert lo <= D <= hi


@pytest.mark.parametrize("seed,half", [(4, False), (13, True), (15, False)])
def test_torch_forall_columns_against_brute_force(tmp_path, monkeypatch, seed, half):
    """forall c on a torch K = 3 logit module (float32, float16 `.half()`): eps the largest difference over the
    columns holds with `<=` (milp, smt: every column proved, certify's per-column join) and is violated with `<`
    by a pair torch's own forward pass confirms."""
    pytest.importorskip("torch")
    import test_torch_multi_output as T

    seq = T._seq(seed, 3, False, False, half)
    A, B = T._pairs(T._outputs(seq, T._grid()))
    D = max(abs(Fraction(float(p)) - Fraction(float(q))) for p, q in zip(A.ravel(), B.ravel()))
    assert D > 0                      # (seeds whose protected input moves a column: `<` is violated)
    text = repr(float(D))
    post = "forall c: |logit(m(x), c) - logit(m(x'), c)| {op} " + text
    props = [T._prop("le", post.format(op="<="), "milp", "prove"), T._prop("le_smt", post.format(op="<="), "smt", "prove"),
             T._prop("lt", post.format(op="<"), "milp", "prove")]
    out = T._run(tmp_path, monkeypatch, seq, 'torch("m.pt", score = logit)', props)

    def broken(op):
        def check(x, xp):
            Z = T._encoded(seq, (x, xp))
            g = max(abs(Fraction(float(Z[0, c])) - Fraction(float(Z[1, c]))) for c in range(3))
            return g > D or (op == "<" and g >= D)
        return check

    for name in ("le", "le_smt"):
        T._judge(out[name], False, broken("<="))
        assert out[name]["status"] == "holds", out[name]
        assert out[name]["proof"]["method"] == "per-column", out[name]["proof"]
    T._judge(out["lt"], True, broken("<"))
    assert out["lt"]["status"] == "violated", out["lt"]


def test_forall_columns_maximize_says_there_is_no_maximum_without_every_columns_bound(tmp_path, monkeypatch):
    """maximize over the columns: a column without its certified bound (its run made unknown here) leaves no
    maximum; the verdict says so in its reason and in its notes (printed under it), and gives no bound."""
    from fairspec import pipeline
    from fairspec.kinds import logit_column
    from fairspec.report import verdict_notes
    from fairspec.verdict import unknown

    _save(tmp_path, 3, 4)
    real = logit_column.run_logit_column

    def one_unbounded(prop, *a):
        return unknown(prop, "made undecided by the test") if prop.cls == 1 else real(prop, *a)

    monkeypatch.setattr(logit_column, "run_logit_column", one_unbounded)
    (tmp_path / "s.fair").write_text(_SPEC.replace("INDEX", "") + _FORALL.format(
        i=0, mode="maximize", op="<=", eps="100", backend="milp"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (v,) = pipeline.check(tmp_path / "s.fair").verdicts
    said = "no maximum over the columns: column 1 has no certified bound"
    assert v.status == "unknown" and v.bound is None, (v.status, v.bound, v.reason)
    assert said in v.reason and said in verdict_notes(v), (v.reason, verdict_notes(v))
    assert [p["status"] for p in v.details["per_column"]] == ["holds", "unknown", "holds"]


@pytest.mark.parametrize("seed", [10, 11])
def test_pre_condition_and_tolerance_against_brute_force(tmp_path, monkeypatch, seed):
    """A further require (x.a >= 2) and a tolerance (|x.b - x'.b| <= 1) on the column's logit post: eps the largest
    difference over the admissible pairs holds with `<=` and is violated with `<` (milp, smt; prove, maximize)."""
    from fairspec import pipeline

    c = seed % 3
    layers = _save(tmp_path, 3, seed)
    pts = [(a, b, s) for a in range(4) for b in range(5) for s in range(2)]
    X = np.array([[a, b, s == 0, s == 1] for a, b, s in pts], dtype=np.float32)
    for W, b, relu in layers:
        X = X @ W.T.astype(np.float32) + b.astype(np.float32)
        X = np.maximum(X, 0) if relu else X
    D = max(abs(Fraction(float(X[i, c])) - Fraction(float(X[j, c])))
            for i, p in enumerate(pts) for j, q in enumerate(pts) if p[0] == q[0] >= 2 and abs(p[1] - q[1]) <= 1)
    cases = [(backend, op, mode) for backend in ("milp", "smt") for op in ("<=", "<") for mode in ("prove", "maximize")]
    txt = _SPEC.replace("INDEX", "") + "".join(
        _PROP.format(i=i, mode=mode, c=c, op=op, eps=_fmt(D), backend=backend).replace(
            "  mode", "  require |x.b - x'.b| <= 1\n  require x.a >= 2\n  mode")
        for i, (backend, op, mode) in enumerate(cases))
    (tmp_path / "s.fair").write_text(txt)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    assert D > 0
    want = ["holds" if op == "<=" else "violated" for _, op, _ in cases]
    assert [got[f"P{i}"].status for i in range(len(cases))] == want, [v.reason for v in got.values()]



def _final_relu_net(seed, K):
    """Dyadic (1/64) weights, a Gemm then a Relu as the graph's LAST node (seeds 52, 53: the protected feature
    moves the clipped column)."""
    rng = np.random.default_rng(seed)
    W1 = rng.integers(-300, 300, (6, 4)) / 64.0
    b1 = rng.integers(-3000, 3000, 6) / 64.0
    W2 = rng.integers(-200, 200, (K, 6)) / 64.0
    b2 = rng.integers(0, 200, K) / 64.0
    return [(W1, b1, True), (W2, b2, True)]


@pytest.mark.parametrize("K,c,seed,post", [(3, 1, 52, "column"), (1, 1, 53, "column"), (1, 0, 53, "column"),
                                           (1, None, 53, "logit")])
def test_final_relu_at_the_tie_against_brute_force(tmp_path, monkeypatch, K, c, seed, post):
    """A network whose LAST layer has a ReLU, eps exactly the largest reachable difference D (float32 exact) over a
    domain too large to enumerate: the MILP's answer lies within the runtime's rounding of eps, so the tie refinement
    decides it, its box bounds reading the output as a layer of its own (certify.boxes.linear_output): `<=` proved,
    `<` violated (it said "internal error ... it must have no ReLU"); one class's column and the binary
    `logit(m(x))` post (K = 1)."""
    onnx = pytest.importorskip("onnx")
    from fairspec import pipeline

    layers = _final_relu_net(seed, K)
    col = 1 if c is None else c
    P = np.array([[a, b] for a in range(4001) for b in range(5)], dtype=np.float32)
    ones, zero = np.ones((len(P), 1), np.float32), np.zeros((len(P), 1), np.float32)
    Y = []
    for X in (np.hstack([P, ones, zero]), np.hstack([P, zero, ones])):
        for W, b, relu in layers:
            X = X @ W.T.astype(np.float32) + b.astype(np.float32)
            X = np.maximum(X, 0) if relu else X
        Y.append(X.astype(np.float64))
    s = [y[:, col] if K > 1 else (y[:, 0] if col == 1 else -y[:, 0]) for y in Y]
    D = float(np.max(np.abs(s[0] - s[1])))
    assert D > 0 and Fraction(_fmt(D)) == Fraction(D)
    m = mlp_model(layers, None, batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    term = "logit(m(x)) - logit(m(x'))" if post == "logit" else f"logit(m(x), {c}) - logit(m(x'), {c})"
    cases = [("milp", "<="), ("milp", "<"), ("smt", "<=")]
    txt = _SPEC.replace("INDEX", "").replace("[0, 3]", "[0, 4000]")
    for i, (backend, op) in enumerate(cases):
        txt += _PROP.format(i=i, mode="prove", c=c, op=op, eps=_fmt(D), backend=backend).replace(
            f"logit(m(x), {c}) - logit(m(x'), {c})", term)
    (tmp_path / "s.fair").write_text(txt)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    for i, (backend, op) in enumerate(cases):
        v = got[f"P{i}"]
        assert "internal error" not in v.reason, v.reason
        assert v.status == ("holds" if op == "<=" else "violated"), (backend, op, D, v.status, v.reason)
        if v.status == "holds":
            assert v.how == "proved" and v.proof is not None


@pytest.mark.parametrize("pre", ["class(m(x)) == 1", "class(m(x')) == 0", "prob(m(x), 0) >= 0.25",
                                 "logit(m(x), 2) >= -5"])
def test_a_pre_condition_on_the_model_outputs_is_refused(tmp_path, monkeypatch, pre):
    """The cut view (LogitColumn) answers every request for the model: a further pre-condition reading the model's
    outputs would read column c alone (z_c > 0 for class(m(x)) == 1), not the K columns it names. Such a property is
    refused on the cut path, saying why (it went to the pair path, whose pre-condition search read the view)."""
    from fairspec import pipeline

    _save(tmp_path, 3, 4)
    (tmp_path / "s.fair").write_text(_SPEC.replace("INDEX", "") + _PROP.format(
        i=0, mode="prove", c=1, op="<=", eps="0.5", backend="milp").replace("  mode", f"  require {pre}\n  mode"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (v,) = pipeline.check(tmp_path / "s.fair").verdicts
    assert v.status == "unknown" and "a pre-condition reads model 'm''s outputs" in v.reason, v.reason
    assert "cut to its logit column 1" in v.reason and "internal error" not in v.reason


def test_a_pre_condition_on_the_outputs_still_holds_on_its_relaxation(tmp_path, monkeypatch):
    """Refused on the cut path, such a property is still decided on its relaxation (kinds/pre_relax, on the model
    itself: the pre-condition's conjunct dropped, a superset of its pairs) where that holds: eps the largest
    difference over every pair is proved."""
    from fairspec import pipeline

    D = _truth(_save(tmp_path, 3, 4), 1)
    (tmp_path / "s.fair").write_text(_SPEC.replace("INDEX", "") + _PROP.format(
        i=0, mode="prove", c=1, op="<=", eps=_fmt(D), backend="milp").replace("  mode", "  require class(m(x)) == 1\n  mode"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (v,) = pipeline.check(tmp_path / "s.fair").verdicts
    assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
    assert "superset of the pairs meeting the pre-condition" in v.reason
