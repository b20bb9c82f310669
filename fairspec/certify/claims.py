"""What a pair proof is about, recorded where it is minted, so that proofs of sub-boxes can be
combined into one proof of the whole domain (:mod:`fairspec.certify.partitions`).

A part proof's claim is "the whole property restricted to my box" only when everything it depends
on but the box is the whole property's. Three records, each a plain dict of canonical values
(compared with ``==``):

* :func:`pair_scope` -- the pair question's shape: the network the proof reasons about (a SHA-256
  of its layers, :func:`net_fingerprint`), the integral inputs, the one-hot groups, the free
  (protected) inputs, ``must_differ`` and the relaxed inputs with their tolerances, normalised as
  :class:`fairspec.certify.pairlp.PairQuery` normalises them. A ``bab-certificate`` and an
  ``exact-smt`` proof record it (``detail["pair"]``) from their own query.
* :func:`runtime_record` -- the runtime claim a real-arithmetic proof was moved to: the
  post-condition's eps exactly as the spec writes it and its strictness, the runtime error bound
  E the threshold was moved by (:func:`fairspec.certify.pairlp.moved_threshold`), the readout and
  the precision of the runtime (``detail["runtime"]``). The combiner recomputes the moved threshold
  from it and compares it with the threshold the proof proved.
* :func:`direct_record` -- the claim of a proof that compares the runtime's own outputs (bounds
  widened by E, or an enumeration): the post-condition, eps and strictness, the label's decision
  threshold, and the readout / precision when the proof bounds a network (an enumeration reads the
  runtime itself). ``boxes.decide_boxes``, ``layersplit``, ``relsplit`` and
  ``enumerate.count_individuals`` record it (``detail["record"]``), with the counterfactual cases and
  pairs compared (``"_relation"``, :func:`relation_record`); ``tiling.prove_tiled`` keeps the distinct
  records of its groups.

Imports numpy, fractions and certify's exact helpers only.
"""

from __future__ import annotations

import hashlib
import numpy as np

from fairspec.certify.exact import threshold_of
from fairspec.certify.rounding import float_up

__all__ = ["net_fingerprint", "pair_scope", "tied_inputs", "runtime_record", "direct_record", "exact_text",
           "label_threshold", "relation_record"]


def exact_text(v) -> str:
    """A threshold as the spec writes it, as an exact rational's text (``"1/10"`` for 0.1)."""
    return str(threshold_of(v))


def net_fingerprint(layers) -> str:
    """SHA-256 of ``[(W, b, relu), ...]`` (float64, as :func:`fairspec.certify.network.as_layers` gives)."""
    h = hashlib.sha256()
    for W, b, relu in layers:
        W = np.ascontiguousarray(np.asarray(W, dtype=np.float64))
        b = np.ascontiguousarray(np.asarray(b, dtype=np.float64).reshape(-1))
        h.update(repr((W.shape, b.shape, bool(relu))).encode())
        h.update(W.tobytes())
        h.update(b.tobytes())
    return h.hexdigest()


def pair_scope(net_sha: str, integer, onehot_groups, free, must_differ, relaxed,
               tolerances_read: bool = False) -> dict:
    """The pair question's shape (see the module docstring), normalised as ``PairQuery`` does:
    one-hot members integral, ``free`` / ``must_differ`` sorted (``must_differ`` None: ``free``),
    each relaxed tolerance read as written and rounded up to a float (``tolerances_read``: they
    already are, a query's own)."""
    groups = [sorted(int(i) for i in g) for g in onehot_groups]
    integer = [bool(v) for v in np.asarray(integer, dtype=bool).reshape(-1)]
    for g in groups:
        for i in g:
            integer[i] = True
    free = sorted({int(i) for i in free})
    must = free if must_differ is None else sorted({int(i) for i in must_differ})
    rel = sorted((int(i), repr(float(t if tolerances_read else float_up(threshold_of(t))))) for i, t in relaxed)
    return {"net": str(net_sha), "integer": integer, "onehot_groups": groups, "free": free,
            "must_differ": must, "relaxed": [list(r) for r in rel]}


def tied_inputs(n: int, free, relaxed) -> tuple[int, ...]:
    """The inputs of ``range(n)`` both copies of a pair share: neither free nor relaxed (``relaxed``:
    ``(input, tolerance)`` pairs, as a query holds them or a :func:`pair_scope` records them)."""
    other = {int(i) for i in free} | {int(r[0]) for r in relaxed}
    return tuple(i for i in range(n) if i not in other)


def runtime_record(eps, eps_strict: bool, runtime_error: float, readout, precision: str) -> dict:
    """The runtime claim a real-arithmetic proof was moved to (see the module docstring)."""
    return {"eps": exact_text(eps), "eps_strict": bool(eps_strict), "runtime_error": float(runtime_error),
            "readout": [v if isinstance(v, str) else int(v) for v in readout], "precision": str(precision)}


def label_threshold(readout) -> str:
    """The decision threshold of a label read through ``readout``: 1/2 on a probability, else 0."""
    return "1/2" if readout[0] in ("prob", "softmax") else "0"


def relation_record(cases, pairs) -> tuple:
    """The counterfactuals a proof compared, canonical: each case as sorted ``(input, value)`` items,
    and the ordered pairs of cases (indices) it compared."""
    cs = tuple(tuple(sorted((int(i), float(v)) for i, v in c.items())) for c in cases)
    return cs, tuple(sorted({(int(a), int(b)) for a, b in pairs}))


def direct_record(post: str, *, eps=0, eps_strict: bool = False, decision_threshold=None, readout=None,
                  precision: str | None = None, relation=None, decisions: bool = False) -> dict:
    """The claim of a proof about the runtime's own outputs (see the module docstring). ``post`` as
    the proof compared it (``prob-of-logit`` is the ``prob`` post on a runtime that gives logits);
    ``decision_threshold`` of a label (default: from ``readout``); ``readout`` / ``precision`` None
    for a proof that evaluated the runtime itself. ``decisions``: a ``label`` compared as the model's own 0/1
    decisions at 1/2 (``compared = "decisions"``: certify.enumerate.count_individuals checked every value is 0
    or 1), whatever the score its readout thresholds."""
    rec = {"post": "prob" if post == "prob-of-logit" else str(post), "eps": exact_text(eps),
           "eps_strict": bool(eps_strict)}
    if decisions:
        rec["compared"] = "decisions"
    if decision_threshold is None and readout is not None:
        decision_threshold = label_threshold(readout)
    rec["decision_threshold"] = None if decision_threshold is None else exact_text(decision_threshold)
    if readout is not None:
        rec["readout"] = [v if isinstance(v, str) else int(v) for v in readout]
        rec["precision"] = str(precision)
    else:
        rec["evaluated"] = "runtime"
    if relation is not None:
        # (cases, pairs) the proof compared (:func:`relation_record`; not in the JSON): what
        # certify.partitions checks holds every pair a relaxed property admits
        rec["_relation"] = relation_record(*relation)
    return rec
