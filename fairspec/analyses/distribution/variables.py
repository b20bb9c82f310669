"""Discrete variables for the distributions (fairspec.analyses.distribution): bins of continuous features
(declared or quantile, right-closed), categorical and binned variables, discretised data, and the
DistributionError every validation raises."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from fairspec.verdict import Unsupported


PROB_TOL = 1e-9


class DistributionError(Unsupported):
    """A distribution (or its pairing with a classifier) is invalid (a reason for unknown).

    ``message`` is one sentence meant for a person; the spec layer turns it
    into a diagnostic.
    """

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message


# --------------------------------------------------------------------------- bins


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@dataclass(frozen=True)
class Bins:
    """Right-closed bins of a continuous feature.

    ``edges`` are the interior cut points e_0 < e_1 < ... < e_{m-1}; there are
    m + 1 bins: (-inf, e_0], (e_0, e_1], ..., (e_{m-1}, +inf).  ``means`` is the
    mean of the data inside each bin (used as the bin's value by linear
    classifiers, as in Justicia and FVGM); ``None`` for declared bins without data.
    """

    edges: tuple[float, ...]
    means: tuple[float, ...] | None = None

    def __post_init__(self):
        e = tuple(float(x) for x in self.edges)
        object.__setattr__(self, "edges", e)
        if any(not math.isfinite(x) for x in e):
            raise DistributionError("bin edges must be finite numbers")
        if any(b <= a for a, b in zip(e, e[1:])):
            raise DistributionError(f"bin edges {list(e)} are not strictly increasing")
        if self.means is not None:
            m = tuple(float(x) for x in self.means)
            if len(m) != len(e) + 1:
                raise DistributionError(
                    f"{len(m)} bin means were given for {len(e) + 1} bins")
            object.__setattr__(self, "means", m)

    @property
    def k(self) -> int:
        return len(self.edges) + 1

    def index(self, values) -> np.ndarray:
        """The bin index of every value (numpy array of ints)."""
        x = np.asarray(values, dtype=float)
        return np.searchsorted(np.asarray(self.edges, dtype=float), x, side="left")

    def labels(self) -> tuple[str, ...]:
        e = self.edges
        if not e:
            return ("(-inf, inf)",)
        fmt = _fmt if len({_fmt(x) for x in e}) == len(e) else repr     # edges a float apart: every digit
        out = [f"(-inf, {fmt(e[0])}]"]
        out += [f"({fmt(a)}, {fmt(b)}]" for a, b in zip(e, e[1:])]
        out.append(f"({fmt(e[-1])}, inf)")
        return tuple(out)

    def upper_index(self, threshold: float, feature: str = "feature") -> int:
        """j such that ``x > threshold`` holds exactly for the bins j, j+1, ...

        Raises DistributionError when the threshold falls strictly inside a bin.
        """
        t = float(threshold)
        e = np.asarray(self.edges, dtype=float)
        j = int(np.searchsorted(e, t, side="left"))
        if j < len(e) and e[j] == t:         # exactly: an edge 1e-12 off holds values between the two
            return j + 1
        lo = "-inf" if j == 0 else _fmt(e[j - 1])
        hi = "inf" if j == len(e) else _fmt(e[j])
        raise DistributionError(
            f"the classifier's threshold {_fmt(t)} on '{feature}' falls inside the bin "
            f"({lo}, {hi}], so the bins cannot decide the test; add {_fmt(t)} as a bin edge")

    def refined(self, thresholds: Iterable[float]) -> "Bins":
        """These bins with extra edges (means dropped: re-estimate from data)."""
        e = sorted(set(self.edges) | {float(t) for t in thresholds})
        return Bins(tuple(e))

    @staticmethod
    def from_quantiles(values, n_bins: int) -> "Bins":
        """Learned bins: edges at the empirical quantiles (duplicates merged)."""
        x = np.asarray(values, dtype=float)
        x = x[np.isfinite(x)]
        if n_bins < 1:
            raise DistributionError("the number of bins must be at least 1")
        if len(x) == 0:
            raise DistributionError("cannot learn bins from a column with no numbers")
        qs = np.quantile(x, np.linspace(0, 1, n_bins + 1)[1:-1])
        edges = sorted(set(float(q) for q in qs))
        # an edge equal to the maximum would leave an empty last bin
        edges = [q for q in edges if q < x.max()]
        return Bins(tuple(edges)).with_means(x)

    def with_means(self, values) -> "Bins":
        """These bins with the data mean of every bin (bin midpoints for empty bins)."""
        x = np.asarray(values, dtype=float)
        idx = self.index(x)
        means = []
        e = self.edges
        for j in range(self.k):
            sel = x[idx == j]
            if len(sel):
                means.append(float(sel.mean()))
            elif not e:
                means.append(0.0)
            elif j == 0:
                means.append(e[0])
            elif j == len(e):
                means.append(e[-1])
            else:
                means.append((e[j - 1] + e[j]) / 2)
        return Bins(self.edges, tuple(means))


# --------------------------------------------------------------------------- variables


@dataclass(frozen=True)
class Variable:
    """A discrete feature: categorical ``values``, or the bins of a continuous feature."""

    name: str
    values: tuple
    bins: Bins | None = None

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(self.values))
        if len(self.values) < 1:
            raise DistributionError(f"feature '{self.name}' has no values")
        if len(set(self.values)) != len(self.values):
            raise DistributionError(f"feature '{self.name}' lists a value twice")
        if self.bins is not None and self.bins.k != len(self.values):
            raise DistributionError(
                f"feature '{self.name}' has {len(self.values)} values but {self.bins.k} bins")

    @property
    def k(self) -> int:
        return len(self.values)

    def index_of(self, value) -> int:
        """The index of a value label (ints/bools accepted for binary features)."""
        if value in self.values:
            return self.values.index(value)
        if isinstance(value, (bool, np.bool_)) and self.k == 2:
            return int(value)
        if isinstance(value, (int, np.integer)) and 0 <= int(value) < self.k and not any(
                isinstance(v, (int, np.integer)) for v in self.values):
            return int(value)
        raise DistributionError(f"'{value}' is not a value of feature '{self.name}' "
                                f"(values: {', '.join(map(str, self.values))})")

    @staticmethod
    def boolean(name: str) -> "Variable":
        return Variable(name, (0, 1))


@dataclass(frozen=True)
class Categorical:
    """Spec: a categorical column; ``values`` fixes the order (else sorted data values)."""

    values: tuple | None = None


@dataclass(frozen=True)
class Continuous:
    """Spec: a continuous column and its bins: a ``Bins``, a list of edges, or an
    int (that many quantile bins learned from the data).  ``None`` is an error."""

    bins: Any = None


@dataclass
class DiscreteData:
    """Data as value indices: ``codes[name]`` is an int array of length ``n_rows``."""

    variables: dict[str, Variable]
    codes: dict[str, np.ndarray]
    n_rows: int

    def column(self, name: str) -> np.ndarray:
        if name not in self.codes:
            raise DistributionError(f"the data has no column '{name}'")
        return self.codes[name]

    def take(self, rows) -> "DiscreteData":
        """The rows at these indices (repeats allowed: a bootstrap resample)."""
        rows = np.asarray(rows, dtype=np.int64)
        return DiscreteData(self.variables, {k: v[rows] for k, v in self.codes.items()}, len(rows))

    def subset(self, mask) -> "DiscreteData":
        mask = np.asarray(mask, dtype=bool)
        return DiscreteData(self.variables, {k: v[mask] for k, v in self.codes.items()},
                            int(mask.sum()))


def discretise(data: Mapping[str, Sequence], specs: Mapping[str, Any]) -> DiscreteData:
    """Discretise columns of ``data`` (a mapping name -> values, e.g. a DataFrame).

    ``specs`` maps each column to ``Categorical(...)``, ``Continuous(bins)``, a
    ``Bins`` or a ``Variable`` (whose values/bins are used as declared).
    """
    variables: dict[str, Variable] = {}
    codes: dict[str, np.ndarray] = {}
    n = None
    for name, spec in specs.items():
        try:
            col = data[name]
        except (KeyError, IndexError):
            raise DistributionError(f"the data has no column '{name}'") from None
        arr = np.asarray(col)
        if n is None:
            n = len(arr)
        elif len(arr) != n:
            raise DistributionError(f"column '{name}' has {len(arr)} rows, not {n}")
        if isinstance(spec, Variable):
            var = spec
            if var.bins is not None:
                codes[name] = var.bins.index(arr.astype(float))
            else:
                codes[name] = _category_codes(name, arr, var.values)
        elif isinstance(spec, Categorical):
            vals = spec.values
            if vals is None:
                vals = tuple(sorted(set(arr.tolist()), key=lambda v: (str(type(v)), v)))
            var = Variable(name, tuple(vals))
            codes[name] = _category_codes(name, arr, var.values)
        else:
            if isinstance(spec, Continuous):
                b = spec.bins
            else:
                b = spec
            x = _as_float(name, arr)
            if b is None:
                raise DistributionError(
                    f"continuous feature '{name}' has no bins; declare bin edges or a number "
                    f"of quantile bins")
            if isinstance(b, Bins):
                bins = b.with_means(x) if b.means is None else b
            elif isinstance(b, (int, np.integer)) and not isinstance(b, bool):
                bins = Bins.from_quantiles(x, int(b))
            else:
                bins = Bins(tuple(b)).with_means(x)
            var = Variable(name, bins.labels(), bins)
            codes[name] = bins.index(x)
        variables[name] = var
    return DiscreteData(variables, codes, int(n or 0))


def _as_float(name, arr) -> np.ndarray:
    try:
        x = np.asarray(arr, dtype=float)
    except (TypeError, ValueError):
        raise DistributionError(f"continuous feature '{name}' has values that are not numbers") from None
    if not np.all(np.isfinite(x)):
        raise DistributionError(f"continuous feature '{name}' has missing or infinite values")
    return x


def _category_codes(name, arr, values) -> np.ndarray:
    lookup = {v: i for i, v in enumerate(values)}
    # tolerate ints given as floats / strings given for numbers? keep it strict
    out = np.empty(len(arr), dtype=np.int64)
    for i, v in enumerate(arr.tolist()):
        j = lookup.get(v)
        if j is None and isinstance(v, float) and v.is_integer():
            j = lookup.get(int(v))
        if j is None:
            raise DistributionError(f"value '{v}' of feature '{name}' is not one of its declared values")
        out[i] = j
    return out
