"""The exact SMT query of a pair question, written by certify, and the ``exact-smt`` proof.

certify cannot import a solver, so it does not run one: it *writes* the question an exact
decision procedure is asked -- SMT-LIB 2 text in linear integer/real arithmetic -- and mints a
proof only for an ``unsat`` answer to exactly that text. The SMT backend
(:mod:`fairspec.backends.smt`) hands the text to z3 unchanged and brings the answer back;
:func:`prove_unsat` renders the query again from the :class:`~fairspec.certify.pairlp.PairQuery`
and refuses any other text. What is trusted: z3's ``unsat`` on the text (an exact procedure over
the rationals; no floating point is involved in its answer) and the transport of its answer.

The text (:func:`smtlib`) says "some pair of the box violates the query's claim":

* inputs ``x_i`` / ``xp_i`` (``Int`` for integral inputs, else ``Real``; a tied input is one
  constant shared by both copies), their bounds, the one-hot groups (exactly one), the relaxed
  inputs ``-t <= xp_i - x_i <= t``, and ``must_differ`` (some protected input differs);
* every layer ``p = W h + b`` with every weight, bias and bound the *exact rational of its float*
  (the float32 numbers of the runtime's file are exactly those rationals), every ReLU
  ``h = ite(p >= 0, p, 0)`` exactly; a neuron no non-tied input reaches is shared by the copies;
* implied hints: certify's own outward-rounded interval bounds ``l <= p <= u`` (rigorous, so
  implied), widened to multiples of 2**-12 (short rationals are cheaper for z3: 12.0 s -> 2.5 s
  on 16 queries of 3-4-3-1 nets); a ReLU the bounds decide is ``h = p`` or ``0``. The triangle
  relaxation is *not* asserted: with exact coefficients it is sound, but it made z3 slower
  (2.5 s -> 0.5 s without it on the same queries; 180 s -> 67 s on 5-10-8-1 nets);
* the violated claim, with the strictness the claim has: ``label`` (claim ``min(z, -z') < T``)
  ``z >= T and z' <= -T``; (claim ``<= T``) ``z > T and z' < -T``; ``logit`` ``z - z' >= T`` /
  ``> T``; ``prob`` (not linear) an over-approximation of ``sigmoid(z) - sigmoid(z') >= T``:
  ``z - z' >= 4T`` (sigmoid is 1/4-Lipschitz; when ``T > 0``) and, over pieces
  ``[c_k, c_k+1]`` covering the interval bounds of ``z'``, ``z >= g_k`` with ``g_k`` a rigorous
  lower bound of ``logit(sigmoid(c_k) + T)`` (:func:`~fairspec.certify.pairlp.prob_threshold_low`).
  The cut points are part of the text: any points give a sound query (more points: tighter).

``unsat`` then proves the claim for every pair in real arithmetic over the network's exact
numbers; the caller moves the threshold outward by the runtime's error bound first
(:func:`fairspec.certify.pairlp.moved_threshold`), so the proof covers the runtime's floats.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction
from typing import Sequence

import numpy as np

from fairspec.certify.network import rigorous_ibp
from fairspec.certify.pairlp import PairQuery, prob_threshold_low
from fairspec.certify.proof import Proof, _mint

__all__ = ["smtlib", "prove_unsat", "lit", "input_names"]


def lit(q) -> str:
    """An exact SMT-LIB real literal of a rational (a float read bit for bit)."""
    if not isinstance(q, Fraction):
        f = float(q)
        if not math.isfinite(f):
            raise ValueError("an SMT constant must be finite")
        q = Fraction(f)
    n, d = q.numerator, q.denominator
    s = f"{abs(n)}.0" if d == 1 else f"(/ {abs(n)}.0 {d}.0)"
    return f"(- {s})" if n < 0 else s


def _ilit(v: int) -> str:
    return f"(- {abs(v)})" if v < 0 else str(v)


_GRID = 1 << 12


def _coarse_down(v) -> Fraction:
    """A short rational <= v (multiples of 2**-12): the hints stay implied and cheap for z3."""
    return Fraction(math.floor(Fraction(float(v)) * _GRID), _GRID)


def _coarse_up(v) -> Fraction:
    return Fraction(math.ceil(Fraction(float(v)) * _GRID), _GRID)


def input_names(q: PairQuery) -> tuple[list[str], list[str]]:
    """The SMT constants of x and x' (a tied input has one name for both copies)."""
    tied = set(q.tied)
    xs = [f"x{i}" for i in range(q.n)]
    xps = [xs[i] if i in tied else f"xp{i}" for i in range(q.n)]
    return xs, xps


def smtlib(q: PairQuery, cuts: Sequence[float] = (), prob_pieces: int = 16, excluded: Sequence = ()) -> str:
    """The SMT-LIB 2 text of "some pair of the box violates the claim of ``q``" (see the module
    docstring). ``cuts``: extra cut points on ``z'`` for the prob post (floats); ``excluded``:
    ordered pairs ``(x, x')`` (exact rationals) the text leaves out."""
    out = ["(set-option :produce-models true)"]
    decl, asr = [], []
    xs, xps = input_names(q)
    ints = q.integer
    terms = [[], []]
    for c, names in ((0, xs), (1, xps)):
        for i, nm in enumerate(names):
            if c == 1 and nm == xs[i]:
                terms[1].append(terms[0][i])
                continue
            if ints[i]:
                decl.append(f"(declare-const {nm} Int)")
                asr.append(f"(<= {_ilit(int(q.lo[i]))} {nm})")
                asr.append(f"(<= {nm} {_ilit(int(q.hi[i]))})")
                terms[c].append(f"(to_real {nm})")
            else:
                decl.append(f"(declare-const {nm} Real)")
                asr.append(f"(<= {lit(q.lo[i])} {nm})")
                asr.append(f"(<= {nm} {lit(q.hi[i])})")
                terms[c].append(nm)
    fs = set(q.free)
    for g in q.onehot_groups:
        asr.append(f"(= (+ {' '.join(terms[0][i] for i in g)} 0.0) 1.0)")
        if fs.issuperset(g):
            asr.append(f"(= (+ {' '.join(terms[1][i] for i in g)} 0.0) 1.0)")
    for i, t in q.relaxed:
        d = f"(- {terms[1][i]} {terms[0][i]})"
        asr.append(f"(<= {d} {lit(t)})")
        asr.append(f"(<= {lit(-Fraction(float(t)))} {d})")
    if q.must_differ:
        asr.append("(or " + " ".join(f"(not (= {xs[i]} {xps[i]}))" for i in q.must_differ) + " false)")
    ibp = rigorous_ibp(q.layers, q.lo, q.hi, q.onehot_groups)
    if ibp is None:
        asr.append("false")
        zs = ("0.0", "0.0")
        zbox = (0.0, 0.0)
    else:
        varies = np.array([i not in set(q.tied) for i in range(q.n)])
        hin = terms
        for k, (W, b, relu) in enumerate(q.layers):
            plo, phi = ibp[k]
            nxt = [[], []]
            vout = np.zeros(W.shape[0], dtype=bool)
            for j in range(W.shape[0]):
                row = W[j]
                nz = np.flatnonzero(row)
                vj = bool(np.any(varies[nz])) if nz.size else False
                vout[j] = vj
                l, u = _coarse_down(plo[j]), _coarse_up(phi[j])
                for c in (0, 1):
                    if c == 1 and not vj:
                        nxt[1].append(nxt[0][j])
                        continue
                    parts = [f"(* {lit(row[i])} {hin[c][i]})" for i in nz if hin[c][i] != "0.0"]
                    expr = f"(+ {' '.join(parts)} {lit(b[j])})" if parts else lit(b[j])
                    p = f"p{c}_{k}_{j}"
                    decl.append(f"(declare-const {p} Real)")
                    asr.append(f"(= {p} {expr})")
                    asr.append(f"(<= {lit(l)} {p})")
                    asr.append(f"(<= {p} {lit(u)})")
                    if not relu:
                        nxt[c].append(p)
                        continue
                    if u <= 0:
                        nxt[c].append("0.0")
                        continue
                    if l >= 0:
                        nxt[c].append(p)
                        continue
                    h = f"h{c}_{k}_{j}"
                    decl.append(f"(declare-const {h} Real)")
                    asr.append(f"(= {h} (ite (>= {p} 0.0) {p} 0.0))")
                    nxt[c].append(h)
            hin = nxt
            varies = vout
        zs = (hin[0][0], hin[1][0])
        zbox = (float(ibp[-1][0][0]), float(ibp[-1][1][0]))
    z, zp = zs
    T = q.threshold
    if q.post == "label":
        if q.strict:
            asr += [f"(>= {z} {lit(T)})", f"(<= {zp} {lit(-T)})"]
        else:
            asr += [f"(> {z} {lit(T)})", f"(< {zp} {lit(-T)})"]
    elif q.post == "logit":
        asr.append(f"({'>=' if q.strict else '>'} (- {z} {zp}) {lit(T)})")
    else:
        asr += _prob_violation(z, zp, T, zbox, cuts, prob_pieces)
    for fx, fxp in excluded:
        asr.append(_block(q, xs, xps, fx, fxp))
    out += decl
    out += [f"(assert {a})" for a in asr]
    out.append("(check-sat)")
    return "\n".join(out) + "\n"


def _block(q: PairQuery, xs, xps, fx, fxp) -> str:
    """``not (x == fx and x' == fxp)``; ``fx`` None: ``not (x' == fxp)``, ``fxp`` None: ``not (x == fx)``."""
    eqs = []
    for c, names, vals in ((0, xs, fx), (1, xps, fxp)):
        if vals is None:
            continue
        for i, nm in enumerate(names):
            if c == 1 and nm == xs[i] and fx is not None:
                continue
            v = Fraction(vals[i])
            if q.integer[i]:
                if v.denominator != 1:
                    continue                        # never equal: the conjunction is false anyway
                eqs.append(f"(= {nm} {_ilit(int(v))})")
            else:
                eqs.append(f"(= {nm} {lit(v)})")
    return "(not (and " + " ".join(eqs) + " true))"


def _prob_violation(z: str, zp: str, T: Fraction, zbox, cuts, pieces: int) -> list[str]:
    """An over-approximation of ``sigmoid(z) - sigmoid(z') >= T`` (see the module docstring)."""
    if T >= 1:
        return ["false"]
    out = []
    if T > 0:
        out.append(f"(>= (- {z} {zp}) {lit(4 * T)})")
    lo, hi = zbox
    pts = {float(v) for v in np.linspace(lo, hi, max(2, pieces + 1))}
    pts |= {float(c) for c in cuts if lo < float(c) < hi}
    pts = sorted(pts | {lo, hi})
    ors = []
    for a, b in zip(pts[:-1], pts[1:]):
        g = prob_threshold_low(a, T)
        if g == math.inf:
            continue                       # sigmoid(z') + T >= 1 on this piece: no violation
        conj = [f"(<= {lit(a)} {zp})", f"(<= {zp} {lit(b)})"]
        if g != -math.inf:
            conj.append(f"(>= {z} {lit(g)})")
        ors.append("(and " + " ".join(conj) + ")")
    out.append("(or " + " ".join(ors) + " false)")
    return out


def _fair_on_runtime(post: str, s, eps, eps_strict: bool, decision_threshold, sigmoid_of_logits=False) -> bool:
    """Is the ordered pair with runtime scores ``s`` = (s, s') fair, exactly as the spec writes it?
    ``sigmoid_of_logits``: the scores are logits and the post compares their logistic values
    (decided by rigorous outward bounds of the logistic; undecidable ones are not fair)."""
    from fairspec.certify.enumerate import compare_exact
    from fairspec.certify.exact import decide, threshold_of
    from fairspec.certify.rounding import sigmoid_down, sigmoid_up

    if sigmoid_of_logits and post == "prob":
        if not all(math.isfinite(float(v)) for v in s):
            return False
        d_hi = float(np.nextafter(sigmoid_up(float(s[0])) - sigmoid_down(float(s[1])), np.inf))
        return decide(d_hi, "<" if eps_strict else "<=", threshold_of(eps))

    a = np.asarray([s[0]], dtype=np.float64)
    b = np.asarray([s[1]], dtype=np.float64)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return False
    if post == "label":
        return bool(compare_exact(a, "<=", decision_threshold)[0] or compare_exact(b, ">", decision_threshold)[0])
    return bool(compare_exact(a, "<" if eps_strict else "<=", eps, minus=b)[0])


def prove_unsat(q: PairQuery, text: str, answer: str, *, solver: str, claim: str | None = None,
                cuts: Sequence[float] = (), prob_pieces: int = 16, excluded: Sequence = (), post: str | None = None,
                eps=None, eps_strict: bool = False, decision_threshold=0, sigmoid_of_logits: bool = False,
                readout=None, precision: str | None = None, base_net=None, runtime_net=None, encoding=None,
                fixed_head: bool = False, **detail) -> Proof | None:
    """An ``exact-smt`` Proof when ``text`` is exactly certify's query for ``q`` (:func:`smtlib` with
    the same cut points and excluded pairs) and the exact solver ``solver`` answered ``unsat`` on
    it; None otherwise.

    ``excluded``: ``(x, x', scores)`` -- ordered pairs the query leaves out, each with the two
    scores the model's runtime gave it (``x``, ``x'`` exact floats, as replayed), or for a label
    a single point: ``(x, None, scores)`` (x is not positive on the runtime: no ordered pair
    starting at x flips) / ``(None, x', scores)`` (x' is positive); certify checks that each is
    fair on the runtime (``post``, ``eps`` as the spec writes it, ``eps_strict``,
    ``decision_threshold`` of a label) before it accepts the text, and that the runtime gives each
    point those scores in EVERY batch size and order (:func:`fairspec.certify.exact_runtime.
    scored_in_every_order` on ``runtime_net``, ``encoding``, ``precision``, ``readout``,
    ``fixed_head``): a pair one batch scores fair may be scored unfair by another (torch picks other
    kernels for other batch sizes), so without that evidence no pair is left out. The proof is then about the
    runtime: every other pair is covered by the SMT answer (with the caller's threshold moved
    outward by the runtime error, ``detail["runtime_error"]``).

    The proof records its box and pair question (``detail["box"]``, ``detail["pair"]``) and, given
    ``post``, ``eps``, ``detail["runtime_error"]``, ``readout`` and ``precision``, the runtime claim
    its threshold was moved to (``detail["runtime"]``, :func:`fairspec.certify.claims.runtime_record`):
    what :func:`fairspec.certify.partitions.combine_partitions` needs.

    A class readout ``("argmax", c)`` is checked, not taken on trust: ``base_net`` (the K-output
    network) must be given and the query's network must be exactly
    :func:`fairspec.certify.network.argmax_layers` ``(base_net, c)`` (compared by fingerprint), so a
    query of another class, or of another network, never carries the readout of class ``c``; the
    proof records the K-output network's fingerprint (``detail["base_net"]``)."""
    if answer != "unsat":
        return None
    if readout is not None and readout[0] == "argmax":
        base_sha = q.class_base(readout, base_net)
        if base_sha is None:
            return None
        detail["base_net"] = base_sha
    from fairspec.certify.enumerate import compare_exact
    from fairspec.certify.exact_runtime import scored_in_every_order

    pairs = []
    for fx, fxp, scores in excluded:
        pts = [(v, sc) for v, sc in ((fx, scores[0]), (fxp, scores[1])) if v is not None]
        if runtime_net is None or not pts or not scored_in_every_order(
                runtime_net, encoding, precision, readout, [[float(a) for a in v] for v, _ in pts],
                [sc for _, sc in pts], fixed_head):
            return None                             # the runtime may score it otherwise in another batch
        fx = None if fx is None else [Fraction(v) for v in fx]
        fxp = None if fxp is None else [Fraction(v) for v in fxp]
        if fx is None and fxp is None:
            return None
        if any(Fraction(float(v)) != v for v in (fx or []) + (fxp or [])):
            return None                             # not the float point the runtime evaluated
        if fx is None or fxp is None:
            # a label point: as x it is not positive (no ordered pair starting there flips), as x'
            # it is positive (no ordered pair ending there flips) -- on the runtime, exactly
            if post != "label":
                return None
            v = np.asarray([scores[0] if fxp is None else scores[1]], dtype=np.float64)
            if not np.all(np.isfinite(v)) or not compare_exact(v, "<=" if fxp is None else ">",
                                                               decision_threshold)[0]:
                return None
        elif post is None or not _fair_on_runtime(post, scores, 0 if eps is None else eps, eps_strict,
                                                  decision_threshold, sigmoid_of_logits):
            return None
        pairs.append((fx, fxp))
    mine = smtlib(q, cuts, prob_pieces, pairs)
    if text != mine:
        return None
    sha = hashlib.sha256(mine.encode()).hexdigest()
    if claim is None:
        claim = q.describe() + " (in exact real arithmetic)"
        if pairs:
            claim += f", except {len(pairs)} pairs each evaluated on the runtime and fair"
    if post is not None and post == q.post and eps is not None and readout is not None and precision is not None \
            and detail.get("runtime_error") is not None:
        from fairspec.certify.claims import runtime_record

        detail["runtime"] = runtime_record(eps, eps_strict, float(detail["runtime_error"]), readout, precision)
    if readout is not None:                         # which output the proof bounds (a class: ("argmax", c))
        detail["readout"] = [v if isinstance(v, str) else int(v) for v in readout]
    return _mint("exact-smt", claim, solver=solver, query_sha256=sha, assertions=mine.count("(assert "),
                 threshold=q.threshold, strict=q.strict, post=q.post, excluded=len(pairs), cut_points=len(cuts),
                 box=q.box(), pair=q.scope(), **detail)

