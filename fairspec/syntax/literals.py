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
