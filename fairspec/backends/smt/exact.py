"""The certified SMT modes: ``prove`` / ``find`` / ``maximize`` of a pair problem about a model's
runtime, with every ``holds (proved)`` an ``exact-smt`` proof of :mod:`fairspec.certify.smt`.

1. The runtime error bound ``E`` of the model's runtime against the problem's network in real
   arithmetic (:func:`fairspec.certify.network.runtime_error_bound`), and the claim moved
   outward by it (:func:`fairspec.certify.pairlp.moved_threshold`): a proof of the moved claim
   in real arithmetic is a proof about the runtime's floats.
2. certify writes the SMT-LIB text of "a pair violates the moved claim" (exact rationals of the
   float weights, exact ReLUs, the claim's strictness); z3 answers it unchanged. ``unsat``:
   certify re-renders the text, compares, and mints the proof.
3. ``sat``: the model's pair (a domain point: integral inputs are ``Int``) is replayed on the
   runtime (``Runtime.replay``) and compared exactly with the threshold as the spec writes it
   (:func:`fairspec.certify.enumerate.compare_exact`). A pair that does not break the property
   on the runtime lies within the runtime's rounding of the threshold: certify compares its
   runtime outputs itself and the query is asked again with that pair excluded (the proof then
   lists the excluded pairs: ``detail["excluded"]``); a prob post whose pair only breaks the
   piecewise over-approximation gets a new cut point at its ``z'``. After
   :data:`MAX_EXCLUDED` such pairs, ``unknown``.
4. ``maximize``: the verdict as ``prove``, then bisection on the violation measure in real
   arithmetic (each ``unsat`` an ``exact-smt`` proof of "measure < B"); the result is the
   interval [best value replayed on the runtime, certified upper bound of the runtime's
   measure ``B + E``] (``value`` and ``bound``); ``how="proved"`` (the maximum) only when the two
   meet within :data:`MEET` (relative).

A time-out is ``unknown`` (maximize: the interval proved so far).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Callable

import numpy as np

from fairspec.backends.pair import PairProblem, PairResult, Witness, precondition_holds

__all__ = ["Runtime", "prove", "find", "maximize", "solve", "replays", "emulated_replay", "MAX_EXCLUDED", "MEET"]

MAX_EXCLUDED = 64          # pairs within the runtime's rounding of the threshold, replayed and excluded
MAX_ROUNDS = 60            # maximize: bisection rounds
MEET = 1e-9                # maximize: "the maximum" when best replayed and certified bound are this close


@dataclass(frozen=True)
class Runtime:
    """The model's runtime as the proof must cover it.

    net:        the runtime's own layers (:func:`fairspec.certify.network.as_layers`): the numbers in
                the model file, every column the readout reads.
    encoding:   one :class:`fairspec.certify.network.InputEncoding` per model input (None: the
                problem's variables are the model's inputs).
    readout:    ``("logit", i)``, ``("margin", i, j)``, ``("prob", i)``, ``("softmax", i, j)``.
    precision:  ``"float32"`` (ONNX, torch) or ``"float64"`` (scikit-learn).
    replay:     problem-space batch (k, n) -> the runtime's scores (k,) (the loaded model).
    score_kind: what ``replay`` returns: ``"logit"`` (decision ``> 0``) or ``"prob"`` (``> 0.5``).
    """

    net: object
    encoding: tuple | None = None
    readout: tuple = ("logit", 0)
    precision: str = "float64"
    replay: Callable | None = None
    score_kind: str = "logit"
    name: str = ""
    base_net: object = None      # readout ("argmax", c): the K-output network (feature space)
    #: readout ("prob", i): the probability is one elementwise function of the logit's float
    #: (fairspec.models.batching.elementwise_sigmoid_head; certify.network.equal_logits_readout)
    fixed_head: bool = False
    #: a ``prob`` post whose probability is the library's own float of the logit ``replay`` gives
    #: (scikit-learn's predict_proba of a linear classifier declared by its decision_function):
    #: problem-space batch (k, n) -> those probabilities (k,). A pair it shows broken is a violation
    #: (:meth:`_Judge.ordered_violates`); fair pairs are still decided by the logistic's bounds only
    prob: Callable | None = None

    def __getstate__(self):
        # a process pool's worker gets no replay (the loaded model stays in the parent): it
        # emulates the runtime in numpy (:func:`emulated_replay`) to find witnesses, excludes no
        # pair on that evidence, and the parent replays the witness on the real runtime
        d = dict(self.__dict__)
        d["replay"] = None
        d["prob"] = None
        return d

    def __setstate__(self, d):
        self.__dict__.update(d)


def emulated_replay(rt: Runtime):
    """The runtime's score in numpy: the encoding in float64, the layers in the runtime's
    precision, the readout as fairspec reads it. A search aid only (never evidence)."""
    from fairspec.certify.exact_runtime import encoded_inputs
    from fairspec.certify.network import as_layers
    from fairspec.models.network import sigmoid

    layers = as_layers(rt.net)
    dt = np.float32 if rt.precision in ("float32", "float16") else np.float64     # float16: as onnxruntime

    def run(V):
        H = encoded_inputs(rt.encoding, V).astype(dt)
        for W, b, relu in layers:
            H = H @ W.T.astype(dt) + b.astype(dt)
            if relu:
                H = np.maximum(H, dt(0))
        Y = H.astype(np.float64)
        kind, cols = rt.readout[0], rt.readout[1:]
        if kind == "logit":
            return Y[:, cols[0]]
        if kind == "margin":
            return Y[:, cols[0]] - Y[:, cols[1]]
        if kind == "argmax":
            from fairspec.certify.network import argmax_class_score
            if len(cols) > 1:       # a softmax head: the class is the runtime's probabilities', not modelled here
                raise ValueError("the class of a softmax head is read from the runtime's own outputs")
            return argmax_class_score(H, cols[0])
        if kind == "prob":
            return sigmoid(Y[:, cols[0]])
        return sigmoid(Y[:, cols[0]] - Y[:, cols[1]])

    return run


def default_runtime(problem: PairProblem) -> Runtime:
    """The problem's own network evaluated in float64 (tests, and callers without a model file)."""
    return Runtime(problem.net, None, ("logit", 0), "float64", problem.net.forward, "logit", "the network in float64")


# ---------------------------------------------------------------------------------------------
# The moved claim and the runtime's verdict on a pair
# ---------------------------------------------------------------------------------------------

def _moved(problem: PairProblem, rt: Runtime, eps_strict: bool):
    """(threshold, strict, E in measure units, margin of the runtime measure over the real one)."""
    from fairspec.certify.network import prob_error_to_logit, runtime_error_bound
    from fairspec.certify.pairlp import moved_threshold

    E = runtime_error_bound(rt.net, problem.lo, problem.hi, encoding=rt.encoding, readout=rt.readout,
                            proof_net=problem.net, precision=rt.precision, integer=problem.integer,
                            onehot_groups=problem.onehot_groups, base_net=rt.base_net,
                            difference=problem.post == "logit" and rt.readout[0] in ("logit", "margin"))
    prob_readout = rt.readout[0] in ("prob", "softmax")
    if problem.post == "label" and prob_readout:
        Eu = prob_error_to_logit(E)
    elif problem.post == "prob" and not prob_readout:
        Eu = E / 4.0 * (1 + 2.0 ** -40) + 2.0 ** -1000     # sigmoid is 1/4-Lipschitz
    elif problem.post == "logit" and prob_readout:
        raise ValueError("a logit post-condition on a model read as probabilities")
    else:
        Eu = E
    if not math.isfinite(Eu):
        raise ValueError("the runtime error bound is too large for a proof")
    thr, strict = moved_threshold(problem.post, problem.eps, Eu, eps_strict)
    margin = Eu if problem.post == "label" else 2.0 * Eu
    return thr, strict, Eu, margin


def _equal_logits(problem: PairProblem, rt: Runtime, eps_strict: bool):
    """The logit readout a prob post at eps 0 is proved by (z - z' <= 0 for every pair), where certify says
    so (:func:`fairspec.certify.network.equal_logits_readout`); None otherwise."""
    from fairspec.certify.network import equal_logits_readout

    return equal_logits_readout(rt.net, problem.lo, problem.hi, post=problem.post, eps=problem.eps,
                                eps_strict=eps_strict, readout=rt.readout, fixed_head=rt.fixed_head,
                                encoding=rt.encoding, proof_net=problem.net, precision=rt.precision,
                                integer=problem.integer, onehot_groups=problem.onehot_groups)


def _label_by_equal_logits(S, mode: str) -> PairResult | None:
    """A label's question asked once as ``z - z' <= 0`` (no pair flips a label when the runtime's logits
    are equal, whatever its rule at the threshold), where certify says equal logits decide it, with no
    pair excluded (:func:`_decide`): its ``holds`` / ``violated`` (the judge and maximize keep the label),
    or None with the label's claim back in place."""
    S.equal_tried = True
    via = _equal_logits(S.p, S.rt, S.eps_strict)
    if via is None:
        return None
    claim = S.claim
    S.via, S.claim = via, (S.p.with_post("logit", 0.0), Fraction(0), False, 0.0)
    r = _decide(S, mode)
    if r.status != "unknown":
        return r
    S.via, S.claim = None, claim
    return None


class _Judge:
    """The runtime's verdict on ordered pairs, decided exactly (certify's comparisons)."""

    def __init__(self, problem: PairProblem, rt: Runtime, eps_strict: bool, eps_text=None):
        self.p = problem
        self.rt = rt
        self.eps = problem.eps if eps_text is None else eps_text
        self.eps_strict = eps_strict
        self.t = 0 if rt.score_kind == "logit" else "0.5"

    def scores(self, x, xp) -> np.ndarray:
        s = np.asarray(self.rt.replay(np.vstack([x, xp])), dtype=np.float64).reshape(-1)
        if s.shape != (2,):
            raise ValueError("the runtime must give one score per row")
        return s

    def probabilities(self, x, xp) -> np.ndarray | None:
        """The library's probabilities of the pair (``Runtime.prob``, in a batch of two as :meth:`scores`),
        or None where ``prob`` is not read so or they are not two finite floats."""
        if self.rt.prob is None or self.p.post != "prob" or self.rt.score_kind != "logit":
            return None
        P = np.asarray(self.rt.prob(np.vstack([x, xp])), dtype=np.float64).reshape(-1)
        return P if P.shape == (2,) and np.all(np.isfinite(P)) else None

    def ordered_violates(self, s: np.ndarray, p: np.ndarray | None = None) -> bool | None:
        """Does the ordered pair (scores s[0], s[1]) break the property on the runtime? None when
        the runtime's scores cannot decide it exactly (a prob post read from logits near eps). ``p``:
        the pair's probabilities where they are the library's floats (:meth:`probabilities`): a pair they
        break, compared exactly, is a violation (ties, saturated logits); the others as without them."""
        from fairspec.certify.enumerate import compare_exact

        a, b = s[:1], s[1:]
        if not np.all(np.isfinite(s)):
            return None
        if self.p.post == "label":
            return bool(compare_exact(a, ">", self.t)[0] and compare_exact(b, "<=", self.t)[0])
        if p is not None and self.p.post == "prob" and self.rt.score_kind == "logit" and \
                compare_exact(p[:1], ">=" if self.eps_strict else ">", self.eps, minus=p[1:])[0]:
            return True
        if self.p.post == "prob" and self.rt.score_kind == "logit":
            # the logistic of the runtime's logits, by rigorous outward bounds (None: too close)
            from fairspec.certify.exact import decide, threshold_of
            from fairspec.certify.rounding import sigmoid_down, sigmoid_up

            lo_d = float(np.nextafter(sigmoid_down(float(a[0])) - sigmoid_up(float(b[0])), -np.inf))
            hi_d = float(np.nextafter(sigmoid_up(float(a[0])) - sigmoid_down(float(b[0])), np.inf))
            e = threshold_of(self.eps)
            if decide(lo_d, ">=" if self.eps_strict else ">", e):
                return True
            if decide(hi_d, "<" if self.eps_strict else "<=", e):
                return False
            return None
        return bool(compare_exact(a, ">=" if self.eps_strict else ">", self.eps, minus=b)[0])

    def measure(self, s: np.ndarray) -> float:
        """The runtime's directional violation measure of the ordered pair."""
        if self.p.post == "label":
            t = float(self.t)
            return float(min(s[0] - t, t - s[1]))
        if self.p.post == "prob" and self.rt.score_kind == "logit":
            from fairspec.models.network import sigmoid

            return float(sigmoid(s[:1])[0] - sigmoid(s[1:])[0])
        return float(s[0] - s[1])


# ---------------------------------------------------------------------------------------------
# z3
# ---------------------------------------------------------------------------------------------

class _Z3:
    def __init__(self, deadline):
        import z3

        self.z3 = z3
        self.deadline = deadline
        self.stats = {"engine": "z3", "checks": 0, "solver_seconds": 0.0, "excluded": 0, "cuts": 0}
        self.version = "z3 " + z3.get_version_string()

    def remaining(self):
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def check(self, text: str, names: list[str]):
        """("sat", {name: Fraction}) | ("unsat", None) | ("timeout", None) | ("error", message)."""
        z3 = self.z3
        r = self.remaining()
        if r is not None and r <= 0:
            return "timeout", None
        ctx = z3.Context()
        s = z3.Solver(ctx=ctx)
        # z3 would take SIGINT over during the check (its own Ctrl-C handler cancels that one check,
        # which reads as a time-out, and Python never sees the signal: the next check ran on);
        # fairspec.interrupt cancels it through ctx.interrupt instead
        s.set("ctrl_c", False)
        if r is not None:
            s.set("timeout", max(1, int(r * 1000)))
        t = time.perf_counter()
        try:
            s.from_string(text)
            from fairspec import interrupt

            with interrupt.solver_section(ctx.interrupt):
                res = s.check()
        except z3.Z3Exception as e:
            return "error", str(e)
        finally:
            self.stats["checks"] += 1
            self.stats["solver_seconds"] = round(self.stats["solver_seconds"] + time.perf_counter() - t, 4)
        if res == z3.unsat:
            return "unsat", None
        if res != z3.sat:
            return "timeout", None
        m = s.model()
        vals = {}
        for d in m.decls():
            if d.name() in names:
                v = m[d]
                if z3.is_int_value(v):
                    vals[d.name()] = Fraction(v.as_long())
                elif z3.is_rational_value(v):
                    vals[d.name()] = Fraction(v.numerator_as_long(), v.denominator_as_long())
        return "sat", vals


# ---------------------------------------------------------------------------------------------
# The modes
# ---------------------------------------------------------------------------------------------

def replays(problem: PairProblem, rt: Runtime, witness, eps_strict: bool = False, relaxed_strict=()) -> bool:
    """Does the witness break the property on the real runtime (``rt.replay``), exactly, in either
    order, with the pre-condition checked exactly (strict tolerances included)?"""
    j = _Judge(problem, rt, eps_strict)
    x = np.asarray(witness.x, dtype=np.float64)
    xp = np.asarray(witness.x_prime, dtype=np.float64)
    ok, _ = precondition_holds(problem, x, xp, tol=0.0)
    if not ok:
        return False
    for i, t in problem.relaxed:
        if i in set(relaxed_strict) and not abs(Fraction(float(x[i])) - Fraction(float(xp[i]))) < Fraction(t):
            return False
    s = j.scores(x, xp)
    P = j.probabilities(x, xp)
    return bool(j.ordered_violates(s, P) or j.ordered_violates(s[::-1].copy(), None if P is None else P[::-1].copy()))


def _relaxed_exact(problem: PairProblem, relaxed_strict) -> PairProblem:
    """``|x_i - x'_i| < t`` on an integral input is ``<= ceil(t) - 1``: exact, so no pair of the
    query breaks the strict bound (a continuous one keeps ``<= t``, an over-approximation)."""
    if not relaxed_strict:
        return problem
    out = []
    for i, t in problem.relaxed:
        if i in relaxed_strict and problem.integer[i]:
            t = float(math.ceil(Fraction(t)) - 1)
        out.append((i, max(t, 0.0)))
    return replace(problem, relaxed=tuple(out))


def _pair_of(q, vals: dict, names) -> tuple[np.ndarray, np.ndarray, list, list]:
    xs, xps = names
    fx = [vals.get(n, Fraction(0)) for n in xs]
    fxp = [vals.get(n, Fraction(0)) for n in xps]
    return (np.array([float(v) for v in fx]), np.array([float(v) for v in fxp]), fx, fxp)


class _Session:
    """One problem: the moved claim, the excluded pairs, z3, the best replayed pair."""

    def __init__(self, problem: PairProblem, rt: Runtime | None, eps_strict: bool, relaxed_strict, deadline,
                 eps_text=None):
        from fairspec.certify.pairlp import PairQuery

        self.p0 = problem
        self.p = _relaxed_exact(problem, relaxed_strict)
        self.relaxed_strict = set(relaxed_strict or ())
        self.rt = rt or default_runtime(problem)
        self.emulated = self.rt.replay is None
        if self.emulated:
            self.rt = replace(self.rt, replay=emulated_replay(self.rt))
        self.eps_strict = eps_strict
        self.judge = _Judge(self.p, self.rt, eps_strict, eps_text)
        self.z3 = _Z3(deadline)
        self.thr, self.strict, self.E, self.margin = _moved(self.p, self.rt, eps_strict)
        # the verdict's claim: (problem, threshold, strict, E); prob at eps 0 where certify says so: z - z' <= 0,
        # the logit difference exact (the judge, and maximize's bisection, keep self.p's post and margin)
        self.via = _equal_logits(self.p, self.rt, eps_strict) if self.p.post == "prob" else None
        self.equal_tried = False       # label: the equal-logits question asked at a tie (_label_by_equal_logits)
        self.claim = ((self.p, self.thr, self.strict, self.E) if self.via is None
                      else (self.p.with_post("logit", 0.0), Fraction(0), False, 0.0))
        self.PairQuery = PairQuery
        self.best: tuple | None = None          # (measure, Witness)
        self.seen: dict = {}

    def query(self, thr, strict, problem=None):
        return self.PairQuery.from_problem(self.p if problem is None else problem, thr, strict)

    def in_domain(self, x, xp) -> bool:
        ok, _ = precondition_holds(self.p0, x, xp, tol=0.0)
        if not ok:
            return False
        for i, t in self.p0.relaxed:
            if i in self.relaxed_strict and not abs(Fraction(float(x[i])) - Fraction(float(xp[i]))) < Fraction(t):
                return False
        return True

    def replay(self, x, xp):
        """(violates: bool | None, runtime scores) of the ordered pair; records the best measure."""
        key = (tuple(x), tuple(xp))
        if key in self.seen:
            return self.seen[key]
        s = self.judge.scores(x, xp)
        v = self.judge.ordered_violates(s, self.judge.probabilities(x, xp))
        m = self.judge.measure(s)
        if self.best is None or m > self.best[0]:
            self.best = (m, Witness([float(a) for a in x], [float(a) for a in xp], float(s[0]), float(s[1])))
        self.seen[key] = (v, s)
        return v, s

    def result(self, status, mode, **kw) -> PairResult:
        st = dict(self.z3.stats)
        st["runtime_error"] = self.E
        st["runtime"] = self.rt.name
        return PairResult(status, engine="z3", mode=mode, seconds=time.perf_counter() - self.t0, stats=st, **kw)


def _decide(S: _Session, mode: str) -> PairResult:
    """The verdict: the moved claim's query, spurious pairs replayed and excluded."""
    from fairspec.certify.smt import input_names, smtlib

    try:
        q = S.query(S.claim[1], S.claim[2], S.claim[0])
    except ValueError as e:
        return S.result("unknown", mode, reason=f"the SMT query cannot be stated: {e}")
    names = input_names(q)
    allnames = set(names[0]) | set(names[1])
    excluded: list = []          # (x, x', runtime scores) of ordered pairs the runtime finds fair
    cuts: list[float] = []
    while True:
        text = smtlib(q, cuts, excluded=[e[3] for e in excluded])
        status, vals = S.z3.check(text, allnames)
        if status == "unsat":
            proof = _certify(q, text, excluded, S, cuts)
            if proof is None:
                return S.result("unknown", mode, reason="certify refused the SMT answer")
            return S.result("holds", mode, how="proved", proof=proof, bound=float(q.threshold),
                            reason="the exact SMT query with the violated post-condition is unsat")
        if status == "timeout":
            return S.result("unknown", mode, reason="time limit reached before the SMT query was decided")
        if status == "error":
            return S.result("unknown", mode, reason=f"solver error: {vals}")
        x, xp, fx, fxp = _pair_of(q, vals, names)
        if not S.in_domain(x, xp):
            return S.result("unknown", mode, reason="the SMT model is not a domain point (continuous inputs "
                                                    "not representable as floats)")
        viol, s = S.replay(x, xp)
        if viol:
            w = Witness([float(a) for a in x], [float(a) for a in xp], float(s[0]), float(s[1]))
            return S.result("violated", mode, value=S.judge.measure(s), witness=w,
                            reason="the pair replays as a violation on the runtime")
        if S.via is not None and S.p.post == "label":
            # a label by equal logits excludes nothing: z - z' <= 0 for *every* ordered pair gives z = z', so
            # one label whatever the rule; with pairs excluded it would say only z <= z' for the rest, which
            # flips no label only under a rule non-decreasing in that logit
            return S.result("unknown", mode, reason="a pair whose runtime logits differ (equal logits not proved)")
        if q.post == "prob" and viol is not None and _z_prime(q, fx, fxp) is not None:
            zp = float(_z_prime(q, fx, fxp))
            if _real_prob_measure(q, fx, fxp) < float(q.threshold) and len(cuts) < 64 and zp not in cuts:
                cuts.append(zp)                    # only the over-approximation breaks: refine it
                S.z3.stats["cuts"] += 1
                continue
        exact_point = all(Fraction(float(v)) == v for v in fx + fxp)
        if S.p.post == "label" and not S.equal_tried and viol is False and exact_point and not S.emulated \
                and s[0] == s[1]:
            tie = _label_by_equal_logits(S, mode)      # a tie with z = z': asked as z - z' <= 0 (equal logits)
            if tie is not None:
                return tie
        if viol is None or not exact_point or S.emulated or len(excluded) >= MAX_EXCLUDED:
            why = ("a pair whose runtime probabilities are within 1e-12 of the tolerance" if viol is None else
                   "a pair of inputs that are not floats" if not exact_point else
                   "a pair within the runtime's rounding of the threshold (a partition's worker cannot replay "
                   "pairs on the runtime)" if S.emulated else
                   f"{len(excluded)} pairs within the runtime's rounding error ({S.E:.3g}) of the threshold")
            return S.result("unknown", mode, reason=f"not decided: {why}; no pair replays as a violation")
        if S.p.post == "label":
            # exclude the point that makes the pair fair (all of its pairs at once): x not positive
            # on the runtime, or x' positive
            from fairspec.certify.enumerate import compare_exact

            entry = (fx, None) if compare_exact(s[:1], "<=", S.judge.t)[0] else (None, fxp)
        else:
            entry = (fx, fxp)
        if not _every_batch(S, entry, s):
            return S.result("unknown", mode, reason="not decided: a pair within the runtime's rounding error "
                                                    f"({S.E:.3g}) of the threshold is fair in the batch it was "
                                                    "replayed in, and the runtime is not shown to score it so in "
                                                    "every batch; whether the property holds depends on how the "
                                                    "model is batched; no pair replays as a violation")
        excluded.append((x, xp, s, entry))
        S.z3.stats["excluded"] = len(excluded)


def _every_batch(S: _Session, entry, s) -> bool:
    """Does the runtime score the point(s) of an exclusion ``entry`` ((fx, fx'), one None for a label's
    point) as the replay did (``s``) in every batch size and order (certify's own test, which
    :func:`fairspec.certify.smt.prove_unsat` repeats)?"""
    from fairspec.certify.exact_runtime import scored_in_every_order

    pts = [([float(a) for a in v], sc) for v, sc in zip(entry, s) if v is not None]
    return bool(pts) and scored_in_every_order(S.rt.net, S.rt.encoding, S.rt.precision, S.rt.readout,
                                               [v for v, _ in pts], [sc for _, sc in pts], S.rt.fixed_head)


def _certify(q, text, excluded, S: _Session, cuts):
    from fairspec.certify.smt import prove_unsat

    return prove_unsat(q, text, "unsat", solver=S.z3.version, cuts=cuts,
                                 excluded=[(fx, fxp, s) for _, _, s, (fx, fxp) in excluded],
                                 post=S.p.post, eps=S.judge.eps, eps_strict=S.eps_strict,
                                 decision_threshold=S.judge.t, runtime_error=S.claim[3], runtime_name=S.rt.name,
                                 sigmoid_of_logits=S.rt.score_kind == "logit", readout=S.rt.readout,
                                 precision=S.rt.precision, base_net=S.rt.base_net, runtime_net=S.rt.net,
                                 encoding=S.rt.encoding, fixed_head=S.rt.fixed_head,
                                 **({} if S.via is None else {"via": "equal logits", "logit_readout": list(S.via)}))


def _z_prime(q, fx, fxp):
    from fairspec.certify.pairlp.nodes import _exact_logit

    try:
        return _exact_logit(q.layers, fxp)
    except Exception:   # noqa: BLE001 - only a refinement hint
        return None


def _real_prob_measure(q, fx, fxp) -> float:
    from fairspec.certify.pairlp.nodes import _exact_logit
    from fairspec.models.network import sigmoid

    za, zb = float(_exact_logit(q.layers, fx)), float(_exact_logit(q.layers, fxp))
    return float(sigmoid(np.array([za]))[0] - sigmoid(np.array([zb]))[0])


def _real_measure(q, post, fx, fxp) -> Fraction | float:
    from fairspec.certify.pairlp.nodes import _exact_logit

    za, zb = _exact_logit(q.layers, fx), _exact_logit(q.layers, fxp)
    if post == "label":
        return min(za, -zb)
    if post == "logit":
        return za - zb
    return _real_prob_measure(q, fx, fxp)


def _run(problem, time_limit, rt, eps_strict, relaxed_strict, eps_text, body):
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    t0 = time.perf_counter()
    try:
        S = _Session(problem, rt, eps_strict, relaxed_strict, deadline, eps_text)
    except (ValueError, TypeError, AttributeError) as e:
        return PairResult("unknown", engine="z3", reason=f"no runtime error bound for this model: {e}",
                          seconds=time.perf_counter() - t0)
    S.t0 = t0
    return body(S)


def prove(problem: PairProblem, time_limit: float | None = None, runtime: Runtime | None = None,
          eps_strict: bool = False, relaxed_strict=(), eps_text=None, **_ignored) -> PairResult:
    """``holds`` (an exact-smt proof about the runtime), ``violated`` (a pair replayed on the runtime)
    or ``unknown``."""
    return _run(problem, time_limit, runtime, eps_strict, relaxed_strict, eps_text, lambda S: _decide(S, "prove"))


def find(problem: PairProblem, time_limit: float | None = None, runtime: Runtime | None = None,
         eps_strict: bool = False, relaxed_strict=(), eps_text=None, **_ignored) -> PairResult:
    """As :func:`prove` (the first sat model that replays is the witness)."""
    return _run(problem, time_limit, runtime, eps_strict, relaxed_strict, eps_text, lambda S: _decide(S, "find"))


def maximize(problem: PairProblem, time_limit: float | None = None, runtime: Runtime | None = None,
             eps_strict: bool = False, relaxed_strict=(), eps_text=None, start=None, **_ignored) -> PairResult:
    """The verdict and the interval [best replayed measure, certified upper bound] (module docs)."""
    return _run(problem, time_limit, runtime, eps_strict, relaxed_strict, eps_text, lambda S: _maximize(S, start))


def solve(problem: PairProblem, mode: str = "find", **kw) -> PairResult:
    fn = {"find": find, "prove": prove, "maximize": maximize}.get(mode)
    if fn is None:
        raise ValueError(f"mode must be find, prove or maximize, not {mode!r}")
    return fn(problem, **kw)


def _maximize(S: _Session, start) -> PairResult:
    from fairspec.certify.rounding import float_up
    from fairspec.certify.smt import input_names, prove_unsat, smtlib

    mode = "maximize"
    if start is not None:
        try:
            x, xp = (np.asarray(v, dtype=np.float64) for v in start)
            if S.in_domain(x, xp):
                S.replay(x, xp)
                S.replay(xp, x)
        except ValueError:
            pass
    verdict = _decide(S, mode)
    p = S.p
    # the first upper bound: intervals (certify's), or the proved claim
    from fairspec.certify.network import rigorous_ibp

    ibp = rigorous_ibp(p.net, p.lo, p.hi, p.onehot_groups) if True else None
    if ibp is None:
        return verdict
    zl, zh = float(ibp[-1][0][0]), float(ibp[-1][1][0])
    if p.post == "label":
        hi, lo_ibp = Fraction(min(zh, -zl)), Fraction(min(zl, -zh))
    elif p.post == "logit":
        hi, lo_ibp = Fraction(zh) - Fraction(zl), Fraction(zl) - Fraction(zh)
    else:
        hi, lo_ibp = Fraction(1), Fraction(-1)
    hi_proof = None
    if verdict.status == "holds" and verdict.proof is not None:
        hi = min(hi, Fraction(S.claim[1]))      # equal logits: every pair's real probabilities equal too
        hi_proof = verdict.proof
    lo = None                      # the best real measure of a model pair (label / logit), or a prob float
    rounds = 0
    reason = ""
    cuts: list[float] = []
    probe = False                   # the next query asks for a pair just above the best one
    refused = False                 # no pair reaches the best replayed measure in real arithmetic
    while rounds < MAX_ROUNDS:
        close = None if lo is None else max(Fraction(MEET) * max(1, abs(Fraction(lo))), Fraction(S.margin))
        if lo is not None and hi - Fraction(lo) <= close:
            break                   # closer than the runtime's error: the interval cannot shrink further
        if lo is None and refused:
            # the best replayed pair's measure was refused (the runtime's rounding lifted it above
            # every real pair's): bisect from the interval lower bound, which every pair reaches
            mid = (lo_ibp + hi) / 2
        elif lo is None:
            # any pair first: every pair reaches the interval lower bound of the measure
            mid = lo_ibp if S.best is None else max(lo_ibp, min(Fraction(S.best[0]), hi))
            if p.post == "prob" and S.best is not None:
                mid = (mid + hi) / 2
        elif probe:
            # after a better pair, first ask for one better still by more than the tolerance: on a
            # finite domain (integers, one-hot blocks) the best pair is often found early, and "unsat"
            # here ends the search in one query where bisection takes ~40 to close the interval
            mid = min(Fraction(lo) + close / 2, (Fraction(lo) + hi) / 2)
        else:
            mid = (Fraction(lo) + hi) / 2
        probe = False
        mid = Fraction(float(mid))           # a short rational
        if lo is not None and mid <= Fraction(lo):
            break
        if mid > hi:
            break
        rounds += 1
        try:
            q = S.query(mid, True)           # claim: measure < mid; the query: measure >= mid
        except ValueError as e:
            reason = f"the SMT query cannot be stated: {e}"
            break
        names = input_names(q)
        text = smtlib(q, cuts)
        status, vals = S.z3.check(text, set(names[0]) | set(names[1]))
        if status == "unsat":
            pr = prove_unsat(q, text, "unsat", solver=S.z3.version, cuts=cuts)
            if pr is None:
                reason = "certify refused an SMT answer"
                break
            hi, hi_proof = mid, pr
            refused = lo is None
            continue
        if status != "sat":
            reason = "time limit reached before the maximal violation was proved" if status == "timeout" \
                else f"solver error: {vals}"
            break
        x, xp, fx, fxp = _pair_of(q, vals, names)
        if S.in_domain(x, xp):
            S.replay(x, xp)
        m = _real_measure(q, p.post, fx, fxp)
        if Fraction(m) >= mid:
            probe = lo is None or Fraction(m) > Fraction(lo)
            lo = m if lo is None else max(Fraction(lo), Fraction(m))
            continue
        zp = _z_prime(q, fx, fxp)
        if p.post == "prob" and zp is not None and float(zp) not in cuts and len(cuts) < 64:
            cuts.append(float(zp))
            S.z3.stats["cuts"] += 1
            continue
        reason = "the piecewise bound of the logistic stalled"
        break
    U = float_up(Fraction(float_up(hi)) + Fraction(S.margin))
    if p.post == "prob":
        U = min(U, 1.0)
    best = S.best[0] if S.best is not None else None
    bw = S.best[1] if S.best is not None else None
    meet = best is not None and U - best <= MEET * max(1.0, abs(best))
    st = dict(verdict.stats)
    st.update(S.z3.stats)
    st["bound_proof"] = hi_proof.to_json() if hi_proof is not None else None
    kw = dict(value=best, bound=U, best=bw, stats=st, engine="z3", mode=mode,
              seconds=time.perf_counter() - S.t0)
    why = (f"maximal violation in [{best!r}, {U!r}] (best replayed on the runtime, certified upper bound)"
           if best is not None else f"certified upper bound {U!r}") + (f"; {reason}" if reason else "")
    if verdict.status == "violated":
        # the witness is the best pair when it breaks the property on the runtime (the largest violation
        # is a violation too): the caller reports its witness's measure, so the first violation found
        # would be the lower end, below the best, while "proved" said the best and the bound meet
        wit = bw if bw is not None and S.seen.get((tuple(bw.x), tuple(bw.x_prime)), (False,))[0] else verdict.witness
        return PairResult("violated", how="proved" if meet and wit is bw else None, witness=wit, reason=why,
                          proof=hi_proof, **kw)
    if verdict.status == "holds":
        return PairResult("holds", how="proved", reason=why, proof=verdict.proof, **kw)
    return PairResult("unknown", reason=verdict.reason + "; " + why, **kw)
