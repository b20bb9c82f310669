"""The run-time context of one `fairspec check`: loads each model and data set once."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fairspec import ir
from fairspec.runtime import encoding as enc_mod
from fairspec.runtime.data import DataError, Table, read_table
from fairspec.runtime.evaluate import evaluate
from fairspec.runtime.frame import Frame, build_frame


@dataclass
class Rows:
    """The rows of a data set read as a feature set: typed values, labels, and the model input."""

    frame: Frame
    labels: np.ndarray | None  # bool, or None when the data declares no label


class Context:
    def __init__(self, spec: ir.Spec):
        self.spec = spec
        self._models: dict = {}
        self._tables: dict[str, Table] = {}
        self._rows: dict[tuple[str, str], Rows] = {}
        self._encodings: dict[str, ir.Encoding] = {}
        self.warnings: list[str] = []
        # what was loaded and how long it took: model files and data tables are loaded on
        # first use; the report shows these apart from the properties' own time
        self.loads: list[dict] = []

    @property
    def load_seconds(self) -> float:
        return sum(x["seconds"] for x in self.loads)

    # ------------------------------------------------------------------ models
    def model(self, name: str):
        if name not in self._models:
            t0 = time.perf_counter()
            m = self.spec.model(name)
            if m.format == "rule":
                from fairspec.models.rule import RuleModel

                self._models[name] = RuleModel(m, self.spec.feature_set(m.features))
            else:
                from fairspec.models import load_model

                self._models[name] = load_model(m.format, m.path, output=m.output, index=m.index,
                                                score_kind=m.score_kind, trust_pickle=m.trust_pickle)
                self.loads.append({"what": "model", "name": name, "file": m.path,
                                   "seconds": time.perf_counter() - t0})
        return self._models[name]

    # ------------------------------------------------------------------ data
    def table(self, name: str) -> Table:
        if name not in self._tables:
            t0 = time.perf_counter()
            d = self.spec.data(name)
            t = read_table(d)
            if d.where is not None:
                keep = evaluate(d.where, lambda e: _column(t, e), t.n_rows)
                t = t.subset(keep)
            if t.n_rows == 0:
                raise DataError(f"data file {d.path} has no rows left after the missing-value and where filters")
            self._tables[name] = t
            self.loads.append({"what": "data", "name": name, "file": d.path, "seconds": time.perf_counter() - t0})
        return self._tables[name]

    def rows(self, features: str, data: str) -> Rows:
        key = (features, data)
        if key not in self._rows:
            fs = self.spec.feature_set(features)
            d = self.spec.data(data)
            t = self.table(data)
            frame, ok = build_frame(fs, t, d.categories)
            for f, n in frame.dropped.items():
                ex = ", ".join(repr(v) for v in frame.examples.get(f, []))
                self.warnings.append(f"{n} rows of {data} dropped: feature {f} outside its declared domain ({ex})")
            if frame.n_rows == 0:
                raise DataError(f"no row of {d.path} fits the declared domains of {features}")
            labels = None
            if d.label is not None:
                labels = evaluate(d.label, lambda e: _column(t, e), t.n_rows)[ok]
            self._rows[key] = Rows(frame, labels)
        return self._rows[key]

    # ------------------------------------------------------------------ encodings
    def encoding(self, model: str) -> ir.Encoding:
        """The model's encoding with any scaling fitted on the feature set's data."""
        if model not in self._encodings:
            enc = self.spec.encoding_for(model)
            if enc_mod.needs_fit(enc):
                fs = self.spec.feature_set(enc.features)
                rows = self.rows(fs.name, fs.data)
                enc = enc_mod.fit(enc, rows.frame.values)
            self._encodings[model] = enc
        return self._encodings[model]

    def model_input(self, model: str, values: dict, n: int) -> np.ndarray:
        return enc_mod.encode(self.encoding(model), values, n)


def _column(t: Table, e):
    if isinstance(e, ir.ColumnRef):
        num = t.numeric(e.column)
        return num if num is not None else t.columns[e.column]
    raise TypeError(f"{type(e).__name__} in a data expression")
