"""Individual fairness of a ReLU network, end to end: falsify first, then prove.

1. Counterfactual flips of every data row (the `data` backend's search): most
   violations of real networks fall out here in milliseconds.
2. The pair problem in feature space (scaling folded into the first layer),
   decided by the MILP (HiGHS/SCIP) or SMT (z3) backend: `prove` by default,
   `find` or `maximize` with `mode = ...`.
3. Every witness is mapped back to model-input space and replayed on the real
   loaded model by its independent evaluator before it is reported.
"""

from __future__ import annotations

import time

import numpy as np

from fairspec import ir
from fairspec.verdict import Unsupported as NotLowered, Verdict, Witness, unknown


def is_tree_model(ctx, model_name: str) -> bool:
    """Is the loaded model a tree model the tree backends read (without converting it)?"""
    from fairspec.models.trees import SKLEARN_TREES

    try:
        model = ctx.model(model_name)
    except Exception:  # noqa: BLE001 - a load error is reported by the path that needs the model
        return False
    fmt = getattr(model, "format", "")
    return fmt in ("xgboost", "lightgbm") or (fmt == "sklearn" and type(model.raw).__name__ in SKLEARN_TREES)


def network_of(ctx, model_name: str):
    """The loaded model as the piecewise-linear network of its decision (raises UnsupportedModel):
    the same output column and rule as the loaded model's ``decide`` (fairspec.models.readout)."""
    return ctx.model(model_name).piecewise_linear()


def _small_domain(prop: ir.IndividualFairness, ctx, backend: str, t0: float) -> Verdict | None:
    """Small discrete domains of a network: every pair on the model's runtime, decided by certify
    (fairspec.kinds.pair_enumeration); None when the domain is not small (or the model is a tree
    ensemble, which the tree backends decide)."""
    from fairspec.kinds.pair_enumeration import decide_small
    from fairspec.models.network import UnsupportedModel
    from fairspec.planning import setting

    try:
        if ctx.model(prop.model).tree_ensemble() is not None:
            return None
    except UnsupportedModel:
        return None
    return decide_small(prop, ctx, backend, setting(prop, "mode", backend), t0)


def run_pair(prop: ir.IndividualFairness, ctx, progress, backend: str) -> Verdict:
    t0 = time.perf_counter()
    from fairspec.backends.data.flips import replayer_name, run_flips
    from fairspec.planning import setting

    if is_tree_model(ctx, prop.model):
        # a tree model on a small domain: every pair on the library's own runtime (kinds/tree_pairs)
        from fairspec.kinds.tree_pairs import decide_by_enumeration

        try:
            v = decide_by_enumeration(prop, ctx, setting(prop, "mode", backend), backend, t0)
        except NotLowered as e:
            return unknown(prop, str(e), backend=backend, seconds=time.perf_counter() - t0)
        if v is not None:
            return v
    small = _small_domain(prop, ctx, backend, t0)
    if small is not None:
        return small
    if ctx.spec.feature_set(prop.features).data is not None and not prop.pre and \
            setting(prop, "mode", backend) != "maximize":   # a flip on data is no maximum
        first = run_flips(prop, ctx, progress)
        if first.status == "violated":
            return Verdict(**{**first.__dict__, "backend": f"{backend} (falsified on data first)",
                              "seconds": time.perf_counter() - t0})
    from fairspec.kinds.lowering import Unsupported, fold_scaling, lower_pair
    from fairspec.backends.pair import PairProblem, check_witness
    from fairspec.models.network import UnsupportedModel

    fs = ctx.spec.feature_set(prop.features)
    try:
        trees = ctx.model(prop.model).tree_ensemble()
        net = trees if trees is not None else network_of(ctx, prop.model)  # a rule model: UnsupportedModel
        enc = ctx.encoding(prop.model)
        low = lower_pair(prop, fs, enc)
        if trees is not None:
            # a tree ensemble: the scaling folded into every split, pruned along its paths
            from fairspec.backends.trees.space import fold

            folded = fold(trees, low.lo, low.hi, low.integer, low.scale, low.shift)
    except UnsupportedModel as e:
        return unknown(prop, f"the {backend} backend cannot encode this model: {e}", backend=backend,
                       seconds=time.perf_counter() - t0)
    except Unsupported as e:
        return unknown(prop, str(e), backend=backend, seconds=time.perf_counter() - t0)
    relaxed = low.relaxed
    if trees is not None:
        from fairspec.kinds.tree_pairs import tree_relaxed

        relaxed = tree_relaxed(prop, enc, low)     # `<` on integral inputs as the spec writes it
    problem = PairProblem(folded if trees is not None else fold_scaling(net, low), low.lo, low.hi, low.integer,
                          low.onehot_groups, low.free, None, relaxed, prop.post, prop.eps)

    mode = setting(prop, "mode", backend)
    limit = ctx.remaining(setting(prop, "timeout", backend))  # the budget covers the preparation above too
    kw = {}
    if trees is not None:
        from fairspec.backends.trees import modes as tree_modes

        engine = "z3" if backend == "smt" else setting(prop, "engine", backend)

        class engine_mod:  # noqa: N801 - the tree engines behind the milp/smt modes' interface
            find = staticmethod(lambda pr, **kw: tree_modes.find(pr, engine=engine, **kw))
            prove = staticmethod(lambda pr, **kw: tree_modes.prove(pr, engine=engine, **kw))
            maximize = staticmethod(lambda pr, **kw: tree_modes.maximize(pr, engine=engine, **kw))
    elif backend == "smt":
        from fairspec.backends import smt as engine_mod
        from fairspec.backends.smt.runtime import runtime_of

        # the certified SMT modes prove claims about the model's runtime (its float32 / float64
        # arithmetic): they need its own layers, readout and encoding
        rt = runtime_of(ctx.model(prop.model), enc)
        if rt is None:
            return unknown(prop, "the smt backend cannot bound this model's runtime arithmetic (not a plain "
                                 "Gemm/MatMul+Add/ReLU chain with a logit, margin, sigmoid or 2-class softmax "
                                 "readout), so it cannot prove anything about it", backend=backend,
                           seconds=time.perf_counter() - t0)
        kw.update(runtime=rt, eps_strict=prop.eps_strict,
                  relaxed_strict=tuple(c.offset for c in enc.columns if c.feature in prop.relaxed_strict))
    else:
        from fairspec.backends import milp as engine_mod

        kw["engine"] = setting(prop, "engine", backend)
    task = progress.add_task(f"{prop.name}: {backend} {mode}", total=None) if progress else None
    if prop.options.partitions and prop.options.partitions > 1:
        # input-space partitioning: each box gets its own budget; the coverage says what was decided
        from fairspec.backends.milp.partition import solve_partitioned, split_widest

        parts = split_widest(problem, prop.options.partitions)
        res = solve_partitioned(problem, mode, parts, backend=backend,
                                time_per_part=setting(prop, "part_timeout", backend) or limit, time_limit=limit,
                                stop_on_violation=(mode == "find"), **kw,
                                # smt: in this process, where the loaded model replays pairs exactly
                                **({"executor": _serial()} if backend == "smt" else {}))
    else:
        res = getattr(engine_mod, mode)(problem, time_limit=limit, **kw)
    if progress:
        progress.remove_task(task)
    seconds = time.perf_counter() - t0
    details = {"engine": getattr(res, "engine", backend), "mode": mode, "solver_seconds": round(res.seconds, 4)}
    if getattr(res, "coverage", None) is not None:
        cov = res.coverage
        details["coverage"] = {"partitions": cov.partitions, "proved": cov.proved, "refuted": cov.refuted,
                               "undecided": cov.undecided, "volume_proved": float(cov.volume_proved),
                               "volume_refuted": float(cov.volume_refuted),
                               "volume_undecided": float(cov.volume_undecided)}
    if trees is not None:
        # a tree model's answer: witnesses re-checked exactly on the library, holds only when certified
        from fairspec.kinds.tree_pairs import solver_verdict

        return solver_verdict(prop, ctx, res, backend, seconds, details)
    if res.status == "violated" and res.witness is not None:
        model = ctx.model(prop.model)
        x = low.to_input(res.witness.x)
        xp = low.to_input(res.witness.x_prime)

        def replay(V):
            return model.replay(np.stack([low.to_input(v) for v in V]))

        # the smt backend: replayed on the runtime exactly, with the spec's strictness (a partition's
        # worker only emulated the runtime)
        if backend == "smt":
            from fairspec.backends.smt.exact import replays

            good = replays(problem, kw["runtime"], res.witness, kw["eps_strict"], kw["relaxed_strict"])
        else:
            good = check_witness(problem, res.witness.x, res.witness.x_prime, replay, model.score_kind, tol=1e-6)
        if not good:
            return unknown(prop, f"the {backend} witness did not reproduce on the real model (numerical tolerance); "
                                 "not reported as a violation", backend=backend, seconds=seconds, details=details)
        from fairspec.runtime.encoding import decode_row

        out = model.replay(np.stack([x, xp]))
        w = Witness(tuple(map(float, x)), tuple(map(float, xp)), decode_row(enc, fs, x), decode_row(enc, fs, xp),
                    (float(out[0]), float(out[1])), replayed_by=replayer_name(model))
        return Verdict(prop.name, prop.kind, "violated", value=_value(backend, mode, res), witness=w, backend=backend,
                       seconds=seconds, details=details, reason=f"the {backend} solver found a counterexample pair",
                       **_interval(backend, mode, res))
    if res.status == "holds" and res.how == "proved":
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=_value(backend, mode, res), backend=backend,
                       seconds=seconds, details=details, reason=res.reason or None, **_interval(backend, mode, res))
    return unknown(prop, res.reason or f"the {backend} solver did not decide the property", backend=backend,
                   seconds=seconds, value=_value(backend, mode, res), details=details, **_interval(backend, mode, res))


def _value(backend, mode, res):
    """maximize under smt reports a value only with its certified interval (``bound``): a value
    alone would claim to be the maximum."""
    if backend == "smt" and mode == "maximize" and res.bound is None:
        return None
    return res.value


def _serial():
    from fairspec.backends.executor import SerialExecutor

    return SerialExecutor()


def _interval(backend, mode, res) -> dict:
    """The smt backend's certificate and maximize interval: ``proof`` (certify's, for holds) and
    ``bound`` = [best value replayed on the runtime, certified upper bound]."""
    if backend != "smt":
        return {}
    out = {}
    if res.status == "holds" and getattr(res, "proof", None) is not None:
        out["proof"] = res.proof
    if mode == "maximize" and res.bound is not None:
        out["bound"] = (res.value if res.value is not None else float("-inf"), res.bound)
    return out


def run_milp(prop, ctx, progress=None) -> Verdict:
    return run_pair(prop, ctx, progress, "milp")


def run_smt(prop, ctx, progress=None) -> Verdict:
    return run_pair(prop, ctx, progress, "smt")
