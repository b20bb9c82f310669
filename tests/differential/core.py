"""The pieces every family shares: finite feature domains, encodings computed as fairspec's
runtime documents them, exact decisions of a claim, and the shape of an instance.

An :class:`Instance` is one folder's worth of files (a spec, model files, data files) plus,
per property of the spec, a :class:`Truth`: what enumerating the domain on the model's own
runtime says, and a function that checks a reported witness. Nothing here imports fairspec:
the truth never comes from the code under test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np

# ------------------------------------------------------------------ exact numbers


def exact(x) -> Fraction:
    """The exact rational value of a float / int / decimal string."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, str):
        return Fraction(Decimal(x))
    if isinstance(x, (np.floating, float)):
        return Fraction(float(x))
    return Fraction(int(x))


def decimal_text(q: Fraction, digits: int = 15) -> str | None:
    """``q`` written as a decimal literal of at most ``digits`` significant digits, exactly; None
    when it has no such form (a literal must mean exactly the number we think it means)."""
    q = Fraction(q)
    den = q.denominator
    k = 0
    while den % 2 == 0:
        den //= 2
        k += 1
    j = 0
    while den % 5 == 0:
        den //= 5
        j += 1
    if den != 1:
        return None
    scale = max(k, j)
    n = q * 10 ** scale
    assert n.denominator == 1
    s = str(abs(n.numerator)).rjust(scale + 1, "0")
    text = (s[:-scale] + "." + s[-scale:]).rstrip("0").rstrip(".") if scale else s
    sig = len(text.replace(".", "").replace("-", "").lstrip("0"))
    if sig > digits:
        return None
    return ("-" if q < 0 else "") + text


def fmt_number(x: float) -> str:
    """A float written as a literal the spec reads back as the same value (repr; at most 15
    significant digits are used when that round-trips, else 17 -- only for thresholds whose
    exactness does not matter)."""
    for d in range(1, 16):
        s = f"{x:.{d}g}"
        if float(s) == x:
            return _plain(s)
    return _plain(repr(float(x)))


def _plain(s: str) -> str:
    if "e" in s or "E" in s:
        s = format(Decimal(s), "f")
    return s


OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
       "==": lambda a, b: a == b}


def near_max_pairs(D: np.ndarray, M: np.ndarray, values: np.ndarray, rel: float = 1e-12) -> np.ndarray:
    """The admissible pairs (rows of (a, b) indices) whose float measure ``D`` lies within ``rel`` of the
    largest, one per distinct pair of scores ``(values[a], values[b])``: the pair of the exact maximum
    is among them (rounding is monotone, and the float measure is within far less than ``rel`` of the
    exact one), as are its ties."""
    Dm = np.where(M, D, -np.inf)
    top = float(np.max(Dm)) if Dm.size else -np.inf
    if not np.isfinite(top):
        return np.zeros((0, 2), dtype=np.int64)
    ab = np.argwhere(M & (Dm >= top - rel * max(1.0, abs(top))))
    _, first = np.unique(np.stack([values[ab[:, 0]], values[ab[:, 1]]], axis=1), axis=0, return_index=True)
    return ab[np.sort(first)]


def exact_max(pairs, measure, cap: int = 20000):
    """The largest exact ``measure(a, b)`` (a Fraction, or None if some is None) over ``pairs`` (each
    pair once per distinct measure input, at most ``cap`` of them) and its pair."""
    best = None
    for a, b in list(pairs)[:cap]:
        d = measure(int(a), int(b))
        if d is None:
            return None
        if best is None or d > best[0]:
            best = (d, int(a), int(b))
    return best


def claim_holds(value, op: str, threshold) -> bool:
    """``value op threshold`` decided exactly (both read as exact rationals)."""
    return OPS[op](exact(value), exact(threshold))


# ------------------------------------------------------------------ features and encodings


@dataclass
class Feature:
    name: str
    kind: str                      # "int" | "cat" | "bool"
    lo: int = 0
    hi: int = 1
    cats: tuple = ()
    protected: bool = False

    @property
    def size(self) -> int:
        if self.kind == "int":
            return self.hi - self.lo + 1
        if self.kind == "bool":
            return 2
        return len(self.cats)

    def values(self) -> np.ndarray:
        """The domain as numbers: the int itself, 0/1 for bools, the category's index."""
        if self.kind == "int":
            return np.arange(self.lo, self.hi + 1)
        return np.arange(self.size)

    def decl(self) -> str:
        if self.kind == "int":
            t = f"int in [{self.lo}, {self.hi}]"
        elif self.kind == "bool":
            t = "bool"
        else:
            t = "{" + ", ".join(self.cats) + "}"
        return f"  {self.name} : {t}" + ("  protected" if self.protected else "")

    def csv(self, v) -> str:
        if self.kind == "int":
            return str(int(v))
        if self.kind == "bool":
            return "true" if int(v) else "false"
        return self.cats[int(v)]

    def read(self, v):
        """A witness's spec-level value -> the domain number, or None if it is no domain value."""
        if self.kind == "cat":
            return self.cats.index(v) if v in self.cats else None
        if self.kind == "bool":
            if isinstance(v, bool):
                return int(v)
            if v in (0, 1, 0.0, 1.0):
                return int(v)
            if isinstance(v, str) and v.lower() in ("true", "false"):
                return int(v.lower() == "true")
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        if float(v) != int(round(float(v))):
            return None
        v = int(round(float(v)))
        return v if self.lo <= v <= self.hi else None

    def show(self, v) -> str:
        return self.csv(v)


@dataclass
class Enc:
    """One feature's encoding: kind and parameters, exactly as the spec writes them."""
    feature: Feature
    kind: str                      # raw | minmax | standard | onehot | code
    lo: str | None = None          # decimal literals as written (minmax / standard parameters)
    hi: str | None = None
    mean: str | None = None
    std: str | None = None
    codes: tuple | None = None     # code {A = 1, B = 0}: the codes as decimal strings, per category
    fitted: bool = False           # minmax / standard without parameters: fitted on the data

    @property
    def width(self) -> int:
        return self.feature.size if self.kind == "onehot" else 1

    def text(self) -> str:
        k = self.kind
        if k in ("minmax", "standard") and not self.fitted:
            a, b = ("lo", "hi") if k == "minmax" else ("mean", "std")
            return f"{k}({a} = {getattr(self, a)}, {b} = {getattr(self, b)})"
        if k == "code" and self.codes is not None:
            return "code {" + ", ".join(f"{c} = {v}" for c, v in zip(self.feature.cats or ("false", "true"),
                                                                         self.codes)) + "}"
        return k

    def fit(self, data_values: np.ndarray | None) -> None:
        """Fill a fitted encoding's parameters from the data column (as fairspec documents:
        minmax = the column's min and max, standard = mean and population std)."""
        if not self.fitted:
            return
        v = np.asarray(data_values, dtype=np.float64)
        if self.kind == "minmax":
            self.lo, self.hi = repr(float(v.min())), repr(float(v.max()))
        else:
            self.mean, self.std = repr(float(v.mean())), repr(float(v.std()))

    def encode(self, v: np.ndarray) -> np.ndarray:
        """(n, width) float64 model-input columns, computed as the runtime's encoding is
        documented: (v - lo) / span, (v - mean) / std, category codes, one-hot blocks."""
        v = np.asarray(v)
        n = v.shape[0]
        if self.kind == "onehot":
            out = np.zeros((n, self.width))
            out[np.arange(n), v.astype(int)] = 1.0
            return out
        if self.kind == "code":
            codes = (np.array([float(c) for c in self.codes]) if self.codes is not None
                     else np.arange(self.feature.size, dtype=np.float64))
            return codes[v.astype(int)][:, None]
        x = v.astype(np.float64)
        if self.kind == "raw":
            return x[:, None]
        if self.kind == "minmax":
            lo, hi = float(self.lo), float(self.hi)
            return ((x - lo) / ((hi - lo) or 1.0))[:, None]
        mean, std = float(self.mean), float(self.std)
        return ((x - mean) / (std or 1.0))[:, None]


def encode_points(encs: list[Enc], P: np.ndarray, order: list[str]) -> np.ndarray:
    """Model-input matrix (float64) of domain points P (columns in ``order``, the feature order)."""
    cols = []
    for e in encs:
        cols.append(e.encode(P[:, order.index(e.feature.name)]))
    return np.concatenate(cols, axis=1) if cols else np.zeros((P.shape[0], 0))


def witness_points(w: dict, features) -> list | str:
    """A witness's two inputs (``features``, then ``features_prime``) as each feature's value read back
    (:meth:`Feature.read`), in the order of ``features``; else why one is not a point of the domain."""
    pts = []
    for side in ("features", "features_prime"):
        feats = w.get(side) or {}
        vals = []
        for f in features:
            v = f.read(feats.get(f.name)) if f.name in feats else None
            if v is None:
                return f"the witness's {side} value of {f.name} ({feats.get(f.name)!r}) is not in the domain"
            vals.append(v)
        pts.append(vals)
    return pts


def grid(features: list[Feature]) -> np.ndarray:
    """Every domain point, one row each, columns in the features' order."""
    axes = [f.values() for f in features]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.reshape(-1) for m in mesh], axis=1).astype(np.int64)


# ------------------------------------------------------------------ properties and instances


@dataclass
class Truth:
    """What enumeration on the model's runtime says about one property.

    status:   "holds" | "violated" | "ambiguous" (a real-arithmetic tie the spec's arithmetic
              leaves open: any verdict but a bad witness is accepted)
    value:    the exact optimum where the property has one (maximize; metric values)
    check_witness: witness JSON -> None (a real violating domain pair) or the sentence why not
    domain:   the number of domain points; pairs: the number of pairs the property ranges over
    """
    status: str
    value: float | None = None
    value_kind: str | None = None   # "max" (a maximize measure) | "metric" (a claim's value) | "k"
    check_witness: Callable | None = None
    domain: int = 0
    pairs: int = 0
    note: str = ""
    exact: object = None            # the exact value (a Fraction) where value is a rounding of it
    slack: object = 0               # how far the exact value may be off the truth's own arithmetic (a
                                    # real sigmoid evaluated in mpmath), judged in fairspec's favour


@dataclass
class Expect:
    """A spec fairspec must refuse: error ``code`` at ``stage`` ("lint": `fairspec lint` reports it, and
    check refuses with it; "check": lint has no other error, and check refuses with it, its message
    naming ``words``), exit code ``exit`` for both commands that refuse, no verdict, no traceback
    (judge.judge_refusal)."""
    code: str
    stage: str                      # "lint" | "check"
    words: str = ""                 # what the check-time diagnostic's message must say
    exit: int = 2                   # README: 2 for a bad spec, model, data file or usage


@dataclass
class Prop:
    name: str
    family: str
    text: str                       # the property block, as it goes into the spec
    truth: Truth
    meta: dict = field(default_factory=dict)   # backend, mode, post, ... (for the report's classes)
    timeout: float = 20.0           # the property's own budget (seconds), also in its text
    spec: str | None = None         # this property's own spec text without properties (another
                                    # declaration of the same model), checked in a file of its own
    expect: Expect | None = None    # a spec fairspec must refuse (then ``truth`` is Truth("refused"))


@dataclass
class Instance:
    family: str
    seed: int
    spec: str                       # the spec text without the properties
    files: dict                     # file name -> bytes
    props: list[Prop]
    info: dict = field(default_factory=dict)
    # (spec file, its properties, outcome base) -> [judge.Outcome]: an instance that checks its spec
    # itself (the api family: the Python API with in-memory objects); None: the CLI's path
    judge: Callable | None = None

    def __post_init__(self):
        # the type the model computes in, beside each property's runtime (a float64 ONNX graph rounds by
        # batch: campaign.is_batch_tie)
        if self.info.get("dtype"):
            for p in self.props:
                p.meta.setdefault("dtype", self.info["dtype"])

    def groups(self, only: list[str] | None = None) -> list[tuple[str, list[Prop]]]:
        """The spec files to check: (spec text without properties, its properties), the instance's
        own spec first, then one per other declaration (``Prop.spec``) in the order first used; an
        expected refusal (``Prop.expect``) is a file of its own."""
        out: dict = {}
        for p in self.props:
            if only is not None and p.name not in only:
                continue
            key = (p.spec if p.spec is not None else self.spec, p.name if p.expect else None)
            out.setdefault(key, []).append(p)
        return [(k[0], ps) for k, ps in out.items()]

    def spec_text(self, only: list[str] | None = None) -> str:
        gs = self.groups(only)
        head, props = gs[0] if gs else (self.spec, [])
        return head + "\n" + "\n\n".join(dict.fromkeys(p.text for p in props)) + "\n"

    def write_groups(self, folder: Path, only: list[str] | None = None) -> list[tuple[Path, list[Prop]]]:
        """The files, and each group's spec (spec.fair for the first, spec-NAME.fair after)."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in self.files.items():
            (folder / name).write_bytes(data)
        out = []
        for k, (head, props) in enumerate(self.groups(only)):
            spec = folder / ("spec.fair" if k == 0 else f"spec-{props[0].name}.fair")
            # one text once: the properties one `apply` states share its line (data_policy.py)
            spec.write_text(head + "\n" + "\n\n".join(dict.fromkeys(p.text for p in props)) + "\n")
            out.append((spec, props))
        return out

    def write(self, folder: Path, only: list[str] | None = None) -> Path:
        """The files and the first group's spec.fair (the only one when ``only`` names one property)."""
        groups = self.write_groups(folder, only)
        return groups[0][0] if groups else folder / "spec.fair"

    def truth_json(self, only: list[str] | None = None) -> dict:
        return {"family": self.family, "seed": self.seed, "info": self.info,
                "properties": {p.name: {"status": p.truth.status, "value": p.truth.value,
                                        "value_kind": p.truth.value_kind, "domain": p.truth.domain,
                                        "pairs": p.truth.pairs, "note": p.truth.note, "meta": p.meta,
                                        "expect": None if p.expect is None else dict(p.expect.__dict__)}
                               for p in self.props if only is None or p.name in only}}


def write_csv(features: list[Feature], P: np.ndarray, extra: dict | None = None) -> bytes:
    """A CSV of domain points (category names, true/false) plus extra columns."""
    extra = extra or {}
    head = [f.name for f in features] + list(extra)
    lines = [",".join(head)]
    for i, row in enumerate(P):
        cells = [f.csv(v) for f, v in zip(features, row)] + [str(extra[k][i]) for k in extra]
        lines.append(",".join(cells))
    return ("\n".join(lines) + "\n").encode()


def dumps(obj) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, default=str)
