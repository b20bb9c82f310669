"""LP certificates: a rigorous upper bound on an LP's optimum from ANY multipliers.

For ``max c @ x`` subject to ``A_ub x <= b_ub``, ``A_eq x == b_eq``, ``lo <= x <= hi`` and any
``y_ub >= 0`` (negative entries are clipped to 0) and ``y_eq``, every feasible ``x`` has

    c @ x = y_ub @ A_ub x + y_eq @ A_eq x + r @ x <= y_ub @ b_ub + y_eq @ b_eq + max_{lo<=x<=hi} r @ x

with ``r = c - A_ub.T y_ub - A_eq.T y_eq`` (weak duality; Neumaier & Shcherbina, "Safe bounds in
linear and mixed-integer linear programming", Math. Programming 99, 2004). :func:`upper_bound`
evaluates the right-hand side with a rigorous error term: ``r`` is enclosed in an interval
(``|fl(r) - r| <= gamma(m+1) (|c| + |A|^T |y|) + (m+1) eta``), the box term takes the worst
corner of that interval, and every sum is rounded upward. Multipliers from a floating-point
solver (HiGHS's duals) therefore give a bound that is true whatever their accuracy: a wrong
vector only gives a weak bound, never a wrong one. A box side that is infinite where ``r`` may
be non-zero gives ``inf``.

:func:`infeasible` is the same with ``c = 0``: a bound below 0 proves the LP has no feasible
point (a Farkas certificate). Matrices may be dense numpy arrays or scipy.sparse matrices
(used through ``@``, ``.T`` and ``abs`` only; scipy is never imported here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from fairspec.certify.rounding import _factor, _neta, up

__all__ = ["LinearProgram", "SparseRows", "upper_bound", "infeasible", "exact_upper_bound"]


class SparseRows:
    """A sparse matrix as coordinate triplets (no scipy here): ``shape``, ``row``, ``col``, ``val``.
    Duplicate (row, col) entries add up. Supports what the bound needs: ``A.T @ y`` as
    :meth:`rmatvec`, ``abs``, ``@ x`` and ``todense``."""

    def __init__(self, shape, row, col, val):
        self.shape = (int(shape[0]), int(shape[1]))
        self.row = np.asarray(row, dtype=np.int64).reshape(-1)
        self.col = np.asarray(col, dtype=np.int64).reshape(-1)
        self.val = np.asarray(val, dtype=np.float64).reshape(-1)
        if not (self.row.shape == self.col.shape == self.val.shape):
            raise ValueError("row, col and val must have the same length")
        if self.row.size and (self.row.min() < 0 or self.row.max() >= self.shape[0]
                              or self.col.min() < 0 or self.col.max() >= self.shape[1]):
            raise ValueError("an entry lies outside the matrix")

    def rmatvec(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        return np.bincount(self.col, weights=self.val * y[self.row], minlength=self.shape[1])

    def __matmul__(self, x):
        x = np.asarray(x, dtype=np.float64)
        return np.bincount(self.row, weights=self.val * x[self.col], minlength=self.shape[0])

    def __abs__(self):
        # the same shape, rows and columns (checked when self was made): only the values change
        a = object.__new__(SparseRows)
        a.shape, a.row, a.col, a.val = self.shape, self.row, self.col, np.abs(self.val)
        return a

    def todense(self) -> np.ndarray:
        D = np.zeros(self.shape)
        np.add.at(D, (self.row, self.col), self.val)
        return D

    @property
    def nnz(self) -> int:
        return int(self.val.size)


def _col_terms(A) -> int:
    """The most terms a column's sum A.T y can have (duplicates of a SparseRows counted apart)."""
    if isinstance(A, SparseRows):
        return int(np.bincount(A.col, minlength=1).max()) if A.nnz else 0
    return int(A.shape[0])


def _rmatvec(A, y) -> np.ndarray:
    """``A.T @ y`` for a dense array, a SparseRows or a scipy.sparse matrix."""
    if isinstance(A, SparseRows):
        return A.rmatvec(y)
    return np.asarray(A.T @ y).reshape(-1)


def _dense_or_sparse(A, m_cols: int):
    if A is None:
        return None
    if isinstance(A, SparseRows):
        if A.shape[1] != m_cols:
            raise ValueError(f"a constraint matrix has {A.shape[1]} columns, the LP {m_cols} variables")
        return A if A.shape[0] else None
    if hasattr(A, "tocsr") and not isinstance(A, np.ndarray):      # scipy.sparse: keep it
        A = A.tocsr()
        A.data = np.asarray(A.data, dtype=np.float64)
        if A.shape[1] != m_cols:
            raise ValueError(f"a constraint matrix has {A.shape[1]} columns, the LP {m_cols} variables")
        return A if A.shape[0] else None
    A = np.asarray(A, dtype=np.float64)
    if A.size == 0:
        return None
    if A.ndim != 2 or A.shape[1] != m_cols:
        raise ValueError(f"a constraint matrix must be (rows, {m_cols}), got {A.shape}")
    return A


@dataclass(frozen=True, eq=False)
class LinearProgram:
    """``max c @ x`` s.t. ``A_ub x <= b_ub``, ``A_eq x == b_eq``, ``lo <= x <= hi``.

    Every stored float is the exact rational it is (the LP certify reasons about is the LP of
    these numbers, not of some decimal they approximate). ``integer`` marks integral variables
    (not used by the bound: an LP bound holds for the integral points too)."""

    c: np.ndarray
    A_ub: object = None
    b_ub: np.ndarray | None = None
    A_eq: object = None
    b_eq: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    integer: np.ndarray | None = None

    def __post_init__(self):
        c = np.array(self.c, dtype=np.float64).reshape(-1)
        n = c.shape[0]
        A_ub = _dense_or_sparse(self.A_ub, n)
        A_eq = _dense_or_sparse(self.A_eq, n)
        b_ub = np.zeros(0) if A_ub is None else np.array(self.b_ub, dtype=np.float64).reshape(-1)
        b_eq = np.zeros(0) if A_eq is None else np.array(self.b_eq, dtype=np.float64).reshape(-1)
        if A_ub is not None and b_ub.shape[0] != A_ub.shape[0]:
            raise ValueError("b_ub does not match A_ub")
        if A_eq is not None and b_eq.shape[0] != A_eq.shape[0]:
            raise ValueError("b_eq does not match A_eq")
        lo = np.full(n, -np.inf) if self.lo is None else np.array(self.lo, dtype=np.float64).reshape(-1)
        hi = np.full(n, np.inf) if self.hi is None else np.array(self.hi, dtype=np.float64).reshape(-1)
        if lo.shape != (n,) or hi.shape != (n,):
            raise ValueError("lo/hi must have one entry per variable")
        if np.any(np.isnan(c)) or np.any(np.isnan(lo)) or np.any(np.isnan(hi)) or np.any(np.isnan(b_ub)) \
                or np.any(np.isnan(b_eq)) or not np.all(np.isfinite(b_ub)) or not np.all(np.isfinite(b_eq)):
            raise ValueError("an LP with NaN or infinite right-hand sides")
        integer = np.zeros(n, dtype=bool) if self.integer is None else np.array(self.integer, dtype=bool).reshape(-1)
        for name, v in (("c", c), ("A_ub", A_ub), ("b_ub", b_ub), ("A_eq", A_eq), ("b_eq", b_eq),
                        ("lo", lo), ("hi", hi), ("integer", integer)):
            object.__setattr__(self, name, v)

    @property
    def n(self) -> int:
        return self.c.shape[0]

    @property
    def m_ub(self) -> int:
        return 0 if self.A_ub is None else self.A_ub.shape[0]

    @property
    def m_eq(self) -> int:
        return 0 if self.A_eq is None else self.A_eq.shape[0]

    def with_objective(self, c) -> "LinearProgram":
        return LinearProgram(c, self.A_ub, self.b_ub, self.A_eq, self.b_eq, self.lo, self.hi, self.integer)


def _mult(y, m: int, name: str, clip: bool) -> np.ndarray:
    if m == 0:
        return np.zeros(0)
    y = np.zeros(m) if y is None else np.array(y, dtype=np.float64).reshape(-1)
    if y.shape != (m,):
        raise ValueError(f"{name} must have {m} entries, got {y.shape}")
    y = np.where(np.isfinite(y), y, 0.0)          # a NaN / inf multiplier is useless: drop it
    return np.maximum(y, 0.0) if clip else y


def upper_bound(lp: LinearProgram, y_ub=None, y_eq=None, c=None) -> float:
    """A rigorous upper bound on ``max c @ x`` over the LP's feasible set (``-inf`` never; ``inf``
    when the box is unbounded where the reduced objective may be non-zero). ``c`` overrides the
    LP's objective (``infeasible`` uses 0)."""
    c = lp.c if c is None else np.asarray(c, dtype=np.float64).reshape(-1)
    yu = _mult(y_ub, lp.m_ub, "y_ub", clip=True)
    ye = _mult(y_eq, lp.m_eq, "y_eq", clip=False)
    n = lp.n
    # r = c - A_ub^T y_ub - A_eq^T y_eq, and T >= |c| + |A_ub|^T |y_ub| + |A_eq|^T |y_eq| (float)
    r = c.copy()
    T = np.abs(c)
    Z = np.abs(c)           # zero exactly where every term of r_j is exactly 0 (no underflow doubt)
    terms = 1
    if lp.m_ub:
        r = r - _rmatvec(lp.A_ub, yu)
        aA = abs(lp.A_ub)
        T = T + _rmatvec(aA, np.abs(yu))
        Z = Z + _rmatvec(aA, (yu != 0).astype(np.float64))
        terms += _col_terms(lp.A_ub)
    if lp.m_eq:
        r = r - _rmatvec(lp.A_eq, ye)
        aA = abs(lp.A_eq)
        T = T + _rmatvec(aA, np.abs(ye))
        Z = Z + _rmatvec(aA, (ye != 0).astype(np.float64))
        terms += _col_terms(lp.A_eq)
    neta = _neta(terms)
    rerr = up(up(_factor(terms) * up(T + neta)) + neta)          # |fl(r) - r| <= rerr (elementwise)
    rlo, rhi = r - rerr, r + rerr                                  # rounded outward below
    rlo = np.nextafter(rlo, -np.inf)
    rhi = np.nextafter(rhi, np.inf)
    none = Z == 0
    rlo = np.where(none, 0.0, rlo)
    rhi = np.where(none, 0.0, rhi)
    lo, hi = lp.lo, lp.hi
    # max over x in [lo, hi] and r in [rlo, rhi] of r x: the worst of the four corners
    with np.errstate(invalid="ignore", over="ignore"):
        cand = np.stack([_prod(rlo, lo), _prod(rlo, hi), _prod(rhi, lo), _prod(rhi, hi)])
    box = np.max(cand, axis=0)
    if np.any(np.isnan(box)) or np.any(box == np.inf):
        return math.inf
    # the dual part y_ub @ b_ub + y_eq @ b_eq and the box part, summed with a rigorous bound
    parts = np.concatenate([yu * lp.b_ub if lp.m_ub else np.zeros(0),
                            ye * lp.b_eq if lp.m_eq else np.zeros(0), box])
    # products y_i b_i carry one rounding each (and may underflow): bound them upward
    prod_err = np.concatenate([np.abs(yu * lp.b_ub) if lp.m_ub else np.zeros(0),
                               np.abs(ye * lp.b_eq) if lp.m_eq else np.zeros(0)])
    k = parts.shape[0]
    s = float(np.sum(parts))
    S = float(np.sum(np.abs(parts)))
    if not (math.isfinite(s) and math.isfinite(S)):
        return math.inf
    # |fl(sum) - sum| <= gamma(k) (sum |parts|) ; each dual product is within u |p| + eta/2 of exact
    u = 2.0 ** -53
    err = float(up(_factor(max(k, 1)) * S))
    err = float(up(err + float(up(u * 2 * float(np.sum(prod_err)))) + _neta(k)))
    out = float(up(s + err))
    return out if math.isfinite(out) else math.inf


def _prod(r, x):
    """Elementwise upper bound of r * x where r and x are exact floats (x may be infinite):
    0 when r == 0 whatever x; an infinite product stays infinite; finite products rounded up."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = r * x
    p = np.where(r == 0, 0.0, p)
    finite = np.isfinite(p)
    return np.where(finite, np.nextafter(p, np.inf), p)


def infeasible(lp: LinearProgram, y_ub=None, y_eq=None) -> bool:
    """True when the multipliers prove the LP has no feasible point: the bound with ``c = 0`` is
    below 0 (every feasible point would give ``0 <= bound``)."""
    return upper_bound(lp, y_ub, y_eq, c=np.zeros(lp.n)) < 0.0


def exact_upper_bound(lp: LinearProgram, y_ub=None, y_eq=None) -> Fraction | float:
    """The same bound computed in exact rational arithmetic (slow: tests and audits only)."""
    yu = [max(Fraction(float(v)), Fraction(0)) for v in _mult(y_ub, lp.m_ub, "y_ub", True)]
    ye = [Fraction(float(v)) for v in _mult(y_eq, lp.m_eq, "y_eq", False)]
    Aub = None if lp.A_ub is None else np.asarray(lp.A_ub.todense() if hasattr(lp.A_ub, "todense") else lp.A_ub)
    Aeq = None if lp.A_eq is None else np.asarray(lp.A_eq.todense() if hasattr(lp.A_eq, "todense") else lp.A_eq)
    total = sum((y * Fraction(float(b)) for y, b in zip(yu, lp.b_ub)), Fraction(0))
    total += sum((y * Fraction(float(b)) for y, b in zip(ye, lp.b_eq)), Fraction(0))
    for j in range(lp.n):
        r = Fraction(float(lp.c[j]))
        if Aub is not None:
            r -= sum((yu[i] * Fraction(float(Aub[i, j])) for i in range(lp.m_ub) if Aub[i, j]), Fraction(0))
        if Aeq is not None:
            r -= sum((ye[i] * Fraction(float(Aeq[i, j])) for i in range(lp.m_eq) if Aeq[i, j]), Fraction(0))
        if r == 0:
            continue
        side = lp.hi[j] if r > 0 else lp.lo[j]
        if not math.isfinite(side):
            return math.inf
        total += r * Fraction(float(side))
    return total


def prove_bound(lp: LinearProgram, y_ub, y_eq, op: str, threshold, *, claim: str, **detail):
    """An ``lp-certificate`` Proof that ``max c @ x op threshold`` over the LP (``op`` ``<`` or
    ``<=``), or that the LP is infeasible (then any claim holds), from the multipliers; None when
    they do not certify it. ``threshold`` is read exactly (a float bit for bit, a str as its
    decimal). The LP must be one certify's own builders made from the problem (see pairlp)."""
    from fairspec.certify.exact import decide
    from fairspec.certify.proof import _mint

    if op not in ("<", "<="):
        raise ValueError("an LP bound proves '<' or '<='")
    thr = threshold if isinstance(threshold, (str, Fraction)) else Fraction(float(threshold))
    ub = upper_bound(lp, y_ub, y_eq)
    if ub != math.inf and decide(ub, op, thr):
        return _mint("lp-certificate", claim, bound=ub, op=op, threshold=thr, rows=lp.m_ub + lp.m_eq,
                     variables=lp.n, **detail)
    if infeasible(lp, y_ub, y_eq):
        return _mint("lp-certificate", claim, infeasible=True, rows=lp.m_ub + lp.m_eq, variables=lp.n, **detail)
    return None
