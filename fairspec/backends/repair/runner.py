"""`repair NAME for MODEL { goal ... bound ... write ... }`: FairRepair on the spec's model and data.

The repaired model is written (skops, atomically) to the `write` path, loaded back from disk and
the goal decided again on the same rows -- every pairwise passing-rate ratio and the semantic
difference against the original model -- before the verdict is `holds`.
"""

from __future__ import annotations

import pathlib
import tempfile
import time

import numpy as np

from fairspec import ir
from fairspec.verdict import Verdict, unknown
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly
from fairspec.syntax.literals import shown, shown_scaled  # numbers on their side of the goal

BACKEND = "repair"


def group_boxes(groups: ir.Groups, fs: ir.FeatureSet, enc: ir.Encoding) -> tuple[list[dict], str | None]:
    """The box of each (compound) group in the model's input space, in the order of
    ``fairspec.backends.data.groups.assign``; or a reason why a group cannot be isolated by tests."""
    boxes = [{}]
    for atom in groups.atoms:
        if atom.feature is None:
            return [], (f"repair splits path hypercubes on the model's input columns; the derived group "
                        f"'{atom.name}' is not one of them (use a protected feature's values as groups)")
        col = enc.column(atom.feature)
        if col is None:
            return [], f"the model does not read the sensitive feature '{atom.feature}'"
        f = fs.get(atom.feature)
        k = len(f.values()) if f is not None else len(col.categories)
        if col.kind == "onehot":
            atom_boxes = [{col.offset + v: (0.5, np.inf)} for v in range(k)]
        else:
            idx = np.arange(k, dtype=np.float64)
            if col.kind == "code":
                enc_v = np.asarray(col.codes, dtype=np.float64)
            elif col.kind == "minmax" and col.scale is not None:
                enc_v = idx * col.scale + col.shift
            elif col.kind == "minmax":
                enc_v = (idx - col.lo) / ((col.hi - col.lo) or 1.0)
            elif col.kind == "standard":
                enc_v = (idx - col.mean) / (col.std or 1.0)
            else:
                enc_v = idx
            enc_v = enc_v.astype(np.float32).astype(np.float64)
            order = np.sort(np.unique(enc_v))
            if len(order) != len(enc_v):
                return [], f"two values of '{atom.feature}' have the same encoding, so no test separates them"
            atom_boxes = []
            for v in enc_v:
                i = int(np.searchsorted(order, v))
                lo = -np.inf if i == 0 else (order[i - 1] + v) / 2
                hi = np.inf if i == len(order) - 1 else (v + order[i + 1]) / 2
                atom_boxes.append({col.offset: (lo, hi)})
        boxes = [{**a, **b} for a in boxes for b in atom_boxes]
    return boxes, None


def write_model(est, path: str, model_path: str | None, roots, protect=()) -> None:
    """Write ``est`` with skops to ``path`` through fairspec.files.safe_write: confined to the
    project roots, atomic (a temporary file, then a rename), never the model being repaired nor
    any file of ``protect`` (every file the spec reads: ir.Spec.inputs), nor a folder or device;
    here also never through a symbolic link.  A place that cannot be written is
    one sentence naming it (ModelLoadError), and nothing half-written is left."""
    from fairspec.files import PathError, safe_write
    from fairspec.models import ModelLoadError
    from fairspec.models.sklearn_files import import_skops_io

    p = pathlib.Path(path)
    if p.is_symlink():
        raise ModelLoadError(f"cannot write the repaired model to {p}: it is a symbolic link; name the file itself", p)
    if p.suffix.lower() != ".skops":
        raise ModelLoadError(f"cannot write the repaired model to {p}: repaired models are written as skops files "
                             f"(name it *.skops)", p)
    sio = import_skops_io()
    try:
        safe_write(p, lambda tmp: sio.dump(est, tmp), roots, protect=[*([model_path] if model_path else []), *protect])
    except PathError as e:
        raise ModelLoadError(f"cannot write the repaired model: {e}", p) from None


def run_repair(prop: ir.Repair, ctx, progress=None, *, engine: str, timeout: float | None) -> Verdict:
    """FairRepair on the spec's model and data; ``engine`` and ``timeout`` are the options its runner
    (:mod:`fairspec.kinds.repair`) resolved with the planner."""
    from fairspec.backends.data.groups import assign
    from fairspec.backends.repair.core import (Problem, RepairUnsupported, model_kind, pair_ratios, passing_counts,
                                               passing_rates, repair)
    from fairspec.backends.repair.optimise import exact_ratio
    from fairspec.models import ModelLoadError, load_model

    t0 = time.perf_counter()
    spec_model = ctx.spec.model(prop.model)
    if spec_model.format != "sklearn":
        return unknown(prop, f"repair supports scikit-learn DecisionTreeClassifier and RandomForestClassifier; "
                             f"model '{prop.model}' is a {spec_model.format} model", backend=BACKEND)
    fs = ctx.spec.feature_set(prop.features)
    if fs.data is None:
        return unknown(prop, f"repair counts path probabilities on data: declare the features as "
                             f"`features {fs.name} from DATA`", backend=BACKEND)
    model = ctx.model(prop.model)
    if getattr(getattr(model, "folded", None), "keep", None) is not None:
        # its trees are read widened to the whole one-hot blocks (sklearn_widen): a repaired copy of
        # them is not the pipeline's estimator
        if getattr(model.folded, "scale", None) is not None:     # a weighted one-hot block (linear / MLP only)
            return unknown(prop, "repair does not write a pipeline whose one-hot block a transformer weight "
                                 "scales; refit it without transformer_weights to repair it", backend=BACKEND)
        return unknown(prop, "repair does not write a pipeline whose OneHotEncoder drops a category (drop=...); "
                             "refit it without drop to repair it", backend=BACKEND)
    try:
        model_kind(model.raw)
    except RepairUnsupported as e:
        return unknown(prop, str(e), backend=BACKEND)
    if getattr(model, "method", "predict_proba") != "predict_proba":
        return unknown(prop, "repair decides with predict_proba; the model declares another output", backend=BACKEND)
    rows = ctx.rows(fs.name, fs.data)
    values, n = rows.frame.values, rows.frame.n_rows
    X = ctx.model_input(prop.model, values, n)
    d0 = model.decide(X)
    group, names = assign(prop.groups, fs, values, n)
    G = len(names)
    sizes = np.bincount(group, minlength=G)
    empty = [names[g] for g in range(G) if sizes[g] == 0]
    if empty:
        return unknown(prop, f"group {', '.join(empty)} has no rows in {fs.data}, so its passing rate is undefined",
                       backend=BACKEND, details={"empty_groups": empty})
    boxes, why = group_boxes(prop.groups, fs, ctx.encoding(prop.model))
    if why:
        return unknown(prop, why, backend=BACKEND)
    strict = prop.strict
    solver = engine
    pb = Problem(X, group, names, boxes, prop.threshold, prop.alpha, strict=bool(strict),
                 positive=int(model.index if model.index is not None else 1), solver=str(solver),
                 time_limit=timeout)
    task = progress.add_task(f"{prop.name}: repair", total=None) if progress else None

    def say(msg):
        if progress:
            progress.update(task, description=f"{prop.name}: {msg}")

    try:
        out = repair(model.raw, pb, progress=say)
    finally:
        if progress:
            progress.remove_task(task)
    if not np.array_equal(out.decisions if out.decisions is not None else d0, d0) and out.status == "met":
        raise RuntimeError("the repair core and the loaded model disagree on the original decisions")
    before = passing_rates(d0, group, G)
    y = rows.labels
    details = {
        "groups_label": prop.groups.label, "rows": int(n), "data": fs.data, "c": prop.threshold, "alpha": prop.alpha,
        "groups": [{"group": names[g], "rows": int(sizes[g]), "passing_rate_before": _r(before[g])} for g in range(G)],
        "pairs_before": _pairs(pair_ratios(d0, group, names)),
        "minimal": _r(out.minimal), "accuracy_before": _acc(d0, y),
        "solver": out.solver or solver, "solver_seconds": round(out.solver_seconds, 4),
        "model_kind": type(model.raw).__name__,
    }
    op = ">" if strict else ">="
    exact_before = exact_ratio(*passing_counts(d0, group, G))
    ratio_before = _float(exact_before)
    if out.status == "met":
        details.update(written=None, repaired=False)
        proof = _goal_proof(exact_before, op, prop, n, "the model as loaded")
        if proof is None:
            return unknown(prop, f"the passing-rate ratio on {n} rows is {exact_before} exactly, not "
                                 f"{op} {_spec_number(prop.threshold)}, though the repair core found the goal met (a fairspec "
                                 f"bug)", backend=BACKEND, details=details, seconds=time.perf_counter() - t0)
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=_r(ratio_before), backend=BACKEND,
                       proof=proof,
                       reason=f"the model already meets passing-rate ratio {op} {_spec_number(prop.threshold)} on {n} rows of "
                              f"{fs.data}; nothing was repaired or written", details=details,
                       seconds=time.perf_counter() - t0)
    details.update(stage=out.stage, paths_flipped=out.paths_flipped, paths_refined=out.paths_refined,
                   leaves_patched=out.leaves_patched, paths_optimal=out.optimal, paths_greedy=out.greedy)
    if out.status in ("timeout", "unknown"):
        return unknown(prop, out.reason, backend=BACKEND, details=details, seconds=time.perf_counter() - t0)
    if out.status == "unreachable":
        details.update(best_ratio=_r(out.best_ratio), needed=_r(out.needed) if out.needed is not None else None)
        return Verdict(prop.name, prop.kind, "violated", value=_r(ratio_before), backend=BACKEND, reason=out.reason,
                       details=details, seconds=time.perf_counter() - t0)
    # write, load back from disk, decide the goal again on the same rows
    repaired = out.estimator
    if getattr(model, "pipeline", None) is not None and not model.unfolded:
        repaired = _with_final(model.pipeline, out.estimator)    # the pipeline as saved, its estimator repaired
    if prop.write is not None:
        try:
            write_model(repaired, prop.write, spec_model.path, ctx.roots, protect=ctx.spec.inputs)
        except ModelLoadError as e:  # only this property is lost: the other verdicts stand
            return unknown(prop, f"the repair was found but the repaired model could not be written: {e}",
                           backend=BACKEND, details=details, seconds=time.perf_counter() - t0)
        back = load_model("sklearn", prop.write, index=model.index)
        where = prop.write
    else:
        back = _round_trip(repaired, model.index)
        where = None
    d1 = back.decide(X)
    after = passing_rates(d1, group, G)
    changed = int((d1 != d0).sum())
    sd = changed / n
    exact_after = exact_ratio(*passing_counts(d1, group, G))
    ratio_after = _float(exact_after)
    proof = _goal_proof(exact_after, op, prop, n, "the repaired model loaded back")
    ok_ratio = proof is not None          # the ratio of exact counts against c as written, > or >= as written
    # the bound in whole rows, as the solvers were given it (a float alpha x minimal could disagree at a tie)
    ok_sd = changed <= out.budget[0] if out.budget is not None and out.budget[1] == n else \
        sd <= prop.alpha * out.minimal + 1e-12
    for g in range(G):
        details["groups"][g]["passing_rate_after"] = _r(after[g])
    details.update(pairs_after=_pairs(pair_ratios(d1, group, names)), achieved=_r(sd), rows_changed=changed,
                   accuracy_after=_acc(d1, y), written=where, repaired=True, reverified=bool(ok_ratio and ok_sd))
    seconds = time.perf_counter() - t0
    if not (ok_ratio and ok_sd):
        minimal_text, sd_text = shown_scaled(float(out.minimal), float(sd), prop.alpha)
        return unknown(prop, f"the repaired model{' written to ' + where if where else ''} did not pass re-verification "
                             f"(ratio {ratio_after}, semantic difference {sd_text} vs bound "
                             f"{_spec_number(prop.alpha)} x {minimal_text}); this is a fairspec bug", backend=BACKEND,
                       details=details, seconds=seconds)
    minimal_text, sd_text = shown_scaled(float(out.minimal), float(sd), prop.alpha)
    target = f"written to {where}" if where else "not written (the repair block has no write line)"
    if not out.optimal and out.note:
        target += f"; {out.note}"
    elif not out.optimal:
        target += ("; the fewest changed paths is not proven: the solver reached its time limit and the best repair "
                   f"found{' (the greedy start)' if out.greedy else ''} was kept, its hard constraints re-verified")
    return Verdict(prop.name, prop.kind, "holds", how="proved", value=_r(ratio_after), backend=BACKEND, proof=proof,
                   reason=(f"repaired: {out.paths_flipped} path(s) flipped, {out.paths_refined} refined; "
                           f"ratio {_f4(ratio_before, prop.threshold, exact_before)} -> "
                           f"{_f4(ratio_after, prop.threshold, exact_after)} {op} {_spec_number(prop.threshold)}; semantic "
                           f"difference {sd_text} ({changed} rows) <= {_spec_number(prop.alpha)} x minimal {minimal_text}; "
                           f"re-verified on the model loaded back, {target}"),
                   details=details, seconds=seconds)


def _with_final(pipeline, est):
    """A copy of a scikit-learn Pipeline whose final estimator is ``est`` (its fitted
    preprocessing unchanged): what a repaired pipeline model is written as."""
    import copy

    out = copy.deepcopy(pipeline)
    name, _ = out.steps[-1]
    out.steps[-1] = (name, est)
    return out


def _round_trip(est, index):
    """Without a write line: the repaired estimator through skops bytes and back."""
    from fairspec.models.sklearn_model import SklearnModel, import_skops_io

    sio = import_skops_io()
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "repaired.skops"
        sio.dump(est, p)
        return SklearnModel(p, index=index)


def _goal_proof(r, op, prop, n, what):
    """The goal ``passing_rate_ratio op c`` over every data row, ``r`` the exact ratio (an
    exhaustive-data Proof), or None when it fails."""
    from fairspec.certify.exact import prove_exhaustive

    if r is None:
        return None
    return prove_exhaustive(r, op, prop.threshold, rows=int(n),
                            claim=f"passing_rate_ratio({prop.groups.label or 'groups'}) {op} {_spec_number(prop.threshold)} on all {n} rows, "
                                  f"decided by {what}")


def _float(r) -> float | None:
    """An exact ratio rounded once to a float (7/10 : 7/8 is 0.8, not the 0.7999999999999999 of
    dividing two rounded rates)."""
    return None if r is None else float(r)


def _f4(v, threshold=None, exact=None) -> str:
    """A passing-rate ratio in a reason: 4 decimals, more where 4 would move it to the other side of the
    goal ``threshold`` or onto it (``literals.shown``; ``exact``: the ratio's exact Fraction)."""
    if v is None:
        return "undefined (no group passes)"
    return shown(float(v), () if threshold is None else (threshold,), style="f", exact=exact)


def _pairs(pairs):
    return [{**p, "ratio": _r(p["ratio"]) if p["ratio"] is not None else None} for p in pairs]


def _acc(d, y):
    return None if y is None else _r(float((d == np.asarray(y).astype(np.int64)).mean()))


def _r(v):
    return None if v is None else round(float(v), 6)
