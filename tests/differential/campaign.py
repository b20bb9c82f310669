"""A campaign: generate instances of every family, judge them (in worker processes, each
instance with a deadline), tally per family, write the results and reproducers.

Used by ``bench/soundness.py`` (the long run) and ``tests/test_soundness_slice.py`` (a
fixed-seed slice).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

TIME_LIMIT = ("time limit", "time budget", "timed out", "time-out", "timeout", "ran out of time")


def is_time_limit(o: dict) -> bool:
    """An `unknown` whose reason is a time limit (a loaded machine may give it)."""
    return o["klass"] == "unknown" and any(w in (o.get("reason") or "").lower() for w in TIME_LIMIT)


#: fairspec's reason for a pair within a batch-dependent runtime's rounding of the threshold (torch,
#: scikit-learn and onnxruntime on a float64 graph score one point differently in batches of other sizes
#: or orders): the truth the harness computes from one batch is then not the runtime's only answer, so
#: such an `unknown` is shown in its own column and kept out of the unknown target (only on those runtimes)
BATCH_TIE = "depends on how the model is batched"


def is_batch_tie(o: dict) -> bool:
    m = o.get("meta", {})
    batched = m.get("runtime") in ("torch", "sklearn") or m.get("runtime") == "onnx" and m.get("dtype") == "float64"
    return o["klass"] == "unknown" and BATCH_TIE in (o.get("reason") or "") and batched


SMALL_DOMAIN = 1000          # the unknown target counts properties whose domain has at most this many points
UNKNOWN_TARGET = 0.01


def families() -> dict:
    """family name -> generate(seed) -> Instance (imported lazily)."""
    from . import networks

    out = {"network": networks.generate, networks.SKLEARN_FAMILY: networks.generate_sklearn}
    for mod in ("trees", "distributions", "pba", "data_metrics", "data_batched", "kdisc", "multiclass", "regression",
                "tree_multiclass", "tree_regression", "shipped", "api", "pipelines", "repair", "vacuous", "kdisc_boxes", "model_readings"):
        try:
            m = __import__(f"{__package__}.{mod}", fromlist=["generate"])
        except ImportError:
            continue
        out[m.FAMILY] = m.generate
    # the same instances with enumeration of small pair domains switched off: fairspec's solver
    # path (MILP / SMT / certified branch and bound) on domains the truth still enumerates
    for fam in ("network", "network-sklearn", "trees", "kdisc", "multiclass", "regression", "trees-multiclass",
                "trees-regression", "api", "pipelines", "vacuous"):
        if fam in out:
            out[f"{fam}-solver"] = _solver_variant(out[fam], f"{fam}-solver")
    # session 30: every network instance with the wide integer feature (thousands of points, sub-boxes of
    # more than refine.ENUM_POINTS individuals), on the solver path: the refinement's bounds and splits at a
    # hidden layer decide what the solvers leave at a tie (proof-path rows 13, 14)
    from . import network_wide

    out[network_wide.FAMILY] = _solver_variant(network_wide.generate, network_wide.FAMILY)
    # session 31: networks whose hidden layer proves the boxes their bounds leave (proof-path row 14), on
    # the solver path (the generator sets FAIRSPEC_ENUMERATE_PAIRS=0 itself)
    from . import network_split

    out[network_split.FAMILY] = network_split.generate
    # session 33: a real feature the network is steep in, bounded to a window a few float32 steps wide with
    # non-dyadic constants (the runtime reads float32(rr); the solvers reason about the reals)
    from . import real_window

    out[real_window.FAMILY] = real_window.generate
    return out


class _solver_variant:
    """generate(seed) of a family, renamed, with FAIRSPEC_ENUMERATE_PAIRS=0 for its check."""

    def __init__(self, gen, name):
        self.gen, self.name = gen, name

    def __call__(self, seed):
        inst = self.gen(seed)
        inst.family = self.name
        for p in inst.props:
            p.family = self.name
        inst.info["env"] = {"FAIRSPEC_ENUMERATE_PAIRS": "0"}
        for p in inst.props:
            p.meta["solver_forced"] = True      # a user gets enumeration here: outside the unknown target
        return inst


def is_small(o: dict) -> bool:
    """A property the unknown target counts: a finite domain of at most SMALL_DOMAIN points
    (estimates on data rows have domain -1 and are not counted, nor PBA under `engine = lp`, which
    proves no more than the LP relaxation by design, nor the *-solver families, whose small domains a
    user would see enumerated, nor a property whose truth is `reading-dependent`: the float and decimal readings
    of a constant disagree on its verdict, so unknown is its only right verdict)."""
    m = o.get("meta", {})
    if m.get("incomplete") or m.get("solver_forced"):
        return False
    if o.get("truth") == "reading-dependent":
        return False
    return 0 <= o["domain"] <= SMALL_DOMAIN


def instance_seed(seed: int, i: int) -> int:
    return seed * 1_000_000 + i


# ------------------------------------------------------------------ one instance


def run_one(family: str, iseed: int, workdir: str | None = None) -> dict:
    """Generate and judge one instance in this process: {"outcomes": [...], "seconds", "error"}."""
    from .judge import Outcome, run_instance

    t0 = time.perf_counter()
    try:
        inst = families()[family](iseed)
    except Exception as e:  # noqa: BLE001 - a generator bug is the harness's, reported as such
        return {"outcomes": [], "seconds": time.perf_counter() - t0, "family": family, "seed": iseed,
                "error": f"generator: {type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"}
    gen = time.perf_counter() - t0
    folder = Path(tempfile.mkdtemp(prefix=f"fs-{family}-{iseed}-", dir=workdir))
    try:
        outs = run_instance(inst, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"outcomes": [o.to_json() for o in outs], "seconds": time.perf_counter() - t0, "generate_seconds": gen,
            "family": family, "seed": iseed, "error": None, "budget": sum(p.timeout for p in inst.props)}


def _worker(conn, workdir):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from fairspec.runtime import executor

    executor.configure(workers=1)   # partitions in this process: the campaign's workers are the parallelism
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):      # the campaign ended (or was killed): stop
            return
        if task is None:
            return
        family, iseed = task
        try:
            res = run_one(family, iseed, workdir)
        except BaseException as e:  # noqa: BLE001
            res = {"outcomes": [], "family": family, "seed": iseed, "seconds": 0.0,
                   "error": f"harness: {type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"}
        conn.send(res)


def run_tasks(tasks: list[tuple[str, int]], workers: int = 1, deadline=lambda fam: 600.0,
              progress=None) -> list[dict]:
    """Run (family, seed) tasks on ``workers`` processes; a task past its deadline is killed
    (its worker replaced) and recorded as a hang."""
    import signal

    ctx = mp.get_context("spawn")
    def _term(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _term)   # a killed campaign ends its workers (finally below)
    workdir = tempfile.mkdtemp(prefix="fs-soundness-")
    results: list[dict] = []
    pending = list(reversed(tasks))
    slots: list[dict] = []

    def start():
        a, b = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(b, workdir), daemon=False)
        p.start()
        return {"proc": p, "conn": a, "task": None, "t0": 0.0}

    try:
        for _ in range(max(1, min(workers, len(tasks)))):
            slots.append(start())
        while pending or any(s["task"] for s in slots):
            for s in slots:
                if s["task"] is None and pending:
                    s["task"] = pending.pop()
                    s["t0"] = time.monotonic()
                    s["conn"].send(s["task"])
            time.sleep(0.05)
            for i, s in enumerate(slots):
                if s["task"] is None:
                    continue
                if s["conn"].poll():
                    try:
                        res = s["conn"].recv()
                    except EOFError:
                        res = None
                    if res is None:
                        res = _dead(s["task"], "the worker process died")
                        s["proc"].kill()
                        slots[i] = start()
                    else:
                        s["task"] = None
                    results.append(res)
                    if progress:
                        progress(res)
                    continue
                if not s["proc"].is_alive():
                    results.append(_dead(s["task"], f"the worker process died (exit {s['proc'].exitcode})"))
                    slots[i] = start()
                    continue
                if time.monotonic() - s["t0"] > deadline(s["task"][0]):
                    s["proc"].kill()
                    s["proc"].join(5)
                    results.append(_dead(s["task"], f"no answer after {deadline(s['task'][0]):.0f} s", hang=True))
                    if progress:
                        progress(results[-1])
                    slots[i] = start()
    finally:
        for s in slots:
            try:
                s["conn"].send(None)
            except (OSError, BrokenPipeError):
                pass
        for s in slots:
            if s["task"] is not None:    # interrupted mid-task: do not wait for it
                s["proc"].kill()
            s["proc"].join(10)
            if s["proc"].is_alive():
                s["proc"].kill()
        shutil.rmtree(workdir, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    return results


def _dead(task, why: str, hang: bool = False) -> dict:
    family, iseed = task
    return {"outcomes": [], "family": family, "seed": iseed, "seconds": 0.0, "error": None,
            "lost": {"why": why, "hang": hang}}


# ------------------------------------------------------------------ tallies


def tally(results: list[dict]) -> dict:
    """Per family: instances, properties, wrong (by defect), unknown, unknown on small domains,
    rejected, expected refusals (properties whose spec must be refused: correct or wrong like a verdict),
    harness errors, seconds."""
    fam: dict = defaultdict(lambda: {"instances": 0, "properties": 0, "correct": 0, "wrong": 0, "unknown": 0,
                                     "small": 0, "unknown_small": 0, "unknown_small_time": 0, "unknown_small_batch": 0,
                                     "rejected": 0, "harness_errors": 0, "refusals": 0,
                                     "lost": 0, "seconds": 0.0, "defects": Counter()})
    for r in results:
        t = fam[r["family"]]
        t["instances"] += 1
        t["seconds"] += r.get("seconds", 0.0)
        if r.get("error"):
            t["harness_errors"] += 1
        if r.get("lost"):
            t["lost"] += 1
            t["defects"]["hang" if r["lost"]["hang"] else "lost"] += 1
            t["wrong"] += 1
        for o in r["outcomes"]:
            t["properties"] += 1
            t[o["klass"]] += 1
            t["refusals"] += bool(o.get("meta", {}).get("expect"))    # a spec fairspec must refuse
            small = is_small(o)
            t["small"] += small
            if o["klass"] == "unknown" and small:
                t["unknown_small"] += 1
                t["unknown_small_time"] += is_time_limit(o)
                t["unknown_small_batch"] += is_batch_tie(o)
            if o["klass"] == "wrong":
                t["defects"][_defect_key(o)] += 1
    out = {}
    for k, t in sorted(fam.items()):
        t = dict(t)
        t["defects"] = dict(sorted(t["defects"].items()))
        t["seconds"] = round(t["seconds"], 1)
        out[k] = t
    return out


def _defect_key(o: dict) -> str:
    m = o.get("meta", {})
    where = "/".join(str(m[k]) for k in ("backend", "mode", "post", "op", "model", "kind", "metric")
                     if m.get(k) not in (None, "", False))
    return f"{o['defect']} [{where}]" if where else o["defect"]


def issue_class(o: dict) -> str:
    """A best guess at the issue-20 defect class of a wrong verdict (from its tag, its reason and
    the generator's hints); the reproducer is the evidence, this is only the index."""
    m, d, why, reason = o.get("meta", {}), o["defect"], o.get("why", ""), o.get("reason") or ""
    strict = m.get("op") in ("<", ">")
    if d in ("crash", "hang", "lost", "missing"):
        return d
    if d in ("not-refused", "refused-otherwise"):
        return "7 an ambiguous declaration not refused as documented"
    if d == "no-proof":
        return "2 holds (proved) without a certify proof"
    if d == "bad-witness":
        if "beyond the tolerance" in why:
            # strictness only when the pair sits exactly on a strict tolerance (|d| = t with `< t`)
            import re

            mm = re.search(r"pair's (\S+) differ by (\S+),", why)
            for name, tol, strict in m.get("relaxed") or ():
                if mm and name == mm.group(1) and strict and Fraction(mm.group(2)) == Fraction(tol):
                    return "3 strict require tolerance read as <="
            return "5 witness breaks the require tolerance"
        if "not the encoding" in why or "not in the domain" in why or "lack feature" in why:
            return "5 witness is no domain point"
        if "counterfactuals of one individual" in why:
            return "5 witness is no domain point"
        return "4 witness does not replay on the runtime"
    if d in ("max-below", "max-not-exact", "interval"):
        if "data rows" in reason:
            return "1 maximize reports the data stage's share"
        if o.get("value") is not None and o.get("truth_value") is not None and \
                abs(o["value"] - o["truth_value"]) <= 1e-5 * max(1.0, abs(o["truth_value"])):
            return "4 maximum in real, not runtime, arithmetic"
        return "1 maximize value is not the maximum"
    if d in ("false-proof", "false-violation", "false-estimate", "value-wrong"):
        if o["family"] in ("distribution", "data"):
            if m.get("tie"):
                return "3 strict claim read as non-strict" if strict else "6 exact value compared in floating point"
            return "6 value not computed exactly"
        if m.get("relaxed_tie"):
            return "3 strict require tolerance read as <="
        if m.get("tie"):
            if m.get("post") == "label":
                return "1 decision exactly at the threshold (a logit of 0)"
            return "3 strict tolerance read as <=" if strict else "1 tie within the solver's tolerance"
        return "1/2/4 other (solver tolerance, rounded constants or float32)"
    return d


def wrong_outcomes(results: list[dict]) -> list[dict]:
    return [o for r in results for o in r["outcomes"] if o["klass"] == "wrong"]


# ------------------------------------------------------------------ reproducers


def write_reproducers(results: list[dict], root: Path, cap: int = 40) -> list[dict]:
    """For wrong verdicts (the first of each defect class first, up to ``cap``): a folder with
    the spec (that property alone), the model and data files, truth.json and verdict.json; the
    property is re-checked there and ``reproduces`` says whether it is still wrong."""
    from .judge import run_instance

    wrong = wrong_outcomes(results)
    seen, first, rest = set(), [], []
    for o in wrong:
        key = (o["family"], issue_class(o), o["defect"])
        (rest if key in seen else first).append(o)
        seen.add(key)
    chosen = (first + rest)[:cap]
    if root.exists():
        shutil.rmtree(root)
    written = []
    gens = families()
    for o in chosen:
        inst = gens[o["family"]](o["seed"])
        folder = root / f"{o['family']}-{o['seed']}-{o['name']}"
        outs = run_instance(inst, folder, only=[o["name"]])
        again = outs[0] if outs else None
        truth = inst.truth_json([o["name"]])
        truth["reported"] = o
        truth["reproduces"] = bool(again and again.klass == "wrong")
        truth["rechecked"] = again.to_json() if again else None
        (folder / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True, default=str) + "\n")
        written.append({"path": str(folder), "family": o["family"], "defect": _defect_key(o),
                        "class": issue_class(o),
                        "reproduces": truth["reproduces"], "why": o["why"]})
    return written


# ------------------------------------------------------------------ owners and findings


def owner(o: dict) -> str:
    """The engineer whose area a wrong verdict falls in (the team of issue 20's fixes)."""
    fam, m, why = o["family"], o.get("meta", {}), o.get("why", "") + (o.get("reason") or "")
    if "feature names" in why or fam == "shipped":
        return "shipmodels"
    if fam in ("network", "network-solver"):
        return "smt" if m.get("backend") == "smt" else "pairs"
    if fam in ("trees", "trees-solver", "trees-multiclass-solver", "trees-regression-solver"):
        return "trees"
    if fam == "pba":
        return "smt"
    if fam == "kdisc-solver" and m.get("model") not in (None, "onnx"):
        return "trees"
    return "exact"


def case_id(o: dict) -> str:
    return f"{o['family']}-{o['seed']}-{o['name']}"


def findings_md(results: list[dict], title: str, repro_prefix: str = "python bench/soundness.py") -> str:
    """Wrong verdicts grouped by family, owner, setting and issue-20 class, each with one
    reproducer command (``bench/soundness.py --case FAMILY-SEED-PROPERTY``)."""
    rows: dict = {}
    for o in wrong_outcomes(results):
        m = o.get("meta", {})
        where = "/".join(str(m[k]) for k in ("backend", "mode", "model", "kind", "engine")
                         if m.get(k) not in (None, "", False))
        rows.setdefault((o["family"], owner(o), issue_class(o), where), []).append(o)
    lost = [r for r in results if r.get("lost")]
    t = tally(results)
    props = sum(x["properties"] for x in t.values())
    wrong = sum(x["wrong"] for x in t.values())
    lines = [f"## {title}", "",
             f"{props} properties, {wrong} wrong; per family: " +
             ", ".join(f"{k} {x['wrong']}/{x['properties']} wrong, unknown (domain <= 1,000) "
                       f"{x['unknown_small']}/{x['small']}" for k, x in t.items()), ""]
    if rows:
        lines += ["| family | owner | issue-20 class (best guess) | setting | wrong | reproducer |",
                  "|---|---|---|---|---:|---|"]
        for (fam, own, c, where), os_ in sorted(rows.items()):
            e = os_[0]
            lines.append(f"| {fam} | {own} | {c} | {where} | {len(os_)} | `{repro_prefix} --case {case_id(e)}` "
                         f"({e['defect']}: {e['why'][:110].replace('|', '/').replace(chr(10), ' ')}) |")
    for r in lost[:10]:
        lines.append(f"- lost: {r['family']}-{r['seed']}: {r['lost']['why']}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the report


def table(t: dict) -> str:
    head = ("| family | instances | properties | wrong | unknown | unknown, domain <= 1,000 | of which time limits "
            "| of which batch ties | rejected | expected refusals | harness errors | seconds |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tot = Counter()
    for fam, x in t.items():
        us = f"{x['unknown_small']} / {x['small']}"
        lines.append(f"| {fam} | {x['instances']} | {x['properties']} | {x['wrong']} | {x['unknown']} | {us} | "
                     f"{x.get('unknown_small_time', 0)} | {x.get('unknown_small_batch', 0)} | {x['rejected']} | "
                     f"{x.get('refusals', 0)} | {x['harness_errors']} | {x['seconds']:.0f} |")
        for k in ("instances", "properties", "wrong", "unknown", "unknown_small", "small", "unknown_small_time",
                  "unknown_small_batch", "rejected", "refusals", "harness_errors"):
            tot[k] += x.get(k, 0)
        tot["seconds"] += x["seconds"]
    lines.append(f"| **all** | {tot['instances']} | {tot['properties']} | {tot['wrong']} | {tot['unknown']} | "
                 f"{tot['unknown_small']} / {tot['small']} | {tot['unknown_small_time']} | {tot['unknown_small_batch']} | "
                 f"{tot['rejected']} | {tot['refusals']} | {tot['harness_errors']} | "
                 f"{tot['seconds']:.0f} |")
    return "\n".join(lines)


def classes_table(results: list[dict]) -> str:
    """Wrong verdicts per family and issue-20 class, with one reproducer seed/property each."""
    rows: dict = {}
    for o in wrong_outcomes(results):
        k = (o["family"], issue_class(o))
        rows.setdefault(k, []).append(o)
    lines = ["| family | issue-20 class (best guess) | wrong | e.g. |", "|---|---|---:|---|"]
    for (fam, c), os_ in sorted(rows.items()):
        e = os_[0]
        lines.append(f"| {fam} | {c} | {len(os_)} | {fam}-{e['seed']}-{e['name']} |")
    return "\n".join(lines)


def defects_table(t: dict) -> str:
    lines = ["| family | defect [backend/mode/post/op] | wrong verdicts |", "|---|---|---:|"]
    for fam, x in t.items():
        for d, n in x["defects"].items():
            lines.append(f"| {fam} | {d} | {n} |")
    return "\n".join(lines)


def targets(t: dict) -> dict:
    props = sum(x["properties"] for x in t.values())
    wrong = sum(x["wrong"] for x in t.values())
    small = sum(x["small"] for x in t.values())
    # batch ties (is_batch_tie) are shown beside the unknowns and kept out of the target
    us = sum(x["unknown_small"] - x.get("unknown_small_batch", 0) for x in t.values())
    return {"properties": props, "wrong": wrong, "unknown_small": us, "small": small,
            "batch_ties": sum(x.get("unknown_small_batch", 0) for x in t.values()),
            "zero_wrong_in_5000": wrong == 0 and props >= 5000,
            "unknown_small_share": (us / small) if small else 0.0,
            "unknown_small_ok": (us <= UNKNOWN_TARGET * small) if small else True}


def progress_printer(total: int, stream=sys.stderr):
    state = {"done": 0, "wrong": 0, "t0": time.monotonic()}

    def cb(res):
        state["done"] += 1
        w = sum(o["klass"] == "wrong" for o in res["outcomes"]) + bool(res.get("lost"))
        state["wrong"] += w
        el = time.monotonic() - state["t0"]
        flag = f"  WRONG {w}" if w else ""
        err = "  HARNESS ERROR" if res.get("error") else ""
        print(f"[{state['done']}/{total} {el:6.0f}s] {res['family']} {res['seed']}: "
              f"{len(res['outcomes'])} properties{flag}{err}", file=stream, flush=True)

    return cb
