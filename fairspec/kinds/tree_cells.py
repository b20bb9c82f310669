"""The cells of a tree model's split tests: the finite domains the tree enumerations run over.

A tree model reads each encoded feature only through its split tests, so the values of a feature
fall into *cells* -- the values no test tells apart -- and one representative per cell stands for
all of them on the library's runtime. :func:`build_factor` builds one feature's :class:`Factor`
(its domain values as the runtime encoding reads them, their encoded columns, their cells);
individual fairness (:mod:`fairspec.kinds.tree_pairs`) and k-discrimination
(:mod:`fairspec.kinds.tree_kdisc`) of tree models enumerate products of these cells, at most
:data:`MAX_POINTS` points evaluated on the library in one batch.
"""

from __future__ import annotations

import numpy as np

from fairspec import ir

MAX_POINTS = 400_000        # points evaluated on the library in one enumeration
MAX_VALUES = 1 << 21          # values of one integer feature split into cells
MAX_SIGNATURE = 1 << 27       # test outcomes (values x tests) of one feature tabulated at once


class Factor:
    """One encoded feature: its domain values (as the runtime encoding reads them), their
    encoded columns, their cells, the representative value of each cell and its role."""

    def __init__(self, name, role, values, columns, U, cell):
        self.name, self.role = name, role
        self.values = values          # (k,)
        self.columns = columns
        self.U = U                    # (k, width)
        self.cell = cell              # (k,) ints 0..nc-1
        self.nc = int(cell.max()) + 1 if len(cell) else 0
        # the first value of each cell (one sort, not a scan per cell: a million cells in a second)
        _, first = np.unique(cell, return_index=True)
        self.rep = np.asarray(first, dtype=np.int64).reshape(-1)
        if len(self.rep) != self.nc:
            raise ValueError(f"feature {name}: a cell with no value")
        self.size = np.bincount(cell, minlength=self.nc)
        self.intervals = False        # cells given by their two end values (a continuous or wide feature)

    def members(self, c: int) -> np.ndarray:
        return self.values[self.cell == c]


def feature_values(f: ir.Feature) -> np.ndarray | None:
    d = f.domain
    if isinstance(d, ir.Categorical):
        return np.arange(len(d.categories), dtype=np.float64)
    if isinstance(d, ir.Boolean):
        return np.array([0.0, 1.0])
    if isinstance(d, ir.IntRange):
        if d.hi - d.lo + 1 > MAX_VALUES:
            return None
        return np.arange(d.lo, d.hi + 1, dtype=np.float64)
    return None


def has_two_values(f) -> bool:
    if f is None:
        return False
    d = f.domain
    if isinstance(d, (ir.IntRange, ir.RealRange)):
        return d.hi > d.lo
    if isinstance(d, ir.Categorical):
        return len(d.categories) >= 2
    return True


def exact_ok(d: np.ndarray, op: str, tol) -> np.ndarray:
    """``d op tol`` for the few distinct values of d, exactly (tol read as the spec wrote it)."""
    from fairspec.certify.exact import decide

    out = np.zeros(d.shape, dtype=bool)
    for v in np.unique(d):
        out[d == v] = decide(float(v), op, tol)
    return out


def split_tests(ens):
    from fairspec.certify.trees import SplitTest

    seen = {}
    for t in ens.trees:
        for k in np.flatnonzero(t.left >= 0):
            key = (int(t.feature[k]), float(t.threshold[k]), bool(t.strict), bool(t.f32))
            seen.setdefault(key, SplitTest(*key))
    return list(seen.values())


def encode_one(enc, fs, name, vals):
    """The encoded columns of feature ``name`` at values ``vals`` (the runtime encoding)."""
    from fairspec.runtime.encoding import encode

    k = len(vals)
    values = {c.feature: np.zeros(k) for c in enc.columns}
    values[name] = vals
    X = encode(enc, values, k)
    c = enc.column(name)
    return tuple(range(c.offset, c.offset + c.width)), X[:, c.offset:c.offset + c.width]


def _interval_cells(enc, fs, f, c, tests) -> tuple[np.ndarray, np.ndarray]:
    """Cells of a continuous (or wide integer) feature read by ``tests``: the intervals between the
    values where a test's outcome changes, found by bisection (all tests at once) on the runtime
    encoding and the library's comparison (both monotone in the value), each cell given by its two
    end values."""
    lo, hi = float(f.domain.lo), float(f.domain.hi)
    integer = isinstance(f.domain, ir.IntRange)
    thr = np.array([t.threshold for t in tests], dtype=np.float64)
    strict = np.array([t.strict for t in tests], dtype=bool)
    f32 = np.array([t.f32 for t in tests], dtype=bool)

    def out(v):
        """Outcome of test i at value v[i] (vectors over the tests)."""
        _, U = encode_one(enc, fs, f.name, np.asarray(v, dtype=np.float64))
        u = U[:, 0]
        u = np.where(f32, u.astype(np.float32).astype(np.float64), u)
        return np.where(strict, u < thr, u <= thr)

    n = len(tests)
    a_out, b_out = out(np.full(n, lo)), out(np.full(n, hi))
    change = a_out != b_out                            # monotone: otherwise one outcome over [lo, hi]
    if integer:
        ka, kb = np.full(n, int(lo), dtype=np.int64), np.full(n, int(hi), dtype=np.int64)
        to_val = lambda k: k.astype(np.float64)       # noqa: E731
    else:
        ka = np.full(n, _key64(lo), dtype=np.int64)
        kb = np.full(n, _key64(hi), dtype=np.int64)
        to_val = _from_key64
    for _ in range(130):
        open_ = change & (kb - ka > 1)
        if not open_.any():
            break
        mid = ka + (kb - ka) // 2
        same = out(to_val(np.where(open_, mid, ka))) == a_out
        ka = np.where(open_ & same, mid, ka)
        kb = np.where(open_ & ~same, mid, kb)
    cuts = sorted({float(x) for x in to_val(ka[change])})
    vals, cell = [], []
    start = lo
    for k, b in enumerate(cuts + [hi]):
        vals.append(start)
        cell.append(k)
        if b != start:
            vals.append(b)
            cell.append(k)
        start = b + 1.0 if integer else float(np.nextafter(b, np.inf))
    return np.array(vals, dtype=np.float64), np.array(cell, dtype=np.int64)


def _key64(x: float) -> int:
    """An int64 that orders float64 values as the reals they are (-0.0 and 0.0 alike)."""
    i = int(np.array([x], dtype=np.float64).view(np.int64)[0])
    return i if i >= 0 else -(i & 0x7FFFFFFFFFFFFFFF)


def _from_key64(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, dtype=np.int64)
    bits = np.where(k >= 0, k, (-k) | np.int64(-0x8000000000000000))
    return bits.astype(np.int64).view(np.float64)


def build_factor(enc: ir.Encoding, fs: ir.FeatureSet, c, f: ir.Feature, role: str, tests, read,
                 merge: bool = True) -> "Factor | str":
    """The factor of encoded feature ``f`` (column encoding ``c``): its values in cells of the
    split tests that read its columns (every value its own cell without ``tests`` or ``merge``);
    a sentence when it cannot be enumerated."""
    cols = set(range(c.offset, c.offset + c.width))
    vals = feature_values(f)
    if vals is not None and isinstance(f.domain, ir.IntRange) and tests is not None and merge and \
            read is not None and cols & read and len(vals) * sum(t.column in cols for t in tests) > MAX_SIGNATURE:
        vals = None             # too many outcomes to tabulate: the cells by bisection below (or refused)
    if vals is None:
        if not isinstance(f.domain, (ir.RealRange, ir.IntRange)) or role == "over" or read is None:
            return f"feature {f.name} is continuous or too wide to enumerate"
        if cols & read:
            if c.width != 1 or c.kind not in ("raw", "minmax", "standard") or not merge:
                return f"feature {f.name} is continuous or too wide to enumerate"
            mine = [t for t in tests if t.column in cols]
            vals, cell = _interval_cells(enc, fs, f, c, mine)
            columns, U = encode_one(enc, fs, f.name, vals)
            fac = Factor(f.name, role, vals, columns, U, cell)
            fac.intervals = True
            return fac
        # never read: its bounds stand for every value (one cell)
        vals = np.array([float(f.domain.lo), float(f.domain.hi)])
        columns, U = encode_one(enc, fs, f.name, vals)
        fac = Factor(f.name, role, vals, columns, U, np.zeros(2, dtype=np.int64))
        fac.intervals = True
        return fac
    if (tests is None or not merge) and len(vals) > MAX_POINTS:
        # every value its own cell: more cells than one enumeration evaluates (the next planned path decides)
        return (f"feature {f.name} has {len(vals):,} values, more than the {MAX_POINTS:,} points one enumeration "
                "evaluates one value at a time")
    columns, U = encode_one(enc, fs, f.name, vals)
    if tests is None or not merge:
        cell = np.arange(len(vals), dtype=np.int64)
    else:
        mine = [t for t in tests if t.column in cols]
        if mine:
            sig = np.stack([t.left(U[:, t.column - c.offset]) for t in mine], axis=1)
            # one byte string per value (its outcomes packed): a 1-d unique, far faster than axis=0
            packed = np.ascontiguousarray(np.packbits(sig, axis=1))
            _, cell = np.unique(packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1), return_inverse=True)
            cell = np.asarray(cell, dtype=np.int64).reshape(-1)
            # cells numbered in order of their first value
            _, first = np.unique(cell, return_index=True)
            order = np.empty(len(first), dtype=np.int64)
            order[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int64)
            cell = order[cell]
        else:
            cell = np.zeros(len(vals), dtype=np.int64)
    return Factor(f.name, role, vals, columns, U, cell)


def fixed_columns(factors, grid, count: int) -> list[dict]:
    """The encoded columns (column -> value) of each of ``count`` combinations of the factors'
    cells, at each cell's representative (``grid[i][r]``: the cell of factor ``i`` in combination
    ``r``): what every counterfactual fixes when the other cells go into leaf boxes."""
    fixed = []
    for r in range(count):
        d = {}
        for f, g in zip(factors, grid):
            for j, col in enumerate(f.columns):
                d[col] = float(f.U[f.rep[g[r]], j])
        fixed.append(d)
    return fixed


def tree_ensemble(model):
    """The model's trees in model-input space (None when they cannot be read exactly)."""
    from fairspec.models.network import UnsupportedModel

    try:
        return model.tree_ensemble()
    except (UnsupportedModel, ValueError):
        return None


def refuse_two_logits(model, post: str) -> None:
    """Raise :class:`fairspec.verdict.Unsupported` (the caller's ``unknown``) for a ``logit`` post of a
    model whose logit names two numbers: a GradientBoostingClassifier with the exponential loss
    (``decision_function`` z, the log-odds 2 z of ``predict_proba``) not declared by its
    ``decision_function``; a LightGBM binary sigmoid:k model (raw score r, log-odds k r) not declared
    ``output = "margin"``. Lint says so as FS415 when it can read the file's loss
    (:func:`fairspec.models.peek.peek_two_logits`); this is the same refusal where it could not."""
    fmt = getattr(model, "format", "")
    if post not in ("logit", "class_logit") or fmt not in ("sklearn", "lightgbm") or \
            getattr(model, "method", None) == "decision_function" or getattr(model, "margin", False):
        return
    if fmt == "lightgbm":               # binary sigmoid:k (its file's objective): r or k r
        from fairspec.models.boosted import lightgbm_two_logits

        try:
            objective = model.raw.dump_model(num_iteration=0).get("objective")
        except Exception:  # noqa: BLE001 - no objective to read: the one the loader read
            objective = getattr(model, "objective", None)
        why = lightgbm_two_logits(objective) if getattr(model, "task_kind", None) == "binary" else None
        declare = "output = \"margin\" to read logit(m(x)) as its raw score r"
    else:
        from fairspec.models.peek_sklearn import two_logits

        est = getattr(model, "raw", None)
        why = two_logits(type(est).__name__, getattr(est, "loss", None))
        declare = "output = \"decision_function\" to read logit(m(x)) as z"
    if why is not None:
        from fairspec.verdict import Unsupported

        raise Unsupported(f"logit(m(x)) reads the model's logit, but {why}: compare prob(m(x)) or label(m(x)), "
                          f"or declare {declare}")


def tree_nodes(t):
    from fairspec.certify.trees import SplitTest, TreeNodes

    tests = tuple(SplitTest(int(t.feature[k]), float(t.threshold[k]), bool(t.strict), bool(t.f32))
                  if t.left[k] >= 0 else None for k in range(t.n_nodes))
    return TreeNodes(tests, np.asarray(t.left), np.asarray(t.right))


def runtime_name(model) -> str:
    from fairspec.backends.data.flips import replayer_name

    return replayer_name(model)
