"""The registry of stable diagnostic codes.

Codes never change meaning once released; new checks get new codes.  The
hundreds digit groups them: 1 syntax, 2 names and imports, 3 types and
values, 4 models, data and encodings, 5 properties and backends.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    code: str
    severity: str
    title: str
    hint: str | None = None


_ALL = [
    # -- syntax
    Code("FS101", "error", "unexpected token", "check the statement near the caret against the grammar in the README"),
    Code("FS102", "error", "unexpected character", "strings use double quotes; names are letters, digits and _"),
    Code("FS103", "error", "unexpected end of file", "a block or a call is not closed"),
    Code("FS104", "error", "file cannot be read as text", "save the spec as UTF-8"),
    # -- names and imports
    Code("FS201", "error", "unknown name"),
    Code("FS202", "error", "duplicate declaration", "rename one of the two declarations"),
    Code("FS203", "error", "import not found", "import paths resolve relative to the importing file; 'fairspec/...' names the policies shipped with fairspec"),
    Code("FS204", "error", "import cycle", "break the cycle: move the shared declarations to a third file"),
    Code("FS205", "error", "unknown feature"),
    Code("FS206", "error", "unknown category"),
    Code("FS207", "error", "unknown data column"),
    Code("FS208", "error", "unknown option"),
    Code("FS209", "error", "unknown function"),
    Code("FS210", "error", "unknown policy parameter or missing argument"),
    Code("FS211", "warning", "feature declared but not encoded"),
    # -- types and values
    Code("FS301", "error", "type mismatch"),
    Code("FS302", "error", "empty or reversed range", "write the lower bound first: [lo, hi] with lo <= hi"),
    Code("FS303", "error", "value out of range"),
    Code("FS304", "error", "duplicate category"),
    Code("FS305", "error", "wrong number of arguments"),
    Code("FS306", "error", "label expression is not boolean", "the label must be a comparison such as income == \">50K\""),
    Code("FS307", "error", "invalid threshold or option value"),
    Code("FS308", "error", "invalid group", "groups are categorical or boolean features, or boolean 'group' declarations, combined with x"),
    Code("FS309", "error", "invalid probability"),
    # -- models, data, encodings
    Code("FS401", "error", "model file cannot be loaded"),
    Code("FS402", "error", "encoding width differs from the model's input width", "list every model input in the encode block, in the model's order"),
    Code("FS403", "error", "protected attribute not used by the encoding", "a protected feature the model never sees cannot be checked for individual fairness; encode it or drop 'protected'"),
    Code("FS404", "error", "data file cannot be read"),
    Code("FS405", "error", "feature encoded twice"),
    Code("FS406", "error", "unknown encoding kind", "encodings are raw, code, onehot, minmax and standard"),
    Code("FS407", "error", "encoding does not fit the feature type"),
    Code("FS408", "error", "pickle not trusted", "pickle files run code when loaded; add 'trust pickle' to the model declaration only for files you trust, or save with skops/ONNX"),
    Code("FS409", "error", "unknown model format", "formats are onnx, torch, sklearn and rule"),
    Code("FS410", "warning", "data values outside the declared domain"),
    Code("FS411", "error", "no data declared for an encoding fitted on data", "give the scaling explicitly, e.g. minmax(lo = 17, hi = 90), or declare 'features X from DATA'"),
    Code("FS412", "error", "unknown data format", "the data formats are csv"),
    # -- properties and backends
    Code("FS501", "error", "malformed property"),
    Code("FS502", "error", "backend cannot evaluate this property"),
    Code("FS503", "error", "unknown backend", "backends are milp, smt, ssat, dp, search and data"),
    Code("FS504", "warning", "property needs a backend that is not available yet"),
    Code("FS505", "error", "malformed repair block"),
    Code("FS506", "error", "unsupported model construct for this backend"),
]

CODES: dict[str, Code] = {c.code: c for c in _ALL}
