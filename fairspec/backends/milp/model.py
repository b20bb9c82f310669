"""A solver-neutral mixed-integer linear model, emitted to SCIP (pyscipopt) or HiGHS (highspy).

The pair encoding is built once as a :class:`LinModel` (variables with bounds and
integrality, sparse ranged rows, a linear objective), then handed to either engine by
:func:`solve_scip` / :func:`solve_highs`, which return one :class:`SolveOutcome`. Both engine
modules are imported inside the functions.
"""

from __future__ import annotations

from fairspec.runtime.stdio import new_highs

import math
import time
from dataclasses import dataclass

import numpy as np

INF = math.inf


class LinModel:
    def __init__(self):
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.is_int: list[bool] = []
        self.names: list[str] = []
        self.rows: list[tuple[np.ndarray, np.ndarray, float, float]] = []
        self.obj: dict[int, float] = {}
        self.obj_const: float = 0.0
        self.maximize: bool = True

    @property
    def n_vars(self) -> int:
        return len(self.lb)

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def n_int(self) -> int:
        return int(sum(self.is_int))

    def var(self, lb: float, ub: float, integer: bool = False, name: str = "") -> int:
        self.lb.append(float(lb))
        self.ub.append(float(ub))
        self.is_int.append(bool(integer))
        self.names.append(name or f"v{len(self.lb) - 1}")
        return len(self.lb) - 1

    def row(self, idx, vals, lo: float = -INF, hi: float = INF) -> int:
        """A ranged row ``lo <= sum(vals * v[idx]) <= hi`` (duplicate indices are summed)."""
        idx = np.asarray(idx, dtype=np.int64)
        vals = np.asarray(vals, dtype=np.float64)
        if idx.size:
            order = np.argsort(idx, kind="stable")
            idx, vals = idx[order], vals[order]
            uniq, start = np.unique(idx, return_index=True)
            vals = np.add.reduceat(vals, start)
            keep = vals != 0
            idx, vals = uniq[keep], vals[keep]
        self.rows.append((idx, vals, float(lo), float(hi)))
        return len(self.rows) - 1

    def set_objective(self, coefs: dict[int, float], maximize: bool = True, const: float = 0.0):
        self.obj = {int(k): float(v) for k, v in coefs.items() if v != 0}
        self.maximize = maximize
        self.obj_const = const

    def copy(self) -> "LinModel":
        m = LinModel()
        m.lb, m.ub, m.is_int, m.names = list(self.lb), list(self.ub), list(self.is_int), list(self.names)
        m.rows = list(self.rows)
        m.obj, m.obj_const, m.maximize = dict(self.obj), self.obj_const, self.maximize
        return m

    # ---- emitters --------------------------------------------------------------------------
    def to_highs(self, h, relax: bool = False):
        import highspy

        inf = highspy.kHighsInf
        lp = highspy.HighsLp()
        n = self.n_vars
        lp.num_col_ = n
        lp.num_row_ = self.n_rows
        cost = np.zeros(n)
        for k, v in self.obj.items():
            cost[k] = v
        lp.col_cost_ = cost
        lp.offset_ = self.obj_const
        lp.col_lower_ = np.array([-inf if math.isinf(v) else v for v in self.lb])
        lp.col_upper_ = np.array([inf if math.isinf(v) else v for v in self.ub])
        lp.row_lower_ = np.array([-inf if math.isinf(r[2]) else r[2] for r in self.rows])
        lp.row_upper_ = np.array([inf if math.isinf(r[3]) else r[3] for r in self.rows])
        starts = [0]
        for r in self.rows:
            starts.append(starts[-1] + r[0].size)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.num_col_ = n
        lp.a_matrix_.num_row_ = self.n_rows
        lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
        lp.a_matrix_.index_ = (np.concatenate([r[0] for r in self.rows]).astype(np.int32)
                               if self.rows else np.zeros(0, dtype=np.int32))
        lp.a_matrix_.value_ = (np.concatenate([r[1] for r in self.rows])
                               if self.rows else np.zeros(0))
        lp.sense_ = highspy.ObjSense.kMaximize if self.maximize else highspy.ObjSense.kMinimize
        if not relax and any(self.is_int):
            lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                               for b in self.is_int]
        h.passModel(lp)

    def to_scip(self, relax: bool = False):
        from pyscipopt import Model
        from pyscipopt.scip import Expr, ExprCons, Term

        m = Model()
        m.hideOutput()
        vs = []
        for k in range(self.n_vars):
            lb = None if math.isinf(self.lb[k]) else self.lb[k]
            ub = None if math.isinf(self.ub[k]) else self.ub[k]
            vt = "C"
            if self.is_int[k] and not relax:
                vt = "B" if lb == 0 and ub == 1 else "I"
            vs.append(m.addVar(name=self.names[k], vtype=vt, lb=lb, ub=ub))
        for idx, vals, lo, hi in self.rows:
            e = Expr({Term(vs[i]): float(v) for i, v in zip(idx, vals)})
            m.addCons(ExprCons(e, lhs=None if math.isinf(lo) else lo, rhs=None if math.isinf(hi) else hi))
        obj = Expr({Term(vs[k]): v for k, v in self.obj.items()}) + self.obj_const
        m.setObjective(obj, "maximize" if self.maximize else "minimize")
        return m, vs


@dataclass
class SolveOutcome:
    """What an engine says: ``status`` in optimal | infeasible | feasible (a limit stopped it
    with an incumbent) | timeout (no incumbent) | error."""

    status: str
    x: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    raw_status: str = ""
    nodes: int = 0
    engine: str = ""          # the solver that answered (the portfolio's winner)


def _highs_interruptible(h, race: "_Race | None" = None) -> None:
    """HiGHS polls these callbacks during simplex, IPM and branch and bound: stop on Ctrl-C (and
    when the portfolio's race is over)."""
    from fairspec import interrupt

    def poll(e):
        if interrupt.requested() or (race is not None and race.over.is_set()):
            e.interrupt()

    try:
        h.cbSimplexInterrupt += poll
        h.cbIpmInterrupt += poll
        h.cbMipInterrupt += poll
    except Exception:  # noqa: BLE001 - an older highspy without callbacks: its time limit still applies
        pass


def _scip_interruptible(m, race: "_Race | None" = None) -> None:
    """A SCIP event handler that interrupts the solve at the next node or LP once Ctrl-C was pressed."""
    try:
        from pyscipopt import SCIP_EVENTTYPE, Eventhdlr
    except ImportError:  # pragma: no cover
        return
    from fairspec import interrupt

    class _Stop(Eventhdlr):
        def eventinit(self):
            self.model.catchEvent(SCIP_EVENTTYPE.NODESOLVED | SCIP_EVENTTYPE.LPSOLVED, self)

        def eventexit(self):
            self.model.dropEvent(SCIP_EVENTTYPE.NODESOLVED | SCIP_EVENTTYPE.LPSOLVED, self)

        def eventexec(self, event):
            if interrupt.requested() or (race is not None and race.over.is_set()):
                self.model.interruptSolve()

    try:
        m.includeEventhdlr(_Stop(), "fairspec_interrupt", "stop on Ctrl-C")
    except Exception:  # noqa: BLE001
        pass


def solve_scip(lm: LinModel, time_limit: float | None = None, first_solution: bool = False,
               objective_target: float | None = None, start: dict[int, float] | None = None,
               threads: int = 1, gap: float = 0.0, race: "_Race | None" = None) -> SolveOutcome:
    t0 = time.perf_counter()
    m, vs = lm.to_scip()
    if time_limit is not None:
        m.setParam("limits/time", max(float(time_limit), 0.01))
    if first_solution:
        m.setParam("limits/solutions", 1)
    if objective_target is not None:
        # stop as soon as an incumbent reaches the target
        m.setObjlimit(objective_target)
        m.setParam("limits/solutions", 1)
    m.setParam("limits/gap", gap)
    m.setParam("limits/absgap", 1e-9)
    m.setParam("numerics/feastol", 1e-7)
    m.setParam("randomization/randomseedshift", 0)
    if start:
        s = m.createPartialSol()
        for k, v in start.items():
            m.setSolVal(s, vs[k], float(v))
        m.addSol(s)
    _scip_interruptible(m, race)
    try:
        from fairspec import interrupt

        # the solve runs without the GIL, so fairspec.interrupt's watcher thread interrupts it at
        # once (SIGTERM too: SCIP's own handler catches only SIGINT); the event handler remains
        nogil = getattr(m, "optimizeNogil", None)
        with interrupt.solver_section(m.interruptSolve if nogil else None):
            if race is not None and not race.enter(m.interruptSolve if nogil else None):
                return SolveOutcome("timeout", seconds=time.perf_counter() - t0, raw_status="race over",
                                    engine="scip")
            try:
                (nogil or m.optimize)()
            finally:
                if race is not None:
                    race.leave(m.interruptSolve if nogil else None)
            if m.getStatus() == "userinterrupt" and (race is None or not race.over.is_set()):
                interrupt.request()  # SCIP caught the Ctrl-C itself (misc/catchctrlc)
    except Exception as exc:  # noqa: BLE001 - solver error becomes "error"
        return SolveOutcome("error", seconds=time.perf_counter() - t0, raw_status=str(exc))
    st = m.getStatus()
    nsol = m.getNSols()
    x = None
    obj = None
    if nsol > 0 and st != "infeasible":
        sol = m.getBestSol()
        x = np.array([m.getSolVal(sol, v) for v in vs])
        obj = m.getSolObjVal(sol)
    try:
        bound = m.getDualbound()
    except Exception:  # noqa: BLE001
        bound = None
    nodes = m.getNNodes()
    if st == "optimal":
        status = "optimal" if x is not None else "infeasible"
    elif st == "infeasible":
        status = "infeasible"
    elif x is not None:
        status = "feasible"
    elif st in ("timelimit", "sollimit", "gaplimit", "nodelimit", "userinterrupt", "memlimit", "totalnodelimit",
                "stallnodelimit", "bestsollimit", "restartlimit", "primallimit", "duallimit"):
        status = "timeout"
    else:
        status = "error"
    return SolveOutcome(status, x, obj, bound, time.perf_counter() - t0, st, nodes, "scip")


def solve_highs(lm: LinModel, time_limit: float | None = None, first_solution: bool = False,
                objective_target: float | None = None, start: dict[int, float] | None = None,
                threads: int = 1, gap: float = 0.0, race: "_Race | None" = None) -> SolveOutcome:
    import highspy

    t0 = time.perf_counter()
    h = new_highs()
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("threads", int(threads))
    lm.to_highs(h)
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 0.01))
    h.setOptionValue("mip_rel_gap", gap)
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.setOptionValue("mip_feasibility_tolerance", 1e-8)
    h.setOptionValue("primal_feasibility_tolerance", 1e-8)
    if first_solution:
        h.setOptionValue("mip_max_improving_sols", 1)
    if objective_target is not None:
        h.setOptionValue("objective_target", float(objective_target))
    if start:
        n = lm.n_vars
        idx = np.array(sorted(start), dtype=np.int32)
        val = np.array([start[k] for k in sorted(start)], dtype=np.float64)
        try:
            h.setSolution(len(idx), idx, val)
        except Exception:  # noqa: BLE001 - a start is a hint only
            pass
    from fairspec import interrupt

    _highs_interruptible(h, race)
    try:
        with interrupt.solver_section():  # Ctrl-C: HiGHS's interrupt callbacks stop it
            if race is not None and not race.enter(None):
                return SolveOutcome("timeout", seconds=time.perf_counter() - t0, raw_status="race over",
                                    engine="highs")
            h.run()
    except Exception as exc:  # noqa: BLE001
        return SolveOutcome("error", seconds=time.perf_counter() - t0, raw_status=str(exc))
    ms = h.getModelStatus()
    info = h.getInfo()
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.array(h.getSolution().col_value) if has_sol else None
    obj = info.objective_function_value if has_sol else None
    bound = info.mip_dual_bound if any(lm.is_int) else (obj if ms == highspy.HighsModelStatus.kOptimal else None)
    if bound is not None and not math.isfinite(bound):
        bound = None
    M = highspy.HighsModelStatus
    if ms == M.kOptimal:
        status = "optimal" if has_sol else "infeasible"
    elif ms == M.kInfeasible:
        status = "infeasible"
    elif has_sol:
        status = "feasible"
    elif ms in (M.kTimeLimit, M.kSolutionLimit, M.kIterationLimit, M.kInterrupt, M.kObjectiveTarget,
                M.kObjectiveBound, M.kMemoryLimit):
        status = "timeout"
    else:
        status = "error"
    return SolveOutcome(status, x, obj, bound, time.perf_counter() - t0, h.modelStatusToString(ms),
                        int(getattr(info, "mip_node_count", 0)), "highs")


# ------------------------------------------------------------------ the portfolio

#: the portfolio starts HiGHS at once and SCIP this many seconds later, unless HiGHS has answered by
#: then: most of the pair queries HiGHS decides in well under a second (README, "Engines"), where a
#: second solver would only halve its share of the cores; a hard query gets both
PORTFOLIO_STAGGER = 1.0


class _Race:
    """The portfolio's shared state: ``over`` is set once an engine has decided (the others poll it
    from their interrupt callbacks), and each engine's cancel hook (SCIP's ``interruptSolve``, which
    may be called from another thread while it runs without the GIL) is called then."""

    def __init__(self):
        import threading

        self.over = threading.Event()
        self._lock = threading.Lock()
        self._cancels: list = []

    def enter(self, cancel) -> bool:
        """An engine is about to solve: False if the race is already over (it should not start)."""
        with self._lock:
            if self.over.is_set():
                return False
            if cancel is not None:
                self._cancels.append(cancel)
            return True

    def leave(self, cancel) -> None:
        with self._lock:
            if cancel is not None and cancel in self._cancels:
                self._cancels.remove(cancel)

    def finish(self) -> None:
        with self._lock:
            self.over.set()
            cancels = list(self._cancels)
        for c in cancels:
            try:
                c()
            except Exception:  # noqa: BLE001 - an engine that cannot be cancelled stops at its own limit
                pass


def decisive(out: SolveOutcome, first_solution: bool = False, objective_target: float | None = None) -> bool:
    """Does this answer decide the query (so a racing engine can be stopped)? Optimal and
    infeasible always; an incumbent when the query asked only for one (first solution, a target)."""
    if out.status in ("optimal", "infeasible"):
        return True
    return out.status == "feasible" and (first_solution or objective_target is not None)


def _merge(outs: list[SolveOutcome], maximize: bool) -> SolveOutcome:
    """No engine decided: the best incumbent of either, the tighter of their dual bounds (each is a
    valid bound of the same model, so the tighter one is too)."""
    sign = 1.0 if maximize else -1.0
    with_x = [o for o in outs if o.x is not None and o.objective is not None]
    best = max(with_x, key=lambda o: sign * o.objective) if with_x else None
    bounds = [o.bound for o in outs if o.bound is not None and math.isfinite(o.bound)]
    bound = (min(bounds) if maximize else max(bounds)) if bounds else None
    seconds = max((o.seconds for o in outs), default=0.0)
    raw = "; ".join(f"{o.engine}: {o.raw_status}" for o in outs)
    nodes = sum(o.nodes for o in outs)
    if best is not None:
        return SolveOutcome("feasible", best.x, best.objective, bound, seconds, raw, nodes, best.engine)
    if any(o.status == "timeout" for o in outs):
        return SolveOutcome("timeout", None, None, bound, seconds, raw, nodes, "portfolio")
    return SolveOutcome("error", None, None, bound, seconds, raw, nodes, "portfolio")


def solve_portfolio(lm: LinModel, time_limit: float | None = None, first_solution: bool = False,
                    objective_target: float | None = None, start: dict[int, float] | None = None,
                    threads: int = 1, gap: float = 0.0, stagger: float | None = None) -> SolveOutcome:
    """HiGHS and SCIP raced on the same model, each in its own thread (both solve with the GIL
    released: ``highspy``'s ``run``, SCIP's ``optimizeNogil``), SCIP started ``stagger`` seconds
    after HiGHS (:data:`PORTFOLIO_STAGGER`) unless HiGHS has decided by then. The first *decisive*
    answer (:func:`decisive`) wins and the other engine is interrupted; if neither decides within
    ``time_limit``, the best incumbent and the tighter dual bound of the two (:func:`_merge`). The
    answer's ``engine`` names the winner. Ctrl-C stops both (fairspec.interrupt)."""
    import queue
    import threading

    from fairspec import interrupt

    t0 = time.perf_counter()
    stagger = PORTFOLIO_STAGGER if stagger is None else max(0.0, float(stagger))
    race = _Race()
    answers: queue.Queue = queue.Queue()
    kw = dict(first_solution=first_solution, objective_target=objective_target, start=start, threads=threads,
              gap=gap, race=race)

    def run(name: str, fn, delay: float) -> None:
        try:
            if delay > 0 and race.over.wait(delay):
                answers.put(SolveOutcome("timeout", raw_status="not started: the race was over", engine=name))
                return
            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
            if left is not None and left <= 0:
                answers.put(SolveOutcome("timeout", raw_status="time limit", engine=name))
                return
            out = fn(lm, time_limit=left, **kw)
            out.engine = name
            answers.put(out)
        except BaseException as exc:  # noqa: BLE001 - reported to the racing thread (KeyboardInterrupt too)
            answers.put(SolveOutcome("error", raw_status=f"{type(exc).__name__}: {exc}", engine=name))

    runners = [threading.Thread(target=run, args=("highs", solve_highs, 0.0), daemon=True, name="fairspec-highs"),
               threading.Thread(target=run, args=("scip", solve_scip, stagger), daemon=True, name="fairspec-scip")]
    outs: list[SolveOutcome] = []
    winner = None
    # the whole race is a solver section: Ctrl-C ends both engines, then KeyboardInterrupt here
    with interrupt.solver_section(race.finish):
        for t in runners:
            t.start()
        while len(outs) < len(runners):
            out = answers.get()
            outs.append(out)
            if winner is None and decisive(out, first_solution, objective_target):
                winner = out
                race.finish()
        for t in runners:
            t.join()
    if winner is not None:
        winner.seconds = time.perf_counter() - t0
        return winner
    merged = _merge(outs, lm.maximize)
    merged.seconds = time.perf_counter() - t0
    return merged


ENGINES = {"scip": solve_scip, "highs": solve_highs, "portfolio": solve_portfolio}
