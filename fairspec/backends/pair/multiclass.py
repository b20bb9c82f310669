"""Individual fairness of a multiclass network (issue 25): the predicted class must not change.

A K-output network ``y`` (logits, or the logits under a softmax the file holds: the softmax does
not change the argmax in exact arithmetic, and the runtime's class is read from the runtime's own
outputs) predicts ``class(x) = argmax_k y_k(x)``, ties broken as numpy's and onnxruntime's ArgMax
break them: the **first** largest column.

Post ``class``: a pair ``(x, x')`` meeting the pre-condition violates when ``class(x) != class(x')``.
By the pre-condition's symmetry a violation exists iff for some class ``c`` a pair has
``class(x) = c != class(x')``. With the class score ``g_c(x) = min_{j != c} (y_c - y_j)``
(:func:`fairspec.certify.network.argmax_layers`: an ordinary ReLU network, the margins folded
into the last layer exactly and the minimum a small tree of ReLUs) that is the binary ``label``
post on ``g_c``: ``g_c(x) > 0 >= g_c(x')``. So the K sub-problems are ordinary
:class:`~fairspec.backends.pair.PairProblem` s and every pair engine (MILP HiGHS / SCIP, exact
SMT, the certified branch and bound) solves them unchanged:

* ``find`` / ``prove``: the sub-problems in turn; the first witness that *replays on the runtime*
  (the class of each side by the exact argmax rule on the runtime's outputs) is ``violated``;
  ``holds`` only when every sub-problem holds with a certify Proof -- the runtime readout
  ``("argmax", c)`` bounds the runtime's error on ``g_c`` by the largest margin error (each margin
  ``y_c - y_j`` as the two-column margin readout; certify checks that the proof's network is
  exactly the class score of the K-output network) -- and :func:`fairspec.certify.network.
  prove_class_stable` joins the K proofs into one. A class the solver leaves at a tie goes to the
  caller's ``at_tie`` (the refinement over the whole domain on the runtime's argmax,
  :meth:`ClassProblem.class_scores`). Anything less is ``unknown`` with the reason.
* ``maximize``: the measure of a pair is the label post's flip margin on the class score,
  ``max_c min(g_c(x), -g_c(x'))``: how far ``x`` is inside its class ``c`` (its winning margin
  over the runner-up) and ``x'`` outside it (how much ``x'`` prefers another class); positive iff
  the class changes (up to ties). The result is [best replayed value, certified bound]: the
  largest value and the largest certified bound over the classes.

Post ``class_prob`` (``|p_c(x) - p_c(x')| <= eps`` for softmax probabilities): for K = 2 it is the
binary ``prob`` post on the margin ``y_c - y_{1-c}`` (exact); for K > 2 the softmax is not
piecewise linear and no solver path encodes it: ``unknown`` here (small domains are decided by
enumeration on the runtime, :mod:`fairspec.kinds.pair_enumeration`; larger ones by certify's softmax
branch and bound, :mod:`fairspec.kinds.class_prob` and :mod:`fairspec.certify.class_prob`).

Post ``value`` (a regression network, one output, identity readout) needs nothing here: it is the
``logit`` post's arithmetic on that output (``|v(x) - v(x')| <= eps``, maximize the interval
[best, certified bound]); :func:`value_problem` only names it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from fairspec.backends.pair import PairProblem, PairResult, make_witness, precondition_holds
from fairspec.models.network import Layer, PLNet

__all__ = ["ClassProblem", "class_net", "solve_class", "brute_force_class", "class_of", "value_problem",
           "CLASS_POSTS"]

CLASS_POSTS = ("class", "class_prob")


def class_of(Y) -> np.ndarray:
    """The predicted class of output rows Y (k, K): the first largest column."""
    return np.argmax(np.asarray(Y), axis=1)


def class_net(net: PLNet, c: int) -> PLNet:
    """The class score ``g_c`` of a K-output network as a one-output PLNet (ValueError when a
    margin is not exact in float64)."""
    from fairspec.certify.network import argmax_layers

    return PLNet(tuple(Layer(W, b, relu) for W, b, relu in argmax_layers(net, c)), 0, "none", net.source)


@dataclass(frozen=True, eq=False)
class ClassProblem:
    """A pair problem about a K-output network's predicted class.

    net:      the K-output network (feature space: the encoding folded in, as for
              :class:`PairProblem`); ``final`` none or softmax (read as its logits).
    pre:      the pre-condition and domain as a :class:`PairProblem` on any one-output network
              (its ``net`` and ``post`` are replaced per class).
    post:     ``"class"`` | ``"class_prob"``; ``cls``: the class of ``class_prob`` (None: every class).
    runtime:  a :class:`fairspec.backends.pair.certify.Runtime` of the K-output runtime (its
              ``layers`` every output column, ``readout`` ignored) or None (the network's float64
              forward is the runtime); its ``replay(x, x')`` decides the pair on the runtime.
    outputs:  feature-space batch (k, n) -> the runtime's K outputs (k, K), for the SMT engine's
              replay and the refinement's enumeration; default the network in the runtime's precision.
    """

    net: PLNet
    pre: PairProblem
    post: str = "class"
    cls: int | None = None
    runtime: object = None
    outputs: Callable | None = field(default=None, compare=False)
    #: ``unsure(points, scores, pairs)`` of the class scores' BatchScorer (another batch of a float runtime
    #: may pick another class for an individual); None: the runtime scores every batch alike
    unsure: Callable | None = field(default=None, compare=False)
    #: ``predict(X)``: the runtime's own class (column indices) of a feature-space batch where its library
    #: decides the class otherwise than the first largest of ``outputs`` (a scikit-learn classifier's predict:
    #: an SVC's votes, a linear model's decision function under a softmax that rounds two classes to one
    #: probability); the refinement's enumeration counts an individual whose class ``c`` the outputs' argmax
    #: reads otherwise than predict in some case unsure (never fair, never unfair); None: the argmax is the class
    predict: Callable | None = field(default=None, compare=False)

    def __post_init__(self):
        K = self.net.layers[-1].n_out
        if K < 2:
            raise ValueError("a class post needs a network with at least two outputs")
        if self.post not in CLASS_POSTS:
            raise ValueError(f"post must be one of {CLASS_POSTS}, not {self.post!r}")
        if self.cls is not None and not 0 <= self.cls < K:
            raise ValueError(f"class {self.cls} out of range for {K} outputs")

    @property
    def K(self) -> int:
        return self.net.layers[-1].n_out

    def forward_all(self, X) -> np.ndarray:
        if self.outputs is not None:
            return np.asarray(self.outputs(np.atleast_2d(X)), dtype=np.float64)
        rt = self.runtime
        dt = np.float32 if (rt is not None and getattr(rt, "precision", "") == "float32") else np.float64
        return self.net.forward_all(np.atleast_2d(X), dtype=dt)

    def violates(self, x, xp) -> bool:
        """Does the pair break ``class`` on the runtime (exact argmax of its outputs)?"""
        rt = self.runtime
        if rt is not None and getattr(rt, "replay", None) is not None:
            return bool(rt.replay(x, xp))
        ok, _ = precondition_holds(self.pre, x, xp, tol=0.0)
        if not ok:
            return False
        k = class_of(self.forward_all(np.vstack([x, xp])))
        return bool(k[0] != k[1])

    def sub(self, c: int) -> PairProblem:
        """The label sub-problem of class ``c`` (``g_c(x) > 0 >= g_c(x')``)."""
        from fairspec.backends.pair.certify import Runtime

        rt = self.runtime
        replay = lambda x, xp: self.violates(x, xp)        # noqa: E731
        if rt is None:
            layers = [(L.W, L.b, L.relu) for L in self.net.layers]
            rt_c = Runtime(layers, None, ("argmax", c), "float64", replay=replay, base_net=self.net,
                           scores=self.class_scores(c))
        else:
            rt_c = Runtime(rt.layers, rt.encoding, self.readout(c), rt.precision, rt.why_not, replay, self.net,
                           self.class_scores(c))
        return replace(self.pre, net=class_net(self.net, c), post="label", eps=0.0, eps_strict=False, runtime=rt_c)

    def class_scores(self, c: int):
        """The runtime's class-``c`` scores of many points (a :class:`~fairspec.backends.pair.certify.BatchScorer`
        for the refinement's enumeration): the runtime's K outputs, from which certify reads class c itself
        (readout ``("argmax", c)``: :func:`fairspec.certify.enumerate.class_scores_of`, positive exactly when
        c is the first largest column; the ``label`` post at 0); None when the runtime's outputs are not to
        hand (a runtime without ``outputs`` other than the network's own float64 forward)."""
        from fairspec.backends.pair.certify import BatchScorer

        if self.outputs is None and self.runtime is not None:
            return None
        return BatchScorer(self.forward_all, "label", 0.0, self.class_unsure(c), readout=self.readout(c))

    def class_unsure(self, c: int):
        """``unsure(points, scores, pairs)`` of class ``c``'s scorer: :attr:`unsure`, and with :attr:`predict`
        every individual for which, under some case, "the class is c" by the outputs' argmax (its class score
        ``scores[k] > 0``) is not what predict says (or the score is NaN): counting it by the argmax would
        decide on a class the model does not predict."""
        base, predict = self.unsure, self.predict
        if predict is None:
            return base

        def unsure(points, scores, pairs) -> np.ndarray:
            n = int(np.asarray(scores[0]).shape[0])
            out = np.zeros(n, dtype=bool) if base is None else np.asarray(base(points, scores, pairs), dtype=bool)
            for P, g in zip(points, scores):
                if not n:
                    break
                g = np.asarray(g, dtype=np.float64).reshape(-1)
                k = np.asarray(predict(P)).reshape(-1)
                out = out | np.isnan(g) | ((g > 0) != (k == c))
            return out

        return unsure

    def readout(self, c: int) -> tuple:
        """The class readout of class ``c``: ``("argmax", c)``, or ``("argmax", c, "softmax")`` when the
        runtime (``runtime.readout``, ``("argmax", 0, "softmax")``) compares its softmax probabilities
        (:mod:`fairspec.certify.argmax`: the error bound then carries the softmax's margin)."""
        rt = self.runtime
        soft = rt is not None and len(rt.readout) == 3 and rt.readout[0] == "argmax" and rt.readout[2] == "softmax"
        return ("argmax", c, "softmax") if soft else ("argmax", c)

    def smt_runtime(self, c: int):
        """The SMT engine's runtime of class ``c``: scores ``argmax_class_score`` of the outputs."""
        from fairspec.backends.smt.exact import Runtime as SmtRuntime
        from fairspec.certify.network import argmax_class_score

        rt = self.runtime
        layers = rt.layers if rt is not None else [(L.W, L.b, L.relu) for L in self.net.layers]
        enc = rt.encoding if rt is not None else None
        prec = rt.precision if rt is not None else "float64"
        return SmtRuntime(layers, enc, self.readout(c), prec, lambda V: argmax_class_score(self.forward_all(V), c),
                          "logit", f"class {c} of the runtime", self.net)


def value_problem(pre: PairProblem, eps: float, eps_strict: bool = False) -> PairProblem:
    """``|value(m(x)) - value(m(x'))| <= eps`` of a one-output regression network (``pre.net``):
    the ``logit`` post on its output (identity readout)."""
    return replace(pre, post="logit", eps=float(eps), eps_strict=bool(eps_strict))


# ---------------------------------------------------------------------------------------------
# Ground truth
# ---------------------------------------------------------------------------------------------

def brute_force_class(problem: ClassProblem, max_pairs: int = 20_000_000) -> PairResult:
    """Every admissible pair of a small integral domain judged on ``problem.forward_all`` (the
    runtime) by the argmax rule: ``violated`` with a witness or ``holds`` (a test oracle; no Proof)."""
    from fairspec.backends.pair.problem import _factors, _product

    t0 = time.perf_counter()
    p = problem.pre
    vary = [i for i in range(p.n) if i not in set(p.tied)]
    tgrid = _product(p.n, _factors(p, p.tied))
    vgrid = _product(p.n, _factors(p, vary))
    T, V = tgrid.shape[0], vgrid.shape[0]
    if T * V * V > max_pairs:
        raise ValueError(f"brute force over {T * V * V} pairs exceeds {max_pairs}")
    valid = np.ones((V, V), dtype=bool)
    for i, t in p.relaxed:
        valid &= np.abs(vgrid[:, i][:, None] - vgrid[:, i][None, :]) <= t
    if p.must_differ:
        diff = np.zeros((V, V), dtype=bool)
        for i in p.must_differ:
            diff |= vgrid[:, i][:, None] != vgrid[:, i][None, :]
        valid &= diff
    count = 0
    wit = None
    for t in range(T):
        X = tgrid[t][None, :] + vgrid
        k = class_of(problem.forward_all(X))
        viol = (k[:, None] != k[None, :]) & valid
        n = int(viol.sum())
        if n and wit is None:
            a, b = np.unravel_index(int(np.argmax(viol)), viol.shape)
            wit = make_witness(p, X[a], X[b])
        count += n
    secs = time.perf_counter() - t0
    if count:
        return PairResult("violated", None, None, None, wit, "", secs, engine="brute", mode="prove",
                          stats={"violations": count})
    return PairResult("holds", "proved", None, None, None, "exhaustive enumeration", secs, engine="brute",
                      mode="prove", stats={"violations": 0})


# ---------------------------------------------------------------------------------------------
# Solving
# ---------------------------------------------------------------------------------------------

def _engine_solve(sub: PairProblem, problem: ClassProblem, c: int, mode: str, engine: str,
                  time_limit: float | None) -> PairResult:
    if engine == "z3":
        from fairspec.backends.smt import exact as smt_exact

        return smt_exact.solve(sub, mode, time_limit=time_limit, runtime=problem.smt_runtime(c))
    from fairspec.backends import milp

    return milp.solve(sub, mode, engine=engine, time_limit=time_limit)


def attack_class(problem: ClassProblem, engine: str, mode: str, t0: float) -> PairResult | None:
    """A pair whose class changes on the runtime (``problem.violates``: the replay) found by sampling,
    signed-gradient ascent and coordinate search on each g_c, as a ``violated`` result; None when the
    attack finds none. It needs no runtime error bound (the replay is the evidence)."""
    from fairspec.backends.milp.falsify import best_pair

    for c in range(problem.K):
        try:
            pair = best_pair(problem.sub(c), samples=512, steps=20, starts=8, seed=c)
        except ValueError:
            pair = None
        if pair is not None and problem.violates(*pair):
            w = make_witness(problem.sub(c), *pair)
            return PairResult("violated", value=float(min(w.z, -w.z_prime)), witness=w, best=w,
                              seconds=time.perf_counter() - t0, engine=engine, mode=mode,
                              stats={"classes": problem.K, "per_class": [], "attack": f"class {c}"},
                              reason=f"the predicted class changes (class {c} on one side; found by the attack "
                                     f"before the solver)")
    return None


def solve_class(problem: ClassProblem, mode: str = "prove", engine: str = "highs",
                time_limit: float | None = None, at_tie: Callable | None = None) -> PairResult:
    """Decide (``find`` / ``prove``) or bound (``maximize``) the class post (module docstring).
    ``engine``: ``highs`` | ``scip`` (MILP, certified by the branch and bound) | ``z3`` (exact SMT).
    ``at_tie(sub, result, seconds)``: find / prove, a class the solver left undecided (``unknown``, or
    a pair that does not change the class on the runtime) decided again, or ``result`` unchanged
    (the caller's refinement at a tie: ``holds`` only with certify's Proof, ``violated`` replayed
    here again)."""
    if mode not in ("find", "prove", "maximize"):
        raise ValueError(f"mode must be find, prove or maximize, not {mode!r}")
    t0 = time.perf_counter()
    if problem.post == "class_prob":
        return _solve_class_prob(problem, mode, engine, time_limit, t0)
    deadline = None if time_limit is None else t0 + float(time_limit)
    K = problem.K
    results: dict[int, PairResult] = {}
    reasons = []
    best_val, best_w, bounds = -math.inf, None, []
    stats = {"classes": K, "per_class": []}

    def left():
        return None if deadline is None else max(0.0, deadline - time.perf_counter())

    def done(status, **kw):
        return PairResult(status, seconds=time.perf_counter() - t0, engine=engine, mode=mode, stats=stats, **kw)

    if mode != "maximize":
        # a cheap attack first: a pair whose class changes on the runtime decides the property before any solver
        found = attack_class(problem, engine, mode, t0)
        if found is not None:
            return found
    for c in range(K):
        if deadline is not None and left() <= 0:
            reasons.append(f"class {c}: time limit reached")
            results[c] = None
            continue
        try:
            sub = problem.sub(c)
        except ValueError as e:
            return done("unknown", reason=f"no class score for class {c}: {e}")
        # the time left, shared evenly by the classes left (what one does not use carries over)
        r = _engine_solve(sub, problem, c, mode, engine, None if deadline is None else left() / (K - c))
        results[c] = r
        stats["per_class"].append({"class": c, "status": r.status, "seconds": round(r.seconds, 4),
                                   "value": r.value, "bound": r.bound})
        replayed = False
        if at_tie is not None and mode != "maximize" and (
                r.status == "unknown" or r.status == "violated" and not (
                    r.witness is not None and problem.violates(r.witness.x, r.witness.x_prime))):
            r = at_tie(sub, r, left())
            results[c] = r
            stats["per_class"][-1]["at_a_tie"] = r.status
        if r.status == "violated":
            w = r.witness
            replayed = w is not None and problem.violates(w.x, w.x_prime)
            if replayed and mode != "maximize":
                return done("violated", value=r.value, witness=w, best=w,
                            reason=f"the predicted class changes (class {c} on one side)")
            if not replayed:
                reasons.append(f"class {c}: the solver's pair does not change the class on the runtime")
                results[c] = None
        elif r.status == "unknown":
            reasons.append(f"class {c}: {r.reason}")
        if mode == "maximize":
            if r.value is not None and math.isfinite(r.value) and r.value > best_val and \
                    (replayed or r.status == "holds"):
                best_val = r.value
                best_w = r.witness if r.witness is not None else r.best
            bounds.append(r.bound if r.bound is not None else math.inf)
    if mode == "maximize":
        bound = max(bounds) if len(bounds) == K else math.inf
        viol = [results[c] for c in range(K) if results.get(c) is not None and results[c].status == "violated"]
        if viol:
            w = max(viol, key=lambda r: r.value if r.value is not None else -math.inf)
            meet = math.isfinite(bound) and w.value is not None and bound - w.value <= 1e-7 * max(1.0, abs(w.value))
            return done("violated", how="proved" if meet else None, value=w.value, bound=bound,
                        witness=w.witness, best=w.witness, reason="; ".join(reasons))
    if all(results.get(c) is not None and results[c].status == "holds" and results[c].proof is not None
           for c in range(K)):
        from fairspec.certify.network import prove_class_stable

        proof = prove_class_stable({c: results[c].proof for c in range(K)}, K)
        if proof is not None:
            kw = {}
            if mode == "maximize":     # best: the pair the caller replays on the runtime for the lower end
                kw = {"value": best_val, "bound": max(bounds), "best": best_w}
            return done("holds", how="proved", proof=proof, reason="certified: " + proof.summary, **kw)
    kw = {"value": best_val if math.isfinite(best_val) else None,
          "bound": (max(bounds) if len(bounds) == K else None)} if mode == "maximize" else {}
    return done("unknown", best=best_w, reason="; ".join(reasons) or "not every class could be certified", **kw)


def _solve_class_prob(problem: ClassProblem, mode, engine, time_limit, t0) -> PairResult:
    K = problem.K
    if K > 2:
        return PairResult("unknown", reason=f"a softmax over {K} classes is not piecewise linear: no solver path "
                          "decides |p_c(x) - p_c(x')| (small domains are enumerated on the runtime)",
                          seconds=time.perf_counter() - t0, engine=engine, mode=mode)
    return PairResult("unknown", reason="class_prob on two classes: use the binary prob post (index = c)",
                      seconds=time.perf_counter() - t0, engine=engine, mode=mode)
