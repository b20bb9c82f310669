"""Spec text that fairspec prints (guardrails, explanations, hints): written so that it parses.

The one place a value becomes spec text. A category is written bare only when the grammar reads
it back as that one name: an identifier (``[A-Za-z_][A-Za-z0-9_]*``) that is not a keyword; a
number stays a number; everything else (``Never-married``, ``Self-emp-inc``, ``not``, ``a b``) is
a quoted string (:func:`string`). A data column in a data expression is its bare name or
``col("...")`` (:func:`column`); where the grammar takes a name or a string (``score = ...``),
:func:`name_or_string`.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\Z")

# the grammar's keywords and contextual clause words (grammar/fairspec.lark)
RESERVED = frozenset({
    "and", "apply", "as", "bins", "bool", "bound", "by", "column", "data", "distribution", "encode", "ensure",
    "except", "explain", "false", "features", "for", "forall", "from", "goal", "group", "import", "in", "int",
    "model", "none", "not", "or", "p", "policy", "property", "protected", "real", "repair", "report", "require",
    "search", "true", "using", "write", "groups", "over", "flip", "around", "mediators", "delta", "given",
    "trust", "x",
})


def string(value) -> str:
    """A string literal (the grammar's STRING) that reads back as ``value``."""
    s = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return '"' + s + '"'


def name_or_string(value) -> str:
    """A bare name when the grammar reads it back as that name, else a string literal."""
    s = str(value)
    return s if _NAME.match(s) and s not in RESERVED else string(s)


def category(value) -> str:
    """A category (or any value compared with a feature) as spec text that parses back to it."""
    s = str(value)
    if _NUMBER.match(s) and _reads_back(s):
        return s
    return name_or_string(s)


def _reads_back(s: str) -> bool:
    """A number-looking value written bare parses back to the same text: not "02134" (2134), "1.50"
    (1.5), "1e3" (1000.0), nor a whole number past 1e15 (FS307) -- those are written as strings."""
    try:
        if "." in s or "e" in s or "E" in s:
            return s == repr(float(s))
        return s == str(int(s)) and abs(int(s)) <= 10 ** 15
    except ValueError:
        return False


def column(value) -> str:
    """A data column in a data expression (``where``, ``label``): its bare name, or ``col("...")`` when
    the name is not an identifier (``col("education-num")``; bare, ``education-num`` is a subtraction)."""
    s = str(value)
    return s if _NAME.match(s) and s not in RESERVED else f"col({string(s)})"


def category_set(values) -> str:
    return "{" + ", ".join(category(v) for v in values) + "}"


WEEK = 7 * 24 * 3600.0  # the longest duration an option takes (timeout, refine: planning.registry)


def longer_timeout(limit: float, floor: float = 60.0) -> str:
    """``timeout = 120s``: a budget longer than ``limit`` (twice it, at least ``floor``) as spec text a
    reason can suggest: whole seconds, in the option's range (at most a week). ``{2 * limit:g}s`` was
    no spec text past 500,000 s (``timeout = 1.2096e+06s``: FS101) and past a week out of range."""
    import math

    return f"timeout = {min(math.ceil(max(2 * limit, floor)), int(WEEK))}s"


def number(value) -> str:
    """A number as spec text that reads back as exactly that float, as short as it can be: a whole
    number as an integer (``30``, not ``30.0`` nor ``1e+06``, up to 1e15, past which a literal is FS307),
    else ``{:g}`` when it reads back and the float's shortest form (``repr``) when it does not.
    ``{:g}`` alone rounds to 6 significant digits: a guardrail's ``x.income <= 123456.5`` printed as
    ``123456`` (another claim, for an auditor who copies the printed text). ``inf`` stays ``inf``."""
    v = float(value)
    if v.is_integer() and abs(v) <= 10 ** 15:
        return str(int(v))
    g = f"{v:g}"
    return g if float(g) == v else repr(v)


def value(v) -> str:
    """A feature's value (a witness's, a point's) as spec text that reads back as it: a boolean
    ``true`` / ``false`` (not Python's ``True``), a number as :func:`number`, a category as
    :func:`category` (bare ``M``, quoted ``"Never-married"``), nothing as ``none``."""
    if v is None:
        return "none"
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return "true" if bool(v) else "false"
    if isinstance(v, str):
        return category(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return category(v)
    return number(f) if f == f and f not in (float("inf"), float("-inf")) else string(v)


def point(features: dict) -> str:
    """A witness's input as the spec's map literal, each value as :func:`value`:
    ``{age: 69, sex: M, status: "Never-married"}`` (not Python's ``{'age': 69, 'sex': 'M'}``)."""
    return "{" + ", ".join(f"{k}: {value(v)}" for k, v in features.items()) + "}"


def vector(xs) -> str:
    """A model-input vector (a witness with no spec-level reading) as a list literal of numbers."""
    return "[" + ", ".join(value(x) for x in xs) + "]"


def shown(x, thresholds=(), *, end: str | None = None, digits: int = 4, style: str = "g", exact=None) -> str:
    """A number as a report prints it (a verdict's value, an interval's end, a bound): ``digits``
    significant digits (``style`` "g") or decimals ("f"), and more where those few would put the printed
    number on another side of one of ``thresholds`` (the claim's, as the spec writes them: a float is
    read as its shortest decimal) than the number is, or on it when the number is not: a violated
    ``>= 0.8`` at 0.79996 prints 0.79996, not 0.8. ``end`` "low" / "high": an interval's end, rounded
    down / up (never inward; a text that reads back as the float is that float), else to nearest. ``exact``: the number's exact value (a Fraction, or its
    text) when ``x`` is its rounded float; else ``x`` is read bit for bit. Not a float: ``str``."""
    from fractions import Fraction

    if isinstance(x, bool) or not isinstance(x, (int, float)) or type(x).__module__ == "numpy":
        if type(x).__module__ == "numpy" and hasattr(x, "item"):
            return shown(x.item(), thresholds, end=end, digits=digits, style=style, exact=exact)
        return str(x)
    if isinstance(x, int):
        return str(x)
    if x != x or x in (float("inf"), float("-inf")):
        return f"{x:.{digits}{style}}"
    try:
        q = Fraction(exact) if exact is not None else Fraction(x)
        if exact is not None and float(q) != x:
            q = Fraction(x)
    except (TypeError, ValueError, ZeroDivisionError):
        q = Fraction(x)
    ts = _thresholds(thresholds)

    def faithful(text: str) -> bool:
        p = _fraction_of(text)
        if p is None:
            return False
        if ((end == "low" and p > q) or (end == "high" and p < q)) and (float(text) != x or q != Fraction(x)):
            return False            # rounded inward (a text that reads back as the float itself is it, when the
            # float is the number: not when ``exact`` is another, 1/3 read from 0.3333333333333333)
        return all((p > t) - (p < t) == (q > t) - (q < t) for t in ts)

    for d in range(digits, digits + 40):
        near = f"{x:.{d}{style}}" if exact is None or q == Fraction(x) else _directed(q, d, style, "nearest")
        # to nearest when that is no inward rounding, else down / up
        for text in (near,) if end is None else (near, _directed(q, d, style, "down" if end == "low" else "up")):
            if faithful(text):
                return text
    return repr(x)


def percent(x) -> str:
    """A level (a confidence) as a percentage as the spec writes it: 0.95 "95%", 0.995 "99.5%", 0.975 "97.5%"
    (``:.0%`` printed 0.995 as "100%" and 0.975 as "98%")."""
    return f"{number(round(100 * float(x), 10))}%"


def shown_pair(low, high, thresholds=(), *, digits: int = 4, style: str = "f") -> tuple[str, str]:
    """Two rates printed side by side as the lowest and highest of a difference or ratio between groups:
    each keeps its side of ``thresholds`` (:func:`shown`), with as many more digits as it takes for their
    printed difference and ratio (``low / high``) to keep the side of each threshold that the rates' own
    are on (0.2 and 0.30004 against ``<= 0.1`` never print as 0.2000 and 0.3000). A rate is read as its
    shortest decimal. Not two finite floats: each as :func:`shown` prints it."""
    from fractions import Fraction

    if not all(isinstance(v, float) and v == v and abs(v) != float("inf") for v in (low, high)):
        return shown(low, thresholds, digits=digits, style=style), shown(high, thresholds, digits=digits, style=style)
    ts = _thresholds(thresholds)

    def sides(a, b) -> tuple:
        out = [(b - a > t) - (b - a < t) for t in ts]
        return tuple(out + ([(a / b > t) - (a / b < t) for t in ts] if b else [None]))

    want = sides(Fraction(repr(low)), Fraction(repr(high)))
    for d in range(digits, digits + 40):
        texts = shown(low, thresholds, digits=d, style=style), shown(high, thresholds, digits=d, style=style)
        if sides(*map(_fraction_of, texts)) == want:
            return texts
    return repr(low), repr(high)


def _thresholds(thresholds) -> list:
    """A claim's thresholds as exact fractions, a float as its shortest decimal (as :func:`shown` reads them)."""
    from fractions import Fraction

    ts = []
    for t in thresholds or ():
        try:
            ts.append(Fraction(repr(float(t))) if isinstance(t, float) else Fraction(t))
        except (TypeError, ValueError, OverflowError):
            continue
    return ts


def shown_scaled(base, x, factor, *, digits: int = 4, style: str = "f") -> tuple[str, str]:
    """``base`` and ``x`` printed beside "x <= factor x base" (a repair's achieved semantic difference
    against alpha x minimal): ``digits`` decimals, or as many more as it takes for the printed pair to
    meet or miss the bound as the numbers do (each read as its shortest decimal, ``factor`` as the spec
    writes it). Not two finite floats and a finite factor: each as :func:`shown` prints it."""
    from fractions import Fraction

    finite = all(isinstance(v, float) and v == v and abs(v) != float("inf") for v in (base, x))
    if not finite or isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor != factor \
            or abs(factor) == float("inf"):
        return shown(base, digits=digits, style=style), shown(x, digits=digits, style=style)
    k = Fraction(repr(float(factor))) if isinstance(factor, float) else Fraction(factor)

    def side(b, y) -> int:
        return (y > k * b) - (y < k * b)

    want = side(Fraction(repr(base)), Fraction(repr(x)))
    for d in range(digits, digits + 40):
        texts = shown(base, digits=d, style=style), shown(x, digits=d, style=style)
        if side(*map(_fraction_of, texts)) == want:
            return texts
    return repr(base), repr(x)


def _fraction_of(text: str):
    from fractions import Fraction

    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _directed(q, d: int, style: str, mode: str) -> str:
    """The rational ``q`` rounded to ``d`` significant digits ("g") or decimals ("f"), ``mode`` "down" /
    "up" / "nearest" (half to even), written as Python writes a float in that style."""
    from fractions import Fraction

    if q == 0:
        return f"{0.0:.{d}{style}}"
    a = abs(q)
    e = len(str(a.numerator)) - len(str(a.denominator))     # 10**e <= a < 10**(e+1), after the fix below
    while Fraction(10) ** e > a:
        e -= 1
    while Fraction(10) ** (e + 1) <= a:
        e += 1
    places = d if style == "f" else d - 1 - e
    scaled = q * Fraction(10) ** places
    lo = scaled.numerator // scaled.denominator
    if mode == "down":
        n = lo
    elif mode == "up":
        n = lo if lo == scaled else lo + 1
    else:
        rest = scaled - lo
        n = lo + (1 if rest > Fraction(1, 2) or rest == Fraction(1, 2) and lo % 2 else 0)
    from decimal import Decimal

    dec = Decimal(n).scaleb(-places)
    if style == "f":
        return f"{dec:.{d}f}"
    exp = dec.adjusted() if n else 0
    if exp < -4 or exp >= d:
        mant = (dec.scaleb(-exp)).normalize()
        m = format(mant, "f")
        return f"{m}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return format(dec.normalize(), "f") if dec != dec.to_integral_value() or exp < d else format(dec, "f")


def interval(lo, hi, thresholds=(), *, style: str = "f", digits: int = 4, exact=None) -> str:
    """``[lo, hi]`` as a reason prints an interval: each end through :func:`shown` (rounded outward, kept
    on its side of each threshold), 4 decimals by default; ``exact`` stands for an end that is its float."""
    return (f"[{shown(lo, thresholds, end='low', style=style, digits=digits, exact=exact)}, "
            f"{shown(hi, thresholds, end='high', style=style, digits=digits, exact=exact)}]")
