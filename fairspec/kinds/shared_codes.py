"""A witness of a code table that gives several categories one code (session 33).

``code {A = 0, B = 0, C = 1}`` (warning FS438; an OrdinalEncoder grouping infrequent categories) maps A and B
to one model input. A witness is read back from the model's inputs (runtime.encoding.decode_row: the first
category with the code), so the admissible pair (A, n = 2), (B, n = 1) -- it differs in the protected g --
printed as (A, 2), (A, 1): a pair differing only in the relaxed n, which the property does not compare. The
verdict was right; the printed pair was not one of the property's.

Here each such feature's two printed categories are chosen among the categories whose code is the model's
input there (every choice is the same model input, so the pair replays as before), so that the printed pair
is admissible -- a feature the pair ties the same category on both sides, at least one feature after
``except`` differing -- and meets the whole further pre-condition read exactly
(kinds/pre_relax.meeting_witness reads each choice :func:`choices` gives with complete_witness: both readings of
each constant, a feature only the pre-condition reads given a value, the pair in the order that meets it). The
categories printed are tried first: a witness that already meets everything (one an enumeration decoded
honestly, runtime.encoding.decode_row's ``known``) is unchanged. No choice that meets it: None (the caller,
pre_relax.with_categories, says ``unknown``, never a pair that is not the property's)."""

from __future__ import annotations

import itertools
from dataclasses import replace

from fairspec import ir
from fairspec.verdict import Unsupported

#: category choices tried for the shared codes of one witness, at most
MAX_CHOICES = 4096


def shared_columns(enc: ir.Encoding) -> list:
    """The code columns of ``enc`` whose table gives two categories one code."""
    return [c for c in enc.columns
            if c.kind == "code" and len({float(k) for k in c.codes}) < len(c.codes)]


def alike(c, printed, u: float) -> list:
    """The categories of code column ``c`` whose code is the model input ``u``, ``printed`` first."""
    same = [cat for cat, k in zip(c.categories, c.codes) if float(k) == float(u)]
    return sorted(same, key=lambda cat: cat != printed) or [printed]


def choices(prop: ir.IndividualFairness, enc: ir.Encoding, w):
    """The witnesses ``w`` prints as with the categories of its shared codes chosen among those whose code is the
    model's input (the printed ones first): a feature the pair ties the same category on both sides, and at least
    one feature after ``except`` differing where the witness names them all. None: ``w`` has no shared code.
    Raises Unsupported past :data:`MAX_CHOICES`."""
    cols = [c for c in shared_columns(enc) if c.feature in w.features and c.feature in w.features_prime]
    if not cols:
        return None
    return _choices(prop, w, cols)


def _choices(prop, w, cols):
    tol = dict(prop.relaxed)
    per = []
    for c in cols:
        ax = alike(c, w.features[c.feature], w.x[c.offset])
        ay = alike(c, w.features_prime[c.feature], w.x_prime[c.offset])
        if c.feature in prop.free or c.feature in tol:
            per.append([(a, b) for a in ax for b in ay])
        else:       # tied: one category on both sides (the same code; a pair with two codes is printed as it is)
            both = [a for a in ax if a in ay]
            per.append([(a, a) for a in both] or [(ax[0], ay[0])])
    too_many = (f"the shared codes of {', '.join(c.feature for c in cols)} give more than {MAX_CHOICES:,} category "
                "choices to print the pair with")
    for fx, fy in completions(prop, w, [c.feature for c in cols], per, MAX_CHOICES, too_many):
        yield replace(w, features=fx, features_prime=fy)


def completions(prop: ir.IndividualFairness, w, names: list, per: list, limit: int, too_many: str):
    """The feature maps ``(fx, fy)`` of the witness ``w`` with ``names[i]`` given each pair of values in ``per[i]``
    (every combination, in order; past ``limit`` of them Unsupported(``too_many``)), skipping a pair tied on every
    feature after ``except`` where it names them all: no pair the property compares. What the shared codes' choices
    and pre_relax.complete_witness's completions of features only the pre-condition reads both walk."""
    free = list(prop.free)
    for k, combo in enumerate(itertools.product(*per)):
        if k >= limit:
            raise Unsupported(too_many)
        fx, fy = dict(w.features), dict(w.features_prime)
        for n, (a, b) in zip(names, combo):
            fx[n], fy[n] = a, b
        if free and all(n in fx and n in fy and fx[n] == fy[n] for n in free):
            continue
        yield fx, fy
