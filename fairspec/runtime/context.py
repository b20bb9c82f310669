"""The run-time context of one `fairspec check`: loads each model and data set once."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from fairspec import ir
from fairspec.runtime import encoding as enc_mod, job_clock
from fairspec.runtime.data import DataError, Table
from fairspec.runtime.exact_rule import evaluate_exact  # a where / label: comparisons exact near a tie
from fairspec.runtime.label_text import LabelCells, WhereText, compared_text, nan_as_number, text_as_number
from fairspec.runtime.frame import Frame, build_frame


@dataclass
class Rows:
    """The rows of a data set read as a feature set: typed values, labels, and the model input."""

    frame: Frame
    labels: np.ndarray | None  # bool, or None when the data declares no label
    table: Table | None = None  # the table the rows come from (for columns no feature reads)
    index: np.ndarray | None = None  # the rows' positions in that table

    def numeric(self, column: str) -> np.ndarray | None:
        """A data column as float64 aligned with the rows, or None when some value is not a number."""
        num = self.table.numeric(column)
        return None if num is None else num[self.index]

    def decided_numbers(self, column: str, what: str) -> np.ndarray | None:
        """``numeric(column)`` for a column read as a decision (a score against a threshold, a number against
        ``positive``): a NaN there is a DataError naming the missing = {...} that drops it (NaN > 0.5 is false:
        a negative decision, where pandas reads a missing value)."""
        from fairspec.runtime.label_text import nan_cells

        num = self.numeric(column)
        if num is not None and (err := nan_cells(self.table, column, self.index, self.table.path, what)):
            raise err
        return num

    def truthy(self, column: str, positive: str | None = None) -> np.ndarray:
        """A logged decision column as 0/1 aligned with the rows. ``positive``: the value the spec names the
        positive decision (a number column compares it as a number). Without it every value must say
        itself which it is (1/0, yes/no, true/false, t/f, y/n in any case, runtime.data.decision_word):
        any other (approve / deny, -1 / 1, 2 / 1, an empty cell of a text column) is a DataError naming the
        file and column, as lint's FS431 -- a number counted as 1 when not 0 (-1 positive) and text as 0
        unless a yes word (approve never positive), without a word."""
        from fairspec.runtime.data import decision_word, is_number, unstated_decision

        num = self.numeric(column)
        if positive is not None:
            if num is not None and column in self.table.booleans:   # the text lint read: "True" / "False"
                return (num == (1.0 if positive == "True" else 0.0 if positive == "False" else np.nan)).astype(np.int64)
            if num is not None and is_number(positive):
                num = self.decided_numbers(column, f"read as decisions, positive = {positive}")
                return (num == float(positive)).astype(np.int64)
            codes, cats = self.table.coded(column)
            hit = np.array([str(c).strip() == positive for c in cats], dtype=bool)
            return hit[codes[self.index]].astype(np.int64) if len(cats) else np.zeros(len(self.index), np.int64)
        codes, cats = self.table.coded(column)
        used = np.unique(codes[self.index])
        said = {int(k): decision_word(str(cats[k])) for k in used}
        bad = {str(cats[k]).strip() for k, w in said.items() if w is None}
        if bad:
            raise unstated_decision(self.table.path, column, bad)
        yes = np.zeros(len(cats), dtype=bool)
        yes[[k for k, w in said.items() if w]] = True
        return yes[codes[self.index]].astype(np.int64)


class Context:
    def __init__(self, spec: ir.Spec, roots=None):
        self.spec = spec
        # where files may be written (fairspec.files.Roots): the spec's project root and --allow-path
        self._roots = roots
        self._models: dict = {}
        self._tables: dict[str, Table] = {}
        self._rows: dict[tuple[str, str], Rows] = {}
        self._encodings: dict[str, ir.Encoding] = {}
        self._fit_stats: dict = {}  # (features, data) -> streamed scaling statistics
        self.warnings: list[str] = []
        self.rows_outside: dict[tuple[str, str], int] = {}  # (features, data) -> rows dropped: outside a domain
        self.suppressed: list[str] = []  # warnings an ignore comment or --ignore suppressed (counted)
        # warnings about the spec that only check can say (FS427 of a pickle, FS433 / FS435 of rows lint
        # did not read): Diagnostics at the spec's span, as lint's are; the suppressed ones with how
        self.located: list = []
        self.located_suppressed: list = []  # (Diagnostic, "inSource" | "external")
        # the group metrics of this run the planner gives the data backend, as (property, resamples)
        # pairs (set by the serial pipeline): the data backend counts those that read the same rows
        # in one pass (fairspec.backends.data.cell_counts.count)
        self.pass_mates: tuple = ()
        # what was loaded and how long it took: model files and data tables are loaded on
        # first use; the report shows these apart from the properties' own time
        self.loads: list[dict] = []

    @property
    def roots(self):
        if self._roots is None:
            from pathlib import Path

            from fairspec.files import Roots

            self._roots = Roots.for_spec(Path(self.spec.file))
        return self._roots

    @property
    def load_seconds(self) -> float:
        return sum(x["seconds"] for x in self.loads)

    # ------------------------------------------------------------------ the property's time budget
    def begin_property(self) -> None:
        """The pipeline starts a property's clock: its time budget covers all its own work."""
        self._started = (time.perf_counter(), self.load_seconds)

    def spent(self) -> float:
        """Seconds of the current property's own work so far (preparation included; loading the
        model and data files it needs first is reported apart, under loads, and not counted)."""
        started = getattr(self, "_started", None)
        if started is None:
            return 0.0
        t, loaded = started
        return max(0.0, time.perf_counter() - t - (self.load_seconds - loaded))

    def remaining(self, limit):
        """What is left of a time budget of ``limit`` seconds (None: no limit) for the current property.
        A limit taken bounds the property's work from here on: on a Dask worker the cluster's clock of
        the job starts (``job_clock.limited``; nothing before is bounded, here or there)."""
        if limit is None:
            return None
        job_clock.limited()
        left = max(0.0, float(limit) - self.spent())
        cap = getattr(self, "_cap", None)
        return left if cap is None else min(left, max(0.0, cap - time.perf_counter()))

    @contextlib.contextmanager
    def capped(self, seconds: float):
        """Within: :meth:`remaining` at most ``seconds`` from now, whatever the limit asked about -- a phase
        given a share of the property's budget, the rest kept for what follows it (kinds/pre_relax: the
        relaxed solver's share, then the search for a pair meeting the whole pre-condition)."""
        before = getattr(self, "_cap", None)
        cap = time.perf_counter() + max(0.0, float(seconds))
        self._cap = cap if before is None else min(before, cap)
        try:
            yield
        finally:
            self._cap = before

    def remaining_at_least(self, limit, floor: float):
        """``remaining(limit)``, but at least ``floor`` seconds (None: no limit): a phase granted time even
        past the budget; on a Dask worker the cluster's budget of the job grows by what is granted past it."""
        left = self.remaining(limit)
        if left is None:
            return None
        job_clock.extend(floor - left)
        return max(left, floor)

    # ------------------------------------------------------------------ models
    def model(self, name: str):
        if name not in self._models:
            t0 = time.perf_counter()
            m = self.spec.model(name)
            if m.format == "rule":
                from fairspec.runtime.rule import RuleModel

                self._models[name] = RuleModel(m, self.spec.feature_set(m.features))
            else:
                from fairspec.models import ModelLoadError, load_model

                from fairspec.runtime.job_clock import loading

                try:
                    with loading():  # on a Dask worker: not on the property's clock (as its loads here)
                        self._models[name] = load_model(m.format, m.path, output=m.output, index=m.index,
                                                        score_kind=m.score_kind, trust_pickle=m.trust_pickle,
                                                        rounds=m.rounds)
                except ModelLoadError as e:
                    if not e.code:
                        raise
                    # the declaration, not the file, is at fault (FS413: which output, which class): the
                    # diagnostic lint gives when it can read the file, at the declaration, with its hint
                    from fairspec.diagnostics import DiagnosticError, Sink

                    raise DiagnosticError(Sink().add(e.code, f"model '{name}': {e.message}", m.span,
                                                     hint=e.hint)) from None
                try:
                    bind = getattr(self._models[name], "bind_encoding", None)
                    if bind is not None:        # a scikit-learn pipeline evaluated whole on a data frame
                        enc = self.spec.encoding_for(name)
                        bind(enc, self.spec.feature_set(enc.features) if enc is not None else None)
                    self._check_width(name, self._models[name])
                    self._check_names(m, self._models[name])
                except Exception:
                    del self._models[name]      # a caller that caught this must not get the model the next time
                    raise
                self.loads.append({"what": "model", "name": name, "file": m.path,
                                   "seconds": time.perf_counter() - t0, **_rounds(self._models[name]),
                                   **self._input_order(m, self._models[name])})
        return self._models[name]

    def loaded_models(self) -> list:
        """(name, loaded model) of every model file this context has loaded so far."""
        return list(self._models.items())

    def known_encoding(self, model: str) -> ir.Encoding | None:
        """The model's encoding when it is at hand without reading data: fitted already, or needing no fit."""
        if model in self._encodings:
            return self._encodings[model]
        enc = self.spec.encoding_for(model)
        return enc if enc is not None and not enc_mod.needs_fit(enc) else None

    def _input_order(self, m: ir.Model, loaded) -> dict:
        """{"input_order": "names" | "declared"} for a load entry: whether the model's inputs were matched
        to the encoded features by the names the model records (a model fit on a data frame, a
        multi-input ONNX graph) or are the encode block's columns in its order (a scikit-learn model
        fitted on an array, a torch module, a one-input ONNX graph, a booster with generic names).
        A scikit-learn pickle recording none also gets FS427 here (:meth:`warn_at`, at the encode block):
        lint reads no pickle's names (a skops file's absence of names is lint's warning FS427)."""
        names = getattr(loaded, "input_names", None)
        by_name = bool(names) and (m.format != "onnx" or len(names) > 1)
        # a Pipeline whose ColumnTransformer selects its columns by the names it was fitted on: its
        # encoding is read from it (or a block checked against it, FS422), its final estimator's lack
        # of names is no unchecked order
        by_name = by_name or _pipeline_by_name(loaded)
        if not by_name and m.format == "sklearn" and not str(m.path).lower().endswith(".skops"):
            enc = self.spec.encoding_for(m.name)
            if enc is not None:
                from fairspec.models.base import declared_order

                # at the encode block, as lint's is; acknowledged there (# fairspec: ignore[FS427]) or by --ignore
                self.warn_at("FS427", declared_order(enc, m), enc.span)
        return {"input_order": "names" if by_name else "declared"}

    def _check_names(self, m: ir.Model, loaded) -> None:
        """A scikit-learn pickle fitted on a data frame records its input names, which lint does not read
        (it runs no pickle): the encode block is matched to them here (fairspec.sema.names.match), as lint
        matches a skops file's. A block naming them in another order -- which lint would map by name --
        or naming some and not others is error FS420 (the encoding is fixed by now: never evaluated on
        swapped columns); a block naming none of them is FS421, as lint says for a skops file."""
        names = getattr(loaded, "input_names", None)
        if m.format != "sklearn" or str(m.path).lower().endswith(".skops") or not names \
                or getattr(loaded, "pipeline", None) is not None or getattr(loaded, "folded", None) is not None:
            return
        enc = self.spec.encoding_for(m.name)
        fs = self.spec.feature_set(enc.features) if enc is not None else None
        if enc is None or fs is None or len(names) != enc.width:
            return
        from fairspec.diagnostics import DiagnosticError, Sink
        from fairspec.models.input_names import match

        sink = Sink()
        got = match(enc, fs, m.name, tuple(names), sink, enc.span)
        errors = [d for d in sink.items if d.severity == "error"]
        if got is not None and got != enc:
            moved = {c.feature: c.offset for c in got.columns}
            first = next(c for c in enc.columns if moved[c.feature] != c.offset)
            order = ", ".join(c.feature for c in got.columns)
            errors = [Sink().add("FS420", f"model '{m.name}' ({m.path}, a pickle) records its inputs in another "
                                          f"order than the encode block lists them: {', '.join(names)}", first.span,
                                 hint=f"list the features in the model's order ({order}); check reads a pickle's "
                                      f"names only after lint, too late to map the columns by them")]
        if errors:
            raise DiagnosticError(errors[0])
        for d in sink.items:
            self.warn_at(d.code, d.message, d.span, d.hint)

    def _check_width(self, name: str, loaded) -> None:
        """FS402 at check time, for a model whose width lint could not read from the file
        (a joblib pickle, a torch module without a first Linear): the same diagnostic, at the
        encode block, instead of a failure deep inside a backend."""
        width = getattr(loaded, "input_width", None)
        enc = next((e for e in self.spec.encodings if e.model == name), None)
        if width is None or enc is None or enc.width == width:
            return
        from fairspec.diagnostics import DiagnosticError, Sink

        d = Sink().add("FS402", f"the encoding of {enc.features} for {name} is {enc.width} columns wide, "
                                f"but the model takes {width} inputs", enc.span)
        raise DiagnosticError(d)

    # ------------------------------------------------------------------ data
    def table(self, name: str) -> Table:
        if name not in self._tables:
            t0 = time.perf_counter()
            d = self.spec.data(name)
            from fairspec.runtime.columnar import read_table  # pyarrow: imported when a table is read
            from fairspec.runtime.job_clock import loading

            with _reading(d), loading():
                t = read_table(d)
                if d.where is not None:
                    held = WhereText(d)      # FS432: text the where compares held only in another case
                    held.add(t)
                    held.check()
                    if (bad := text_as_number(d, "where", d.where, t)) is not None:
                        raise bad
                    if (bad := nan_as_number(d, "where", d.where, t)) is not None:
                        raise bad
                    keep = evaluate_exact(d.where, _lookup(t, d.where), t.n_rows)
                    t = t.subset(keep)
            if t.n_rows == 0:
                from fairspec.runtime.data import empty_column, parquet_empty

                empty, n = parquet_empty(d)
                for col in empty:
                    if d.used is None or col in d.used:
                        raise empty_column(d.path, col, n)
                raise DataError(f"data file {d.path} has no rows left after the missing-value and where filters",
                                d.path)
            self._tables[name] = t
            self.loads.append({"what": "data", "name": name, "file": d.path, "seconds": time.perf_counter() - t0})
        return self._tables[name]

    def rows(self, features: str, data: str) -> Rows:
        key = (features, data)
        if key not in self._rows:
            fs = self.spec.feature_set(features)
            d = self.spec.data(data)
            t = self.table(data)
            with _reading(d):
                rows = _rows_of(fs, d, t)
            self._warn_dropped(data, rows.frame.dropped, rows.frame.examples)
            self.rows_outside[key] = t.n_rows - rows.frame.n_rows
            if rows.frame.n_rows == 0:
                raise DataError(f"no row of {d.path} fits the declared domains of {features}", d.path)
            cells = LabelCells.of(self.spec, d)
            cells.add(t, rows.index)
            self._judge_cells(cells)
            self._rows[key] = rows
        return self._rows[key]

    def in_memory(self, data: str) -> bool:
        """Whether the data set is (or will be) held in memory; larger ones are streamed."""
        from fairspec.runtime import columnar

        return data in self._tables or columnar.estimated_rows(self.spec.data(data)) <= columnar.STREAM_ROWS

    def row_batches(self, features: str, data: str, batch_rows: int | None = None) -> Iterator[Rows]:
        """The rows in batches of at most ``batch_rows``: slices of the in-memory rows for a data set
        that fits (see ``in_memory``), else record batches streamed from the file, so that a data set
        larger than memory is read in bounded memory.  The same rows, in the same order, either way."""
        from fairspec.runtime import columnar

        size = batch_rows or columnar.BATCH_ROWS
        if self.in_memory(data):
            rows = self.rows(features, data)
            n = rows.frame.n_rows
            for a in range(0, n, size):
                sl = slice(a, min(n, a + size))
                frame = Frame(rows.frame.features, {k: v[sl] for k, v in rows.frame.values.items()},
                              sl.stop - sl.start)
                yield Rows(frame, None if rows.labels is None else rows.labels[sl], rows.table, rows.index[sl])
            return
        fs = self.spec.feature_set(features)
        d = self.spec.data(data)
        t0 = time.perf_counter()
        total, dropped, examples, outside = 0, {}, {}, 0
        cells, held = LabelCells.of(self.spec, d), WhereText(d)
        with _reading(d):  # the consumer's own errors are raised in its frame, not through this one
            for t in columnar.iter_arrow(d, stream=True, batch_rows=size):
                held.add(t)
                if d.where is not None:
                    if (bad := text_as_number(d, "where", d.where, t)) is not None:
                        raise bad
                    if (bad := nan_as_number(d, "where", d.where, t)) is not None:
                        raise bad
                    t = t.subset(evaluate_exact(d.where, _lookup(t, d.where), t.n_rows))
                if t.n_rows == 0:
                    continue
                rows = _rows_of(fs, d, t)
                for f, k in rows.frame.dropped.items():
                    dropped[f] = dropped.get(f, 0) + k
                    examples[f] = sorted(set(examples.get(f, [])) | set(rows.frame.examples.get(f, [])))[:5]
                total += rows.frame.n_rows
                outside += t.n_rows - rows.frame.n_rows
                cells.add(t, rows.index)
                if rows.frame.n_rows:
                    yield rows
        self._warn_dropped(data, dropped, examples)
        self.rows_outside[(features, data)] = outside
        held.check()
        self._judge_cells(cells)
        if total == 0:
            raise DataError(f"no row of {d.path} is left after the missing-value and where filters and the "
                            f"declared domains of {features}", d.path)
        if not any(x.get("name") == data and x.get("streamed") for x in self.loads):
            self.loads.append({"what": "data", "name": data, "file": d.path, "streamed": True,
                               "seconds": 0.0, "rows": total, "read_seconds": round(time.perf_counter() - t0, 4)})

    def _judge_cells(self, cells: LabelCells) -> None:
        """What the rows read show of the label and logged decisions that lint's first rows did not
        (fairspec.runtime.label_text): FS432 stops the run, as lint's error does; FS433 / FS435 are
        warnings at the label / the target / the model (:meth:`warn_at`), acknowledged as lint's are."""
        err = cells.case_error() if cells.data.label is not None else None
        if err is not None:
            raise err
        for code, span, message, hint in cells.warnings():
            self.warn_at(code, message, span, hint)

    def warn_at(self, code: str, message: str, span, hint: str | None = None) -> None:
        """A warning about the spec that check says (lint could not): a Diagnostic at ``span``, with its
        code and hint, reported as lint's are (caret snippet, JSON location, SARIF region); suppressed
        by an ignore comment at its line or by --ignore, and then counted."""
        from fairspec.diagnostics import Diagnostic

        d = Diagnostic(code, message, span, "warning", hint)
        if self.spec.ignores(code, span):
            kind = "external" if (None, None, code) in self.spec.ignored else "inSource"
            if all(x != d for x, _ in self.located_suppressed):
                self.located_suppressed.append((d, kind))
        elif d not in self.located:
            self.located.append(d)

    def _warn_dropped(self, data: str, dropped: dict, examples: dict) -> None:
        for f, n in dropped.items():
            ex = ", ".join(repr(v) for v in examples.get(f, []))
            w = f"{n} rows of {data} dropped: feature {f} outside its declared domain ({ex})"
            if w not in self.warnings:
                self.warnings.append(w)

    # ------------------------------------------------------------------ encodings
    def encoding(self, model: str) -> ir.Encoding:
        """The model's encoding with any scaling fitted on the feature set's data."""
        if model not in self._encodings:
            enc = self.spec.encoding_for(model)
            if enc is None:  # a rule (or a model without an encode block): no model-input vector exists
                from fairspec.verdict import Unsupported

                raise Unsupported(f"this backend evaluates a model on encoded inputs, and model '{model}' has none "
                                  f"({'a rule reads feature values' if self.spec.model(model).format == 'rule' else 'no encode block'})")
            if enc_mod.needs_fit(enc):
                fs = self.spec.feature_set(enc.features)
                if self.in_memory(fs.data):
                    enc = enc_mod.fit(enc, self.rows(fs.name, fs.data).frame.values)
                else:  # one streamed pass for the scaling statistics of every numeric feature
                    key = (fs.name, fs.data)
                    if key not in self._fit_stats:
                        feats = {f.name for f in fs.features if not isinstance(f.domain, (ir.Categorical, ir.Boolean))}
                        self._fit_stats[key] = enc_mod.batch_stats(
                            feats, (r.frame.values for r in self.row_batches(fs.name, fs.data)))
                    enc = enc_mod.fit_batches(enc, stats=self._fit_stats[key])
            self._encodings[model] = enc
        return self._encodings[model]

    def model_input(self, model: str, values: dict, n: int) -> np.ndarray:
        return enc_mod.encode(self.encoding(model), values, n)


@contextlib.contextmanager
def _reading(d: ir.Data):
    """A DataError while reading ``d`` names its file (pipeline locates the error at its declaration)."""
    try:
        yield
    except DataError as e:
        if e.path is None:
            e.path = d.path
        raise


def _rows_of(fs: ir.FeatureSet, d: ir.Data, t: Table) -> Rows:
    frame, ok = build_frame(fs, t, d.categories)
    labels = None
    if d.label is not None:
        if (bad := text_as_number(d, "label", d.label, t)) is not None:
            raise bad
        if (bad := nan_as_number(d, "label", d.label, t, ok)) is not None:
            raise bad
        labels = evaluate_exact(d.label, _lookup(t, d.label), t.n_rows)[ok]
    return Rows(frame, labels, t, np.flatnonzero(ok))


def _lookup(t: Table, x):
    """The leaf lookup for evaluating the data expression ``x`` (a label, a where) over ``t``. A column ``x``
    compares with text (``y == "1"``, ``k in {"a"}``: lint typed it as text from its rows) is its text
    whatever the rows at hand hold: a streamed batch, or the rows a where kept, holding only numbers read it
    as float64, and 1.0 == "1" made the label false on every such row (pandas reads the column as text)."""
    text = frozenset(c for c, _, _ in compared_text(x))
    return lambda e: _column(t, e, text)


def _column(t: Table, e, text=frozenset()):
    """A data expression's leaf: numbers as float64, text as codes (compared once per distinct value).
    A Parquet boolean column is its text "True" / "False", as lint samples and types it (a string): the
    table holds it as 1.0 / 0.0, and ``label = y == "True"`` compared that number with the text, so the
    label was false on every row (a base rate of 0 in every group, a wrong holds)."""
    if isinstance(e, ir.ColumnRef):
        num = t.numeric(e.column)
        if num is not None and e.column in text and e.column not in t.booleans and \
                not isinstance(t.columns[e.column], np.ndarray):
            from fairspec.runtime.columnar import Coded

            codes, cats = t.coded(e.column)
            return Coded(codes, cats)
        if num is not None and e.column in t.booleans:
            from fairspec.runtime.columnar import Coded

            return Coded((num == 1).astype(np.int32), np.array(["False", "True"], dtype=object))
        if num is not None:
            return num
        from fairspec.runtime.columnar import Coded

        codes, cats = t.coded(e.column)
        return Coded(codes, cats)
    raise TypeError(f"{type(e).__name__} in a data expression")


def _pipeline_by_name(loaded) -> bool:
    """A scikit-learn Pipeline (folded or evaluated whole) fitted on a data frame: fed by column name."""
    pipe = getattr(loaded, "pipeline", None)
    return pipe is not None and getattr(pipe, "feature_names_in_", None) is not None


def _rounds(model) -> dict:
    """{"rounds": ...} for a load entry when the model evaluated fewer boosting rounds than its file
    records (an XGBoost model trained with early stopping, read with ``rounds = best``): the report
    says which rounds every verdict on it is about. Empty otherwise."""
    used = getattr(model, "rounds_used", None)
    if not used or used[0] >= used[1]:
        return {}
    return {"rounds": {"used": int(used[0]), "recorded": int(used[1]), "chosen_by": "rounds = best"}}

