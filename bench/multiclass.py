"""Issue 25 targets: individual fairness of a multiclass network and the largest counterfactual change
of a regression network, both ReLU networks with two hidden layers of 32 on German credit.

* ``class``: a K = 3 network ("credit grade": 0 good risk with a loan of at most 12 months, 1 good risk
  with a longer loan, 2 bad risk) -- decided (proved with a certify Proof, or refuted with a witness
  replayed on onnxruntime by the exact argmax rule) in under 60 s (HiGHS and z3).
* ``class_prob``: ``|prob(m(x), c) - prob(m(x'), c)| <= eps`` on the same K = 3 network (and on copies that
  ignore sex / read it weakly), decided as fairspec does beyond enumeration: the attack on the runtime, then
  certify's softmax branch and bound (proved, violated, or [best replayed, certified bound]).
* ``value``: a regression network (credit amount in thousands) -- maximize ``|v(x) - v(x')|`` as
  [best replayed, certified bound] with ``bound - best <= 1%`` of the output range (the range of the
  network's predictions on the data) in under 60 s.

The pair: sex (female / male, code 0 / 1) differs, every other input equal, the domain every
integral value between the data's minimum and maximum of each input (20 inputs: 7 numbers, 13
categories as codes). Both networks are trained here with torch (fixed seed, 200 epochs, Adam),
the min-max scaling folded into the first layer, the weights cast to float32, and exported to ONNX
(onnx.helper, Gemm/Relu) under a temporary folder; the ONNX file is the runtime (onnxruntime, one
thread). Data: ../shared/data/german/german.data (read with bench/trees.py's loader).

    python bench/multiclass.py [--seconds 60] [--engines highs,z3] [--only class,class_prob,value] [--out F.json]

(value: HiGHS only; z3's bisection is far slower on this shape)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent / "tests"))             # tests/onnx_nets.py


def _train(X, y, out_dim: int, regression: bool, seed: int = 0, epochs: int = 200):
    import torch

    torch.manual_seed(seed)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    Xs = torch.tensor((X - lo) / span, dtype=torch.float32)
    net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                              torch.nn.ReLU(), torch.nn.Linear(32, out_dim))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    if regression:
        Y = torch.tensor(y, dtype=torch.float32).reshape(-1, 1)
        loss_fn = torch.nn.MSELoss()
    else:
        Y = torch.tensor(y, dtype=torch.long)
        loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        opt.zero_grad()
        loss = loss_fn(net(Xs), Y)
        loss.backward()
        opt.step()
    lin = [m for m in net if isinstance(m, torch.nn.Linear)]
    layers = []
    for k, m in enumerate(lin):
        W = m.weight.detach().numpy().astype(np.float64)
        b = m.bias.detach().numpy().astype(np.float64)
        if k == 0:                                     # fold (x - lo) / span into the first layer
            b = b - (W * (lo / span)).sum(axis=1)
            W = W / span
        layers.append((W.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64),
                       k < len(lin) - 1))
    return layers, float(loss.item())


def _onnx(layers, path: Path):
    import onnx
    from onnx_nets import mlp_model

    onnx.save(mlp_model(layers, "Identity", "y"), str(path))


def _session(path: Path):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return lambda X: s.run(None, {"x": np.asarray(X, dtype=np.float32)})[0].astype(np.float64)


def _problem(net, X, names, sex):
    from fairspec.backends.pair import PairProblem

    lo, hi = X.min(axis=0), X.max(axis=0)
    return PairProblem(net, lo, hi, np.ones(X.shape[1], bool), free=(sex,))


def _softmax(Y):
    z = Y - Y.max(axis=1, keepdims=True)           # fairspec's readout of a logit output, float64
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _class_prob_row(layers, run, pre, sex, c, eps, mode, seconds, label=""):
    """``|prob(m(x), c) - prob(m(x'), c)| <= eps`` (c None: every class) the way fairspec decides it beyond
    enumeration (fairspec.kinds.class_prob): the attack on the runtime, then certify's softmax branch and
    bound; a pair is replayed on onnxruntime (fairspec's float64 softmax of its float32 logits)."""
    from fairspec.certify.class_prob import ClassProbQuery, bound_class_prob
    from fairspec.certify.enumerate import compare_exact
    from fairspec.kinds.class_prob import _attack

    t0 = time.perf_counter()
    deadline = time.monotonic() + seconds
    evaluate = lambda V: _softmax(run(V))                      # noqa: E731
    C = np.array([[0.0], [1.0]])
    M = np.array([[False, True], [True, False]])
    classes = [c] if c is not None else [0, 1, 2]
    best = _attack(pre, C, (sex,), (), evaluate, classes, M, np.random.default_rng(0), min(0.5, 0.05 * seconds),
                   stop_above=None if mode == "maximize" else float(eps))
    row = {"target": f"prob K=3{label} class {'every' if c is None else c} eps {eps}", "engine": "softmax-bab",
           "mode": mode}
    found, bounds, value, nodes = None, [], -math.inf, 0
    for cc in classes:
        v, x, xp = best[cc]
        P = evaluate(np.vstack([x, xp]))[:, cc]
        value = max(value, float(abs(P[0] - P[1])))
        if mode != "maximize" and not compare_exact(P[:1], "<=", eps, minus=P[1:])[0]:
            found = (cc, P)
            break
    status = "violated" if found else None
    if found is None:
        status = "proved"
        for k, cc in enumerate(classes):
            dl = time.monotonic() + max(0.0, deadline - time.monotonic()) / (len(classes) - k)
            q = ClassProbQuery(layers, cc, None, "float32", "none", pre.lo, pre.hi, pre.integer, (), (sex,), C, M,
                               (), eps, "<=")
            r = bound_class_prob(q, evaluate, mode=mode, deadline=dl)
            nodes += r.stats.get("nodes", 0)
            bounds.append(r.bound if r.bound is not None else math.inf)
            if r.value is not None:
                value = max(value, r.value)
            if r.status == "violated":
                status = "violated"
                break
            if r.status != "proved":
                status = "unknown"
    row.update({"status": status, "seconds": round(time.perf_counter() - t0, 2), "nodes": nodes,
                "best_replayed": value, "bound": max(bounds) if bounds else None,
                "decided": status in ("proved", "violated")})
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--engines", default="highs,z3")
    ap.add_argument("--shared", default="/work/shared" if Path("/work/shared").is_dir() else str(HERE.parent.parent / "shared"))
    ap.add_argument("--out", default="", help="write the rows as JSON here (and a table next to it, .md)")
    ap.add_argument("--only", default="class,class_prob,value", help="class | class_prob | value, comma-separated")
    a = ap.parse_args(argv)
    only = set(a.only.split(","))
    from trees import load

    from fairspec.backends import milp
    from fairspec.backends.pair.certify import Runtime
    from fairspec.backends.pair.multiclass import ClassProblem, class_net, class_of, solve_class
    from fairspec.models.network import Layer, PLNet

    d = load("german", Path(a.shared))
    X, names = d["X"], d["names"]
    sex = names.index("sex")
    dur = X[:, names.index("duration")]
    grade = np.where(d["y"] == 0, 2, np.where(dur <= 12, 0, 1))
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="fairspec-multiclass-"))
    # ---- multiclass -------------------------------------------------------------------------
    layers, loss = _train(X, grade, 3, False)
    path = tmp / "grades3.onnx"
    _onnx(layers, path)
    run = _session(path)
    net = PLNet(tuple(Layer(W, b, r) for W, b, r in layers))
    acc = float(np.mean(class_of(run(X)) == grade))
    print(f"K=3 network {X.shape[1]}-32-32-3, train loss {loss:.3f}, accuracy {acc:.3f}, classes "
          f"{np.bincount(grade).tolist()}  ({path})")
    pre = _problem(class_net(net, 0), X, names, sex)

    def replay(x, xp):
        from fairspec.backends.pair import precondition_holds

        ok, _ = precondition_holds(pre, x, xp, tol=0.0)
        k = class_of(run(np.vstack([x, xp])))
        return bool(ok and k[0] != k[1])

    rt = Runtime(layers, None, ("argmax", 0), "float32", replay=replay)
    cp = ClassProblem(net, pre, "class", runtime=rt, outputs=run)
    for eng in (a.engines.split(",") if "class" in only else []):
        for mode in ("find", "prove"):
            t0 = time.perf_counter()
            r = solve_class(cp, mode, eng, time_limit=a.seconds)
            secs = time.perf_counter() - t0
            replayed = r.witness is not None and replay(np.array(r.witness.x), np.array(r.witness.x_prime))
            row = {"target": "class K=3", "engine": eng, "mode": mode, "status": r.status,
                   "proof": r.proof.summary if r.proof is not None else None, "witness_replayed": replayed,
                   "seconds": round(secs, 2), "reason": r.reason[:200], "decided": r.status != "unknown"}
            if r.witness is not None:
                k = class_of(run(np.array([r.witness.x, r.witness.x_prime])))
                row["classes"] = [int(k[0]), int(k[1])]
            rows.append(row)
            print(json.dumps(row))
    # ---- class probabilities (softmax, K = 3) ------------------------------------------------
    # the trained network, then the same network reading sex with its first-layer weights times 0 (it
    # ignores sex) and times 0.01 (it reads sex weakly)
    variants = [("", layers, run)]
    for s_ in (0.0, 0.01):
        L = [(W.copy(), b, r) for W, b, r in layers]
        L[0][0][:, sex] = (L[0][0][:, sex] * s_).astype(np.float32)
        p_ = tmp / f"grades3_sex{s_:g}.onnx"
        _onnx(L, p_)
        variants.append((f" (sex weights x{s_:g})", L, _session(p_)))
    cases = {"": ((2, "0.05", "prove"), (None, "0.05", "prove"), (2, "0.05", "maximize")),
             " (sex weights x0)": ((2, "0.05", "prove"), (None, "0.05", "prove"), (2, "0.05", "maximize")),
             " (sex weights x0.01)": ((2, "0.05", "prove"), (2, "0.1", "prove"), (2, "0.1", "maximize"))}
    for label, L, run_v in (variants if "class_prob" in only else []):
        for c, eps, mode in cases[label]:
            rows.append(_class_prob_row(L, run_v, pre, sex, c, eps, mode, a.seconds, label))
            print(json.dumps(rows[-1]))
    # ---- regression -------------------------------------------------------------------------
    amount = X[:, names.index("amount")] / 1000.0
    keep = [i for i in range(X.shape[1]) if names[i] != "amount"]
    Xr = X[:, keep]
    rnames = [names[i] for i in keep]
    layers_r, loss_r = _train(Xr, amount, 1, True)
    path_r = tmp / "amount.onnx"
    _onnx(layers_r, path_r)
    run_r = _session(path_r)
    net_r = PLNet(tuple(Layer(W, b, r) for W, b, r in layers_r))
    pred = run_r(Xr).reshape(-1)
    out_range = float(pred.max() - pred.min())
    print(f"regression network {Xr.shape[1]}-32-32-1 (credit amount, thousands), train MSE {loss_r:.3f}, "
          f"prediction range {out_range:.4f} ({path_r})")
    from fairspec.backends.pair.multiclass import value_problem

    pr = value_problem(_problem(net_r, Xr, rnames, rnames.index("sex")), 0.0)
    pr = pr.__class__(**{**{f: getattr(pr, f) for f in pr.__dataclass_fields__},
                         "runtime": Runtime(layers_r, None, ("logit", 0), "float32")})
    for eng in ([e for e in a.engines.split(",") if e != "z3"] if "value" in only else []):
        t0 = time.perf_counter()
        if eng == "z3":
            from fairspec.backends.smt import exact as smt_exact
            from fairspec.backends.smt.exact import Runtime as SmtRuntime

            srt = SmtRuntime(layers_r, None, ("logit", 0), "float32", lambda V: run_r(V).reshape(-1), "logit", "onnx")
            r = smt_exact.maximize(pr, time_limit=a.seconds, runtime=srt)
        else:
            # the time limit covers the MILP (a quarter) and the certified branch and bound (the rest);
            # 0.95 leaves room for the set-up (attack, runtime error bound)
            r = milp.maximize(pr, engine=eng, time_limit=0.95 * a.seconds)
        secs = time.perf_counter() - t0
        best = None
        if r.best is not None or r.witness is not None:
            w = r.witness or r.best
            v = run_r(np.array([w.x, w.x_prime])).reshape(-1)
            best = float(abs(v[0] - v[1]))
        gap = (r.bound - best) if (best is not None and r.bound is not None and math.isfinite(r.bound)) else None
        row = {"target": "value maximize", "engine": eng, "status": r.status, "value": r.value,
               "best_replayed": best, "bound": r.bound, "gap": gap, "range": out_range,
               "gap_share": (gap / out_range) if gap is not None else None, "seconds": round(secs, 2),
               "met": gap is not None and gap <= 0.01 * out_range and secs < 60, "reason": r.reason[:200]}
        rows.append(row)
        print(json.dumps(row))
    lines = [f"| target | engine | mode | status | seconds | detail |", "|---|---|---|---|---:|---|"]
    for r in rows:
        det = r.get("proof") or (f"classes {r['classes']}, replayed on onnxruntime: {r['witness_replayed']}"
                                 if "classes" in r else r.get("reason", ""))
        if r["target"].startswith("prob"):
            det = (f"[best replayed {r['best_replayed']:.4g}, certified bound "
                   f"{'-' if r['bound'] is None else format(r['bound'], '.4g')}], {r['nodes']} nodes")
        if r["target"].startswith("value"):
            g = r["gap_share"]
            det = (f"[{r['best_replayed']:.4g}, {r['bound']:.4g}], bound - best = "
                   f"{'-' if g is None else f'{100 * g:.1f}%'} of the range {r['range']:.4g}")
        lines.append(f"| {r['target']} | {r['engine']} | {r.get('mode', 'maximize')} | {r['status']} | "
                     f"{r['seconds']:.2f} | {det} |")
    load = os.getloadavg()[0]
    print()
    print("\n".join(lines))
    print(f"load average {load:.1f} on {os.cpu_count()} cores")
    if a.out:
        Path(a.out).write_text(json.dumps({"rows": rows, "load": load}, indent=1) + "\n")
        Path(a.out).with_suffix(".md").write_text(
            "# bench/multiclass.py (issue 25 targets)\n\n" + "\n".join(lines) + f"\n\nload average {load:.1f} on "
            f"{os.cpu_count()} cores (shared with other jobs); time limit {a.seconds:g} s per run\n")


if __name__ == "__main__":
    main()
