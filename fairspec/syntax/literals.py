"""Spec text that fairspec prints (guardrails, explanations, hints): written so that it parses.

A category is written bare only when the grammar reads it back as that one name: an
identifier (``[A-Za-z_][A-Za-z0-9_]*``) that is not a keyword; a number stays a number;
everything else (``Never-married``, ``Self-emp-inc``, ``not``, ``a b``) is a quoted string.
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


def category(value) -> str:
    """A category (or any value compared with a feature) as spec text that parses back to it."""
    s = str(value)
    if _NUMBER.match(s):
        return s
    if _NAME.match(s) and s not in RESERVED:
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def category_set(values) -> str:
    return "{" + ", ".join(category(v) for v in values) + "}"
