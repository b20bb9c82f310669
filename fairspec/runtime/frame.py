"""Feature frames: the typed, human-level feature values of data rows.

Values are float64 arrays: numbers as themselves, booleans 0/1, categories as
their index in the feature's declared category list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fairspec import ir
from fairspec.runtime.data import DataError, Table, is_number

_TRUE = {"1", "true", "yes", "t", "y"}
_FALSE = {"0", "false", "no", "f", "n"}


@dataclass
class Frame:
    features: ir.FeatureSet
    values: dict[str, np.ndarray]
    n_rows: int
    dropped: dict[str, int] = field(default_factory=dict)  # feature -> rows dropped as outside its domain
    examples: dict[str, list[str]] = field(default_factory=dict)

    def subset(self, mask: np.ndarray) -> "Frame":
        return Frame(self.features, {k: v[mask] for k, v in self.values.items()}, int(mask.sum()),
                     self.dropped, self.examples)


def _column(table: Table, f: ir.Feature, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (values, ok) for one feature; text is looked up once per distinct value."""
    dom = f.domain
    if f.column in table.booleans and not isinstance(dom, ir.Boolean) and \
            not (isinstance(dom, ir.Categorical) and mode != "codes"):
        # lint's FS404 (sema.check_features._boolean_column) in the same words: not 1 / 0 without a word
        said = ("should hold integer category codes" if isinstance(dom, ir.Categorical)
                else f"should be numeric for feature {f.name!r}")
        raise DataError(f"data file {table.path} column {f.column!r} {said} but is a Parquet boolean column "
                        f"(true/false)")
    if isinstance(dom, ir.Categorical):
        if mode == "codes":
            num = table.numeric(f.column)
            if num is None:
                raise DataError(f"data file {table.path} column {f.column!r} should hold integer category codes")
            ok = (num == np.round(num)) & (num >= 0) & (num < len(dom.categories))
            return np.where(ok, num, -1.0), ok
        codes, cats = table.coded(f.column)
        index = {c: i for i, c in enumerate(dom.categories)}
        lut = np.fromiter((index.get(v, -1) for v in cats), dtype=np.float64, count=len(cats))
        vals = lut[codes]
        return vals, vals >= 0
    if isinstance(dom, ir.Boolean):
        codes, cats = table.coded(f.column)
        low = [str(v).lower() for v in cats]
        t = np.array([v in _TRUE for v in low], dtype=bool)[codes]
        fl = np.array([v in _FALSE for v in low], dtype=bool)[codes]
        return t.astype(np.float64), t | fl
    num = table.numeric(f.column)
    if num is None:
        codes, cats = table.coded(f.column)
        used = np.unique(codes)
        # a text value, not an empty cell (kept as written in a column holding text): what to fix
        bad = min((v for v in cats[used] if not is_number(v)), key=lambda v: str(v).strip() == "")
        raise DataError(f"data file {table.path} column {f.column!r} should be numeric for feature "
                        f"{f.name!r} but holds {bad!r}")
    ok = (num >= dom.lo) & (num <= dom.hi)
    if isinstance(dom, ir.IntRange):
        ok &= num == np.round(num)
    return num, ok


def build_frame(fs: ir.FeatureSet, table: Table, categories_mode: str = "names") -> Frame:
    """Typed feature values of the table's rows; rows outside a declared domain are dropped and counted."""
    values, ok_all = {}, np.ones(table.n_rows, dtype=bool)
    dropped, examples = {}, {}
    for f in fs.features:
        if f.column not in table.columns:
            raise DataError(f"data file {table.path} has no column {f.column!r} for feature {f.name!r}")
        v, ok = _column(table, f, categories_mode)
        bad = ~ok
        if bad.any():
            dropped[f.name] = int(bad.sum())
            examples[f.name] = sorted(set(table.strings(f.column, bad)))[:5]
        values[f.name] = v
        ok_all &= ok
    frame = Frame(fs, {k: v[ok_all] for k, v in values.items()}, int(ok_all.sum()), dropped, examples)
    return frame, ok_all
