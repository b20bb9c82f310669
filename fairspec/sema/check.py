"""Semantic analysis: bind names, type-check against the real model and data, build the IR.

Everything here is cheap enough for ``fairspec lint``: models are only
*peeked* (input width), data files only sampled (header and first rows).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from fairspec import ir
from fairspec.diagnostics import DiagnosticError, Related, Sink, Span
from fairspec.sema import properties as props
from fairspec.sema.exprs import ExprLowerer, LowerError, Scope, did_you_mean
from fairspec.sema.imports import load_modules
from fairspec.syntax import ast

MODEL_FORMATS = ("onnx", "torch", "sklearn", "xgboost", "lightgbm", "rule", "predictions")
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
ENCODING_KINDS = ("raw", "code", "onehot", "minmax", "standard")


@dataclass
class Decl:
    node: ast.Decl
    base: Path  # folder that relative paths in this declaration resolve against


@dataclass(frozen=True)
class _SpecView:
    distributions: tuple


@dataclass
class CheckResult:
    spec: ir.Spec | None
    diagnostics: list
    model_widths: dict
    modules: list = dataclasses.field(default_factory=list)  # the parsed files, imports first (for the editor server)
    # applied property name -> (apply span, policy property span, policy name, property name)
    apply_sites: dict = dataclasses.field(default_factory=dict)


def _arg_value(arg: ast.Arg):
    return arg.value


class Checker:
    def __init__(self, root: Path, *, peek_models: bool = True, sources: dict | None = None, allow=(),
                 substitutes: dict | None = None):
        from fairspec.files import Roots

        self.root = Path(root)
        self.sources = sources
        self.roots = Roots.for_spec(self.root, allow)  # every path the spec names resolves inside these
        self.sink = Sink()
        self.lower = ExprLowerer(self.sink)
        self.peek_models = peek_models
        # {("model" | "data", name): file}: files read instead of the ones the spec declares (the
        # Python API's in-memory models and data frames, written to its private folder)
        self.substitutes = dict(substitutes or {})
        self.header_renames: dict = {}  # data name -> (renames, path argument): FS430
        # applied property name -> (apply span, the policy property's span, policy, property)
        self.apply_sites: dict = {}
        self.symbols: dict[str, Decl] = {}
        self.lower.declared = self.symbols  # a name declared but failed its checks: no cascade error
        self.models: dict[str, ir.Model] = {}
        self.model_widths: dict[str, int | None] = {}
        self.model_names: dict[str, tuple[str, ...] | None] = {}  # the input names a model file records
        self.pipelines: dict = {}  # model -> its scikit-learn Pipeline's folded preprocessing (sklearn_pipeline.Folded)
        self.model_spans: dict = {}
        self.frame_inputs: dict = {}  # model -> its inputs, one per column (a multi-input ONNX model)
        self.deferred_pickles: dict = {}  # trusted pickles whose class the inert peek cannot read
        self.datasets: dict[str, ir.Data] = {}
        self.data_columns: dict[str, dict[str, str]] = {}
        # data set -> (file, column -> sampled values of complete rows); None when a where filter applies
        self.data_samples: dict[str, tuple[str, dict[str, list[str]]] | None] = {}
        self.feature_sets: dict[str, ir.FeatureSet] = {}
        self.encodings: dict[str, ir.Encoding] = {}
        self.groups: dict[str, ir.GroupAtom] = {}
        self.group_decls: dict[str, ast.GroupDecl] = {}
        self.distributions: dict[str, ir.Distribution] = {}
        self.properties: list[ir.Property] = []
        # declarations that failed their own checks (already reported): later uses stay silent
        self.failed_features: set[str] = set()  # feature names whose declaration (or feature set) failed
        self.encoded_models: set[str] = set()  # models with an encode block, even a failed one
        self.apply_prefixes: dict[str, ast.ApplyDecl] = {}  # property-name prefix of each policy application

    # ------------------------------------------------------------------ driver
    def run(self) -> CheckResult:
        try:
            modules = load_modules(self.root, self.sink, self.roots, self.sources)
        except DiagnosticError as e:
            self.sink.extend(e.diagnostics)
            return CheckResult(None, self.sink.items, {})
        if self.sink.has_errors and not modules:
            return CheckResult(None, self.sink.items, {})
        # Imported files contribute declarations; their properties, repairs and
        # policy applications run only when that file is the one being checked.
        root = modules[-1]
        checks = (ast.PropertyDecl, ast.RepairDecl, ast.ApplyDecl)
        decls = [Decl(d, Path(m.file).resolve().parent) for m in modules for d in m.decls
                 if not isinstance(d, ast.Import) and (m is root or not isinstance(d, checks))]
        self._bind(decls)
        by_kind = lambda cls: [d for d in decls if isinstance(d.node, cls)]  # noqa: E731
        for d in by_kind(ast.DataDecl):
            self._guard(self._data, d)
        for d in by_kind(ast.FeaturesDecl):
            self._guard(self._features, d)
        for d in by_kind(ast.ModelDecl):
            self._guard(self._model, d)
        for d in by_kind(ast.EncodeDecl):
            self._guard(self._encoding, d)
        self._pipeline_encodings()
        self._attach_model_features()
        for d in by_kind(ast.GroupDecl):
            self._guard(self._group, d)
        for d in by_kind(ast.DistributionDecl):
            self._guard(self._distribution, d)
        policies = {d.node.name.id: d for d in by_kind(ast.PolicyDecl)}
        for d in decls:
            if isinstance(d.node, ast.PropertyDecl):
                self._guard(self._property, d, d.node, {}, None)
            elif isinstance(d.node, ast.RepairDecl):
                self._guard(self._repair, d)
            elif isinstance(d.node, ast.ApplyDecl):
                self._guard(self._apply, d, policies)
        spec = ir.Spec(
            file=str(self.root), models=tuple(self.models.values()), datasets=tuple(self.datasets.values()),
            feature_sets=tuple(self.feature_sets.values()), encodings=tuple(self.encodings.values()),
            groups=tuple(self.groups.values()), distributions=tuple(self.distributions.values()),
            properties=tuple(self.properties))
        spec = dataclasses.replace(spec, datasets=used_columns(spec))
        self._header_renames(spec)
        self._network_backends(spec)
        self._tree_models(spec)
        self._unplanned(spec)
        return CheckResult(spec, self.sink.items, dict(self.model_widths), modules, dict(self.apply_sites))

    def _header_renames(self, spec: ir.Spec) -> None:
        """FS430: the spec reads a column name the file's header repeats (it reads the first)."""
        for d in spec.datasets:
            renames, arg = self.header_renames.get(d.name, ((), None))
            for name in dict.fromkeys(old for old, _, _ in renames):
                if d.used is not None and name not in d.used:
                    continue
                later = ", ".join(f"column {pos} as {new!r}" for old, new, pos in renames if old == name)
                self.sink.add("FS430", f"data file {arg.value} names the column {name!r} more than once; the spec "
                                       f"reads the first, and the later ones are read by position ({later})",
                              arg.span)

    def _unplanned(self, spec: ir.Spec) -> None:
        """FS504: a property no registered backend decides (check reports it unknown)."""
        from fairspec.planning import plan

        for prop in self.properties:
            p = plan(prop, spec)
            if not p.runs:
                self.sink.add("FS504", f"property '{prop.name}' will be reported unknown: {p.why}", prop.span)

    def _network_backends(self, spec: ir.Spec) -> None:
        """FS506: a property whose backend encodes the model as a ReLU network, over a model file that
        certainly is not one (read cheaply from the file: ONNX operators, the skops estimator).
        An error when the spec chose the backend with `using`; a warning when it is the default (the
        property is then falsified on data where it can be, and otherwise reported unknown)."""
        from fairspec.models.peek import is_tree_file, piecewise_linear_obstacle
        from fairspec.planning import plan

        seen: dict[str, str | None] = {}
        for prop in self.properties:
            p = plan(prop, spec)
            if "relu_network" not in p.needs:
                continue
            backend = p.backend
            m = self.models.get(getattr(prop, "model", ""))
            if m is None:
                continue
            if m.name not in seen:
                if m.format != "rule" and is_tree_file(m.format, m.path):   # skops or pickle, read inertly
                    seen[m.name] = None                  # tree ensembles have their own exact encodings
                else:
                    seen[m.name] = ("a rule model is not a network" if m.format == "rule" else
                                    piecewise_linear_obstacle(m.format, m.path, m.output))
            why = seen[m.name]
            if why is None:
                continue
            chosen = prop.options.backend is not None
            self.sink.add("FS506", f"the {backend} backend encodes model '{m.name}' as a ReLU network, but {why}",
                          prop.span, severity="error" if chosen else "warning",
                          hint="pick a backend that runs the model as it is (using data), or export the model "
                               "as a ReLU network",
                          related=(Related(m.span, f"model '{m.name}' declared here"),) if m.span else ())

    def _tree_models(self, spec: ir.Spec) -> None:
        """FS506 for what a tree model cannot do, known from the file before any solving: a logit
        bound on a tree or forest (its output averages probabilities: not linear in its leaves).
        Every other property kind runs on tree models (individual fairness and PBA by the exact
        tree encodings, k-discrimination by leaf combinations, group metrics over a distribution
        through the compiled decision tree, unknown at run time when that is too large)."""
        from fairspec.models.peek import AVERAGING_TREES, tree_file_class
        from fairspec.planning import plan

        for prop in self.properties:
            m = self.models.get(getattr(prop, "model", ""))
            if m is None:
                continue
            chosen = prop.options.backend is not None
            related = (Related(m.span, f"model '{m.name}' declared here"),) if m.span else ()
            if prop.kind != "individual_fairness" or getattr(prop, "post", None) != "logit" or m.format == "rule":
                continue
            backend = plan(prop, spec).backend
            if backend not in ("milp", "smt"):
                continue
            cls = tree_file_class(m.format, m.path)
            if cls in AVERAGING_TREES:
                self.sink.add("FS506", f"the {backend} backend cannot decide a logit bound on model '{m.name}': a "
                                       f"{cls}'s output averages probabilities over its leaves, and its logit is not "
                                       "linear in them (check reports it unknown)",
                              prop.span, severity="error" if chosen else "warning",
                              hint="state the bound on prob(...) instead", related=related)

    def _guard(self, fn, *args):
        try:
            fn(*args)
        except LowerError:
            pass

    def user_path(self, arg: ast.Str, base: Path, what: str) -> Path:
        """A path written in the spec, resolved inside the project roots (FS212 at its span when outside)."""
        from fairspec.files import OutsideRoot, PathError

        try:
            return self.roots.resolve(arg.value, base, what)
        except OutsideRoot as e:
            self.fail("FS212", str(e), arg.span)
        except PathError as e:
            self.fail("FS404" if what.startswith("data") else "FS401", str(e), arg.span)

    def fail(self, code, msg, span, hint=None):
        self.sink.add(code, msg, span, hint=hint)
        raise LowerError()

    # ------------------------------------------------------------------ names
    def _bind(self, decls: list[Decl]) -> None:
        for d in decls:
            name = getattr(d.node, "name", None)
            if isinstance(d.node, ast.ApplyDecl):
                name = d.node.alias
            if name is None:
                continue
            prev = self.symbols.get(name.id)
            if prev is not None:
                prev_name = prev.node.alias if isinstance(prev.node, ast.ApplyDecl) else prev.node.name
                self.sink.add("FS202", f"'{name.id}' is declared twice", name.span,
                              related=(Related(prev_name.span, "first declared here"),))
                continue
            self.symbols[name.id] = d

    def _lookup(self, name: ast.Name, kind: type, what: str, table: dict):
        if name.id in table:
            return table[name.id]
        d = self.symbols.get(name.id)
        if d is not None and not isinstance(d.node, kind):
            self.fail("FS301", f"'{name.id}' is not {what}", name.span)
        if d is not None:  # declared but failed its own checks: already reported
            raise LowerError()
        self.fail("FS201", f"unknown {what.split(' ', 1)[-1]} '{name.id}'", name.span, hint=did_you_mean(name.id, table))

    # ------------------------------------------------------------------ data
    def _data(self, d: Decl) -> None:
        node: ast.DataDecl = d.node
        fmt = node.fmt.id
        if fmt not in ("csv", "parquet"):
            self.fail("FS412", f"unknown data format '{fmt}'", node.fmt.span, hint="data formats are csv and parquet")
        pos = [a for a in node.args if a.kind == "pos"]
        if len(pos) != 1 or not isinstance(pos[0].value, ast.Str):
            self.fail("FS305", f"{fmt}(...) takes the file path as its one positional argument", node.span)
        path_arg = pos[0].value
        kw = {}
        for a in node.args:
            if a.kind == "pos":
                continue
            if a.kind == "trust":
                self.fail("FS208", "'trust' applies to model files, not data", a.span)
            kw[a.name.id] = a
        allowed = {"sep", "header", "columns", "missing", "where", "label", "categories"}
        if fmt == "parquet":  # the file has typed columns and their names
            allowed -= {"sep", "header"}
        for k, a in kw.items():
            if k not in allowed:
                self.fail("FS208", f"unknown {fmt} option '{k}'", a.name.span,
                          hint=did_you_mean(k, allowed) or f"options are {', '.join(sorted(allowed))}")
        sep = self._const(kw.get("sep"), str, ",")
        if len(sep) != 1 or sep in '"\r\n':
            self.fail("FS307", f"sep must be one character other than a quote or a line break, got {sep!r}",
                      kw["sep"].value.span)
        header = self._const(kw.get("header"), bool, None)
        columns = None
        if "columns" in kw:
            v = kw["columns"].value
            if not isinstance(v, ast.ListLit):
                self.fail("FS301", "columns = [...] lists the column names", v.span)
            columns = tuple(x.id if isinstance(x, ast.Name) else x.value for x in v.items
                            if isinstance(x, (ast.Name, ast.Str)))
            if len(columns) != len(v.items):
                self.fail("FS301", "column names are names or strings", v.span)
            dup = {c for c in columns if columns.count(c) > 1}
            if dup:
                self.fail("FS202", f"column {sorted(dup)[0]!r} is listed twice", v.span)
        if header is None:
            header = columns is None
        missing, by_column = (), ()
        if "missing" in kw:
            v = kw["missing"].value
            if isinstance(v, ast.SetLit) and v.items and all(isinstance(x, ast.MapItem) for x in v.items):
                by_column = tuple(self._missing_markers(x) for x in v.items)  # {column: ["?", ""], ...}
            else:
                items = v.items if isinstance(v, ast.ListLit) else (v,)
                if not all(isinstance(x, ast.Str) for x in items):
                    self.fail("FS301", "missing = [\"?\", ...] lists strings that mark a missing value, or "
                                       "missing = {column: [\"?\"], ...} per column", v.span)
                missing = tuple(x.value for x in items)
        categories = "names"
        if "categories" in kw:
            v = kw["categories"].value
            if not isinstance(v, ast.Name) or v.id not in ("names", "codes"):
                self.fail("FS307", "categories = names | codes (codes: the file holds each category's index)", v.span)
            categories = v.id
        path = self.substitutes.get(("data", node.name.id)) or self.user_path(path_arg, d.base, "data file")
        if fmt == "parquet":
            header = True
        data = ir.Data(node.name.id, fmt, str(path), sep, header, columns, missing, categories, span=node.span,
                       missing_by_column=by_column)
        from fairspec.runtime.data import DataError, column_names, header_renames

        try:
            names, sample = column_names(data)
            renames = header_renames(data)
        except DataError as e:
            self.fail("FS404", str(e), path_arg.span)
        if renames:  # FS430 once the columns the spec reads are known (_header_renames)
            self.header_renames[node.name.id] = (renames, path_arg)
        for col, _ in by_column:
            if col not in names:
                self.fail("FS207", f"data set '{node.name.id}' has no column '{col}' (in missing = {{...}})",
                          kw["missing"].value.span, hint=did_you_mean(col, names))
        types = {}
        for j, n in enumerate(names):
            marks = data.markers(n)
            # an empty cell is a missing value in a number column (it is no category of a text column
            # either, but there it is kept as written)
            vals = [r[j].strip() for r in sample if j < len(r) and r[j].strip() not in marks]
            filled = [v for v in vals if v != ""]
            types[n] = "num" if filled and all(_is_number(v) for v in filled) else "str"
        self.data_columns[node.name.id] = types
        complete = [r for r in sample if len(r) >= len(names)
                    and not any(c.strip() in data.markers(n) or (c.strip() == "" and types[n] == "num")
                                for c, n in zip(r, names))]
        self.data_samples[node.name.id] = None if "where" in kw else (
            path_arg.value, {n: [r[j].strip() for r in complete] for j, n in enumerate(names)}, categories)
        scope = Scope("data", columns=types)
        where = label = None
        if "where" in kw:
            where = self.lower.expect_bool(kw["where"].value, scope)
        if "label" in kw:
            x, t = self.lower.lower(kw["label"].value, scope)
            if t != "bool":
                self.fail("FS306", f"the label must be a condition, found a {'number' if t == 'num' else 'string'}",
                          kw["label"].value.span)
            label = x
        self.datasets[node.name.id] = dataclasses.replace(data, where=where, label=label)

    def _missing_markers(self, item) -> tuple[str, tuple[str, ...]]:
        """One ``column: ["?", ...]`` of ``missing = {...}``."""
        k, v = item.key, item.value
        if not isinstance(k, (ast.Name, ast.Str)):
            self.fail("FS301", "missing = {column: [\"?\"], ...}: the keys are column names", item.span)
        vals = v.items if isinstance(v, ast.ListLit) else (v,)
        if not all(isinstance(x, ast.Str) for x in vals):
            self.fail("FS301", "each column's markers are strings, as in missing = {age: [\"?\", \"\"]}", v.span)
        return (k.id if isinstance(k, ast.Name) else k.value, tuple(x.value for x in vals))

    def _const(self, arg, typ, default):
        if arg is None:
            return default
        v = arg.value
        if typ is str and isinstance(v, ast.Str):
            return v.value
        if typ is bool and isinstance(v, ast.BoolLit):
            return v.value
        if typ in (int, float) and isinstance(v, ast.Num) and (typ is float or v.is_int):
            return typ(v.value)
        word = {str: "a string", bool: "true or false", int: "a whole number", float: "a number"}[typ]
        self.fail("FS301", f"'{arg.name.id}' must be {word}", v.span)

    # ------------------------------------------------------------------ features
    def _features(self, d: Decl) -> None:
        node: ast.FeaturesDecl = d.node
        data = None
        if node.source is not None:
            try:
                data = self._lookup(node.source, ast.DataDecl, "a data set", self.datasets).name
            except LowerError:
                self.failed_features.update(fd.name.id for fd in node.features)
                raise
        seen: dict[str, ast.FeatureDecl] = {}
        feats = []
        for fd in node.features:
            if fd.name.id in seen:
                self.sink.add("FS202", f"feature '{fd.name.id}' is declared twice in {node.name.id}", fd.name.span,
                              related=(Related(seen[fd.name.id].name.span, "first declared here"),))
                continue
            seen[fd.name.id] = fd
            try:
                feats.append(self._feature(fd, data))
            except LowerError:
                self.failed_features.add(fd.name.id)
        self.feature_sets[node.name.id] = ir.FeatureSet(node.name.id, tuple(feats), data, span=node.span)

    def _feature(self, fd: ast.FeatureDecl, data: str | None) -> ir.Feature:
        t = fd.type
        if t.kind in ("int", "real"):
            if t.kind == "int" and (not float(t.lo).is_integer() or not float(t.hi).is_integer()):
                self.fail("FS301", "an int range needs whole-number bounds", t.span, hint="use 'real in [...]'")
            if t.lo > t.hi:
                self.fail("FS302", f"range [{t.lo}, {t.hi}] is empty", t.span)
            dom = ir.IntRange(int(t.lo), int(t.hi)) if t.kind == "int" else ir.RealRange(float(t.lo), float(t.hi))
        elif t.kind == "bool":
            dom = ir.Boolean()
        else:
            cats = [c.value for c in t.categories]
            for i, c in enumerate(t.categories):
                if c.value in cats[:i]:
                    self.fail("FS304", f"category '{c.value}' is listed twice", c.span)
            dom = ir.Categorical(tuple(cats))
        bins = None
        if fd.bins is not None:
            bins = tuple(float(b) for b in fd.bins)
            if t.kind not in ("int", "real"):
                self.fail("FS407", "bins apply to numeric features", fd.bins_span)
            if any(b2 <= b1 for b1, b2 in zip(bins, bins[1:])):
                self.fail("FS302", "bin edges must increase", fd.bins_span)
        column = fd.column.value if fd.column else fd.name.id
        if data is not None:
            cols = self.data_columns.get(data, {})
            if column not in cols:
                span = fd.column.span if fd.column else fd.name.span
                self.fail("FS207", f"data set '{data}' has no column '{column}' for feature '{fd.name.id}'", span,
                          hint=did_you_mean(column, cols) or "name the column with: column \"...\"")
            self._sampled_domain(fd, dom, data, column)
        return ir.Feature(fd.name.id, dom, fd.protected, column, bins, span=fd.span)

    def _sampled_domain(self, fd: ast.FeatureDecl, dom, data: str, column: str) -> None:
        """FS410: sampled rows whose value lies outside the feature's declared domain (check drops them)."""
        got = self.data_samples.get(data)
        if got is None:
            return
        file, cols, mode = got
        vals = cols.get(column, [])
        if isinstance(dom, ir.Categorical):
            if mode == "codes":
                bad = [v for v in vals if not (_is_number(v) and float(v).is_integer()
                                               and 0 <= float(v) < len(dom.categories))]
            else:
                bad = [v for v in vals if v not in dom.categories]
        elif isinstance(dom, ir.Boolean):
            bad = [v for v in vals if v.lower() not in ("1", "true", "yes", "t", "y", "0", "false", "no", "f", "n")]
        else:
            bad = [v for v in vals if _is_number(v) and not (dom.lo <= float(v) <= dom.hi
                                                             and (isinstance(dom, ir.RealRange) or float(v).is_integer()))]
        if bad:
            ex = ", ".join(repr(v) for v in sorted(set(bad))[:3])
            self.sink.add("FS410", f"{len(bad)} of the first {len(vals)} complete rows of {file} have a value in "
                                   f"column '{column}' outside the declared domain of '{fd.name.id}' (e.g. {ex}); "
                                   "check drops those rows",
                          fd.type.span)

    # ------------------------------------------------------------------ models
    def _model(self, d: Decl) -> None:
        node: ast.ModelDecl = d.node
        fmt = node.fmt.id
        if fmt not in MODEL_FORMATS:
            self.fail("FS409", f"unknown model format '{fmt}'", node.fmt.span, hint=did_you_mean(fmt, MODEL_FORMATS))
        pos = [a for a in node.args if a.kind == "pos"]
        if fmt == "rule":
            if len(pos) != 1:
                self.fail("FS305", "rule(...) takes one condition over features", node.span)
            # the rule's features are bound once encodings are known (_attach_model_features)
            self.models[node.name.id] = ir.Model(node.name.id, "rule", None, span=node.span)
            self._rule_exprs = getattr(self, "_rule_exprs", {})
            self._rule_exprs[node.name.id] = pos[0].value
            return
        if fmt == "predictions":
            self._predictions(node, pos)
            return
        if len(pos) != 1 or not isinstance(pos[0].value, ast.Str):
            self.fail("FS305", f"{fmt}(...) takes the model file path as its one positional argument", node.span)
        path_arg = pos[0].value
        output = index = score = None
        trust = False
        for a in node.args:
            if a.kind == "pos":
                continue
            if a.kind == "trust":
                if a.name.id != "pickle":
                    self.fail("FS208", f"only 'trust pickle' is known, not 'trust {a.name.id}'", a.span)
                trust = True
                continue
            k, v = a.name.id, a.value
            if k == "output":
                if isinstance(v, ast.Str):
                    output = v.value
                elif isinstance(v, ast.Num) and v.is_int:
                    output = int(v.value)
                else:
                    self.fail("FS301", "output = \"name\" or a position", v.span)
            elif k == "index":
                if not (isinstance(v, ast.Num) and v.is_int):
                    self.fail("FS301", "index = a whole number (the column of a 2-D output)", v.span)
                index = int(v.value)
            elif k == "score":
                if not (isinstance(v, ast.Name) and v.id in ("logit", "prob", "value")):
                    self.fail("FS307", "score = logit | prob | value (what the chosen output is; value: a "
                                       "regression's output)", v.span)
                score = v.id
            else:
                self.fail("FS208", f"unknown model option '{k}'", a.name.span,
                          hint=did_you_mean(k, ["output", "index", "score"]) or "options are output, index, score and trust pickle")
        path = self.substitutes.get(("model", node.name.id)) or self.user_path(path_arg, d.base, "model file")
        from fairspec.files import PathError, file_kind

        try:
            kind = file_kind(path)
        except PathError as e:
            self.fail("FS401", str(e), path_arg.span)
        if kind == "missing":
            self.fail("FS401", f"model file {path_arg.value} does not exist (looked for {path})", path_arg.span)
        if kind != "file":
            what = "a folder" if kind == "folder" else "not a regular file (a device, pipe or socket)"
            self.fail("FS401", f"model file {path_arg.value} is {what}", path_arg.span)
        if path.suffix.lower() in PICKLE_SUFFIXES and not trust:
            self.fail("FS408", f"{path.name} is a pickle file, which runs code when loaded", path_arg.span)
        model = ir.Model(node.name.id, fmt, str(path), output, index, score, trust, span=node.span)
        self.models[node.name.id] = model
        if self.peek_models:
            from fairspec.models import ModelLoadError, peek_input_width

            try:
                self.model_widths[node.name.id] = peek_input_width(fmt, path, trust_pickle=trust)
            except ModelLoadError as e:
                self.fail("FS401", str(e), path_arg.span)
            from fairspec.models.peek import peek_input_names

            self.model_names[node.name.id] = peek_input_names(fmt, path)
            self._pipeline(node, fmt, path, output, index, score, trust, path_arg)
            self._readout(node, fmt, path, output, index, score)

    def _pipeline(self, node, fmt, path, output, index, score, trust, path_arg, force: bool = False) -> None:
        """A scikit-learn Pipeline file: loaded now (its fitted preprocessing is the encoding,
        fairspec.sema.pipelines), its width the final estimator's."""
        from fairspec.models import ModelLoadError
        from fairspec.models.base import normalize_format
        from fairspec.models.peek_sklearn import sklearn_pickle_estimator, skops_top_class

        if normalize_format(fmt, path) == "onnx" and self.model_names.get(node.name.id):
            from types import SimpleNamespace

            # one graph input per column (skl2onnx): without an encode block, one column per input by name
            from fairspec.models.peek_onnx import read_onnx_signature

            try:
                sig = read_onnx_signature(path)
                used = {i for n in sig.nodes for i in n.inputs} | {o.name for o in sig.outputs}
            except ModelLoadError:
                used = set(self.model_names[node.name.id])
            unused = tuple(n for n in self.model_names[node.name.id] if n not in used)   # fed a filler value
            self.frame_inputs[node.name.id] = SimpleNamespace(inputs=self.model_names[node.name.id], dropped=unused)
            if unused:                                  # an encode block lists the inputs the graph reads
                self.model_names[node.name.id] = tuple(n for n in self.model_names[node.name.id] if n not in unused)
                self.model_widths[node.name.id] = len(self.model_names[node.name.id])
            self.model_spans[node.name.id] = node.span
            return
        if normalize_format(fmt, path) != "sklearn":
            return
        if path.suffix.lower() == ".skops":
            cls = skops_top_class(path)
        else:
            est = sklearn_pickle_estimator(path) if trust else None
            cls = "Pipeline" if force else (est[0] if est else None)
            if trust and est is None and not force:                   # e.g. joblib's own format: the inert peek cannot tell;
                self.deferred_pickles[node.name.id] = (node, fmt, path, output, index, score, trust, path_arg)
                return                                  # loaded only if no encode block writes its inputs
        if cls != "Pipeline":
            return
        from fairspec.models import ModelLoadError
        from fairspec.sema.pipelines import load_folded

        try:
            folded = load_folded(fmt, path, output, index, score, trust)
        except ModelLoadError as e:
            self.encoded_models.add(node.name.id)       # reported here: no second "has no encode block"
            self.fail("FS401", str(e), path_arg.span)
        if folded is None:                              # no ColumnTransformer: an encode block writes its inputs
            return
        self.pipelines[node.name.id] = folded
        self.model_widths[node.name.id] = None if folded.unfoldable else folded.width
        if folded.unfoldable:
            self.sink.add("FS423", f"the pipeline of model '{node.name.id}' has preprocessing fairspec cannot fold "
                                   f"into an encoding: {'; '.join(folded.unfoldable)}; properties on data run "
                                   f"through its own predict_proba, and the solvers cannot read it", path_arg.span)
        self.model_names[node.name.id] = None
        self.model_spans[node.name.id] = node.span

    def _guard_pipeline(self, args) -> None:
        from fairspec.diagnostics import DiagnosticError

        try:
            self._pipeline(*args[:-1], args[-1], force=True)
        except (LowerError, DiagnosticError):
            pass                                         # reported in the sink

    def _pipeline_encodings(self) -> None:
        """The encoding of each pipeline model that has no encode block, read from the pipeline."""
        from fairspec.sema.pipelines import derive, frame_encoding

        for name, args in self.deferred_pickles.items():
            if name not in self.encodings and name not in self.encoded_models:
                self._guard_pipeline(args)
        for name, folded in self.pipelines.items():
            if name in self.encodings or name in self.encoded_models:
                continue
            make = frame_encoding if folded.unfoldable else derive
            enc = make(folded, list(self.feature_sets.values()), name, self.sink, self.model_spans.get(name))
            if enc is None:
                self.encoded_models.add(name)       # reported: no second "has no encode block"
            else:
                self.encodings[name] = enc
        for name, inputs in self.frame_inputs.items():
            if name in self.encodings or name in self.encoded_models:
                continue
            enc = frame_encoding(inputs, list(self.feature_sets.values()), name, self.sink, self.model_spans.get(name))
            if enc is None:
                self.encoded_models.add(name)
            else:
                self.encodings[name] = enc

    def _readout(self, node, fmt, path, output, index, score) -> None:
        """FS413: the output column and decision rule must be fixed by the declaration
        (fairspec.models.readout decides; the loaders and every backend read the same)."""
        from fairspec.models.peek import peek_output_columns
        from fairspec.models.readout import ReadoutError, resolve_readout

        from fairspec.models.peek import peek_output_kind

        columns = peek_output_columns(fmt, path, output)
        what = f"the output of model '{node.name.id}'" if output is None else f"output {output!r} of model '{node.name.id}'"
        task, n_classes, classes = peek_output_kind(fmt, path, output, score)
        try:
            r = resolve_readout(columns, index, score, what, task=task if task == "regression" else None)
        except ReadoutError as e:
            self.sink.add("FS413", e.message, node.span, hint=e.hint)
            return
        # the output kind (issue 25), as far as the file tells before loading: sema.outputs checks it
        import dataclasses

        m = self.models[node.name.id]
        self.models[node.name.id] = dataclasses.replace(
            m, task=task, n_classes=n_classes if n_classes is not None else (r.columns if task == "multiclass" else None),
            classes=classes)

    def _predictions(self, node: ast.ModelDecl, pos) -> None:
        """model m = predictions(DATA, score = "col", threshold = 0.5) | predictions(DATA, decision = "col"):
        the logged decisions of a data set, audited with no model file."""
        hint = 'predictions(DATA, score = "column", threshold = 0.5) or predictions(DATA, decision = "column")'
        if len(pos) != 1 or not isinstance(pos[0].value, ast.Name):
            self.fail("FS305", "predictions(...) takes the data set that holds the decisions", node.span, hint=hint)
        data = self._lookup(pos[0].value, ast.DataDecl, "a data set", self.datasets)
        cols = self.data_columns.get(data.name, {})
        kw = {}
        for a in node.args:
            if a.kind == "pos":
                continue
            if a.kind == "trust" or a.name.id not in ("score", "decision", "threshold"):
                self.fail("FS208", f"predictions(...) has no option '{a.name.id}'", a.name.span,
                          hint="options are score, decision and threshold")
            kw[a.name.id] = a
        if ("score" in kw) == ("decision" in kw):
            self.fail("FS305", "predictions(...) reads exactly one column: score = \"col\" or decision = \"col\"",
                      node.span, hint=hint)
        which = "score" if "score" in kw else "decision"
        v = kw[which].value
        if not isinstance(v, (ast.Str, ast.Name)):
            self.fail("FS301", f"{which} names a column of '{data.name}'", v.span)
        col = v.value if isinstance(v, ast.Str) else v.id
        if col not in cols:
            self.fail("FS207", f"data set '{data.name}' has no column '{col}'", kw[which].value.span,
                      hint=did_you_mean(col, cols))
        threshold = None
        if which == "score":
            if cols[col] != "num":
                self.fail("FS306", f"the score column '{col}' of '{data.name}' does not hold numbers",
                          kw[which].value.span)
            if "threshold" not in kw:
                self.fail("FS305", "a score column needs the decision threshold: threshold = 0.5 (positive where "
                                   "score > threshold)", node.span)
            threshold = self._const(kw["threshold"], float, None)
        elif "threshold" in kw:
            self.fail("FS208", "threshold applies to a score column, not to logged decisions", kw["threshold"].span)
        fss = [f for f in self.feature_sets.values() if f.data == data.name]
        if len(fss) != 1:
            names = ", ".join(f.name for f in fss)
            self.fail("FS501", f"the groups of predictions over '{data.name}' come from the feature set declared "
                               f"'from {data.name}', and " + (f"there are {len(fss)}: {names}" if fss else "there is none"),
                      node.span, hint=f"declare exactly one: features F from {data.name} {{ ... }}")
        self.models[node.name.id] = ir.Model(
            node.name.id, "predictions", None, span=node.span, data=data.name, features=fss[0].name,
            score_column=col if which == "score" else None, decision_column=col if which == "decision" else None,
            threshold=threshold)

    # ------------------------------------------------------------------ encodings
    def _encoding(self, d: Decl) -> None:
        node: ast.EncodeDecl = d.node
        self.encoded_models.add(node.model.id)
        fs = self._lookup(node.features, ast.FeaturesDecl, "a feature set", self.feature_sets)
        model = self._lookup(node.model, ast.ModelDecl, "a model", self.models)
        if model.name in self.encodings:
            self.fail("FS202", f"model '{model.name}' already has an encoding", node.model.span)
        cols: list[ir.ColumnEncoding] = []
        seen: dict[str, ast.Name] = {}
        offset = 0
        complete = True  # False once a line is invalid: its width is unknown, so FS402/FS211 would only echo it
        for line in node.lines:
            kind = line.kind.id
            if kind not in ENCODING_KINDS:
                self.sink.add("FS406", f"unknown encoding '{kind}'", line.kind.span, hint=did_you_mean(kind, ENCODING_KINDS))
                complete = False
                continue
            for nm in line.names:
                f = fs.get(nm.id)
                if f is None:
                    complete = False
                    if nm.id not in self.failed_features:
                        self.sink.add("FS205", f"unknown feature '{nm.id}' in {fs.name}", nm.span,
                                      hint=did_you_mean(nm.id, [x.name for x in fs.features]))
                    continue
                if nm.id in seen:
                    self.sink.add("FS405", f"feature '{nm.id}' is encoded twice", nm.span,
                                  related=(Related(seen[nm.id].span, "first encoded here"),))
                    continue
                seen[nm.id] = nm
                try:
                    col = self._column_encoding(f, line, offset, fs)
                except LowerError:
                    complete = False
                    continue
                cols.append(col)
                offset += col.width
        enc = ir.Encoding(fs.name, model.name, tuple(cols), offset, span=node.span)
        width = self.model_widths.get(model.name)
        if complete and model.name in self.pipelines:
            from fairspec.sema.pipelines import check_block

            if self.pipelines[model.name].unfoldable:
                self.sink.add("FS422", f"the pipeline of model '{model.name}' is evaluated whole (fairspec cannot fold "
                                       f"its preprocessing), so an encode block cannot describe its inputs",
                              node.span, hint="drop the encode block")
            else:
                enc = check_block(enc, fs, self.pipelines[model.name], model.name, self.sink) or enc
            width = None                                 # check_block compared the block with the pipeline
        if complete and width is not None and width != offset:
            self.sink.add("FS402", f"the encoding of {fs.name} for {model.name} is {offset} columns wide, "
                                   f"but the model takes {width} inputs", node.span)
        names = self.model_names.get(model.name)
        if complete and names:
            from fairspec.sema.names import match

            enc = match(enc, fs, model.name, names, self.sink, node.span) or enc
        mentioned = {nm.id for line in node.lines for nm in line.names}  # an invalid line is reported already
        for f in fs.protected:
            if f.name not in mentioned:
                self.sink.add("FS403", f"protected feature '{f.name}' is not used by the encoding for {model.name}",
                              f.span or node.span, related=(Related(node.span, "the encoding"),))
        for f in fs.features:
            if complete and not f.protected and f.name not in mentioned:
                self.sink.add("FS211", f"feature '{f.name}' of {fs.name} is not encoded for {model.name}",
                              f.span or node.span, related=(Related(node.span, "the encoding"),),
                              hint=f"the model never sees '{f.name}'; add it to the encode block, or remove it "
                                   f"from {fs.name} if no group or condition reads it")
        self.encodings[model.name] = enc

    def _column_encoding(self, f: ir.Feature, line: ast.EncLine, offset: int, fs: ir.FeatureSet) -> ir.ColumnEncoding:
        kind = line.kind.id
        dom = f.domain
        params = {p.id: v for p, v in (line.params or ())}
        allowed_params = {"minmax": {"lo", "hi"}, "standard": {"mean", "std"}}.get(kind, set())
        for p, _v in (line.params or ()):
            if p.id not in allowed_params:
                self.fail("FS208", f"'{kind}' takes no parameter '{p.id}'", p.span,
                          hint=f"parameters: {', '.join(sorted(allowed_params))}" if allowed_params else None)
        if line.codes is not None and kind != "code":
            self.fail("FS407", f"a code table goes with 'code', not '{kind}'", line.span)
        if kind == "raw":
            if isinstance(dom, ir.Categorical):
                self.fail("FS407", f"'{f.name}' is categorical: encode it with code or onehot", line.kind.span)
            return ir.ColumnEncoding(f.name, "raw", offset, 1, span=line.span)
        if kind == "code":
            if not isinstance(dom, (ir.Categorical, ir.Boolean)):
                self.fail("FS407", f"'{f.name}' is numeric: 'code' is for categories (use raw)", line.kind.span)
            cats = dom.categories
            if line.codes is None:
                codes = tuple(float(i) for i in range(len(cats)))
            else:
                table = {}
                for cat, code in line.codes:
                    if cat.value not in cats:
                        self.fail("FS206", f"'{cat.value}' is not a category of {f.name}", cat.span,
                                  hint=did_you_mean(cat.value, cats))
                    table[cat.value] = float(code)
                missing = [c for c in cats if c not in table]
                if missing:
                    self.fail("FS407", f"the code table of {f.name} misses {', '.join(missing)}", line.span)
                codes = tuple(table[c] for c in cats)
            return ir.ColumnEncoding(f.name, "code", offset, 1, categories=cats, codes=codes, span=line.span)
        if kind == "onehot":
            if not isinstance(dom, (ir.Categorical, ir.Boolean)):
                self.fail("FS407", f"'{f.name}' is numeric: onehot is for categories", line.kind.span)
            cats = dom.categories
            return ir.ColumnEncoding(f.name, "onehot", offset, len(cats), categories=cats, span=line.span)
        if not isinstance(dom, (ir.IntRange, ir.RealRange)):
            self.fail("FS407", f"'{f.name}' is not numeric: '{kind}' scales numbers", line.kind.span)
        nums = {}
        for k, v in params.items():
            if isinstance(v, ast.Neg) and isinstance(v.arg, ast.Num):
                nums[k] = -float(v.arg.value)
            elif isinstance(v, ast.Num):
                nums[k] = float(v.value)
            else:
                self.fail("FS301", f"'{k}' must be a number", v.span)
        need = ("lo", "hi") if kind == "minmax" else ("mean", "std")
        given = [k for k in need if k in nums]
        if given and len(given) != 2:
            self.fail("FS307", f"give both {need[0]} and {need[1]}, or neither to fit them on the data", line.span)
        if not given and fs.data is None:
            self.fail("FS411", f"'{kind}' without parameters is fitted on the data, but {fs.name} has no 'from DATA'",
                      line.span)
        if kind == "minmax":
            if given and nums["hi"] <= nums["lo"]:
                self.fail("FS302", f"minmax needs lo < hi, got lo = {nums['lo']}, hi = {nums['hi']}", line.span)
            return ir.ColumnEncoding(f.name, "minmax", offset, 1, lo=nums.get("lo"), hi=nums.get("hi"),
                                     fitted=not given, span=line.span)
        if given and nums["std"] <= 0:
            self.fail("FS307", "standard needs std > 0", line.span)
        return ir.ColumnEncoding(f.name, "standard", offset, 1, mean=nums.get("mean"), std=nums.get("std"),
                                 fitted=not given, span=line.span)

    def _attach_model_features(self) -> None:
        for name, enc in self.encodings.items():
            self.models[name] = dataclasses.replace(self.models[name], features=enc.features)
        for name, expr in getattr(self, "_rule_exprs", {}).items():
            names = _names_in(expr)
            candidates = [fs for fs in self.feature_sets.values() if all(fs.get(n) for n in names)]
            if not candidates:
                span = expr.span
                unknown = [n for n in names if not any(fs.get(n) for fs in self.feature_sets.values())]
                if unknown and all(n in self.failed_features for n in unknown):
                    continue  # the features' own declaration (or their data) was reported
                self.sink.add("FS205", f"no feature set declares every feature the rule of '{name}' reads "
                                       f"({', '.join(sorted(names))})", span)
                continue
            fs = candidates[0]
            try:
                rule = self.lower.expect_bool(expr, Scope("features", features=fs))
            except LowerError:
                continue
            self.models[name] = dataclasses.replace(self.models[name], rule=rule, features=fs.name)

    # ------------------------------------------------------------------ groups
    def _group(self, d: Decl) -> None:
        node: ast.GroupDecl = d.node
        names = _names_in(node.expr)
        if not names:
            self.fail("FS308", f"group '{node.name.id}' reads no feature: a group is a condition over features",
                      node.expr.span)
        candidates = [fs for fs in self.feature_sets.values() if all(fs.get(n) for n in names)]
        if not candidates:
            unknown = sorted(n for n in names if not any(fs.get(n) for fs in self.feature_sets.values()))
            if unknown and all(n in self.failed_features for n in unknown):
                raise LowerError()  # the feature's own declaration was reported
            bad = unknown[0] if unknown else sorted(names)[0]
            span = next((n.span for n in _name_nodes(node.expr) if n.id == bad), node.expr.span)
            known = {f.name for fs in self.feature_sets.values() for f in fs.features}
            self.fail("FS205", f"unknown feature '{bad}' in group '{node.name.id}'", span,
                      hint=did_you_mean(bad, known) or "a group reads the features of one feature set")
        pred = self.lower.expect_bool(node.expr, Scope("features", features=candidates[0]))
        self.group_decls[node.name.id] = node
        self.groups[node.name.id] = ir.GroupAtom(node.name.id, None, pred, (f"not {node.name.id}", node.name.id))

    # ------------------------------------------------------------------ distributions
    def _distribution(self, d: Decl) -> None:
        node: ast.DistributionDecl = d.node
        if node.fn is None:
            rows = []
            for e in node.entries:
                if not 0.0 <= e.prob <= 1.0:
                    self.sink.add("FS309", f"probability {e.prob} is outside [0, 1]", e.span)
                    continue
                rows.append(ir.CptRow(e.target.feature.id, e.target.value,
                                      tuple((g.feature.id, g.value) for g in e.given), e.prob))
            self._table_sums(node, rows)
            self.distributions[node.name.id] = ir.Distribution(node.name.id, "table", table=tuple(rows), span=node.span)
            return
        kinds = ("empirical", "independent", "conditional", "bayes")
        if node.fn.id not in kinds:
            self.fail("FS209", f"unknown distribution '{node.fn.id}'", node.fn.span,
                      hint=did_you_mean(node.fn.id, kinds) or f"distributions are {', '.join(kinds)}")
        pos = [a for a in node.args if a.kind == "pos"]
        if len(pos) != 1 or not isinstance(pos[0].value, ast.Name):
            self.fail("FS305", f"{node.fn.id}(...) takes the data set it is estimated from", node.span)
        data = self._lookup(pos[0].value, ast.DataDecl, "a data set", self.datasets)
        params = []
        allowed = DISTRIBUTION_PARAMS.get(node.fn.id, {})
        for a in node.args:
            if a.kind in ("kw", "clause"):
                v = a.value
                if a.name.id not in allowed:
                    self.fail("FS208", f"{node.fn.id}(...) has no parameter '{a.name.id}'", a.name.span,
                              hint=did_you_mean(a.name.id, allowed)
                              or (f"parameters: {', '.join(sorted(allowed))}" if allowed else None))
                if isinstance(v, (ast.Num, ast.Str, ast.BoolLit)):
                    params.append((a.name.id, v.value))
                elif isinstance(v, ast.Name):
                    params.append((a.name.id, v.id))
                else:
                    self.fail("FS301", f"'{a.name.id}' must be a constant", v.span)
                check = allowed[a.name.id]
                if not check(params[-1][1]):
                    self.fail("FS307", f"{a.name.id} = {_shown(params[-1][1])} is not allowed: "
                                       f"{DISTRIBUTION_PARAM_WORDS[a.name.id]}", v.span)
        self.distributions[node.name.id] = ir.Distribution(node.name.id, node.fn.id, data.name, tuple(params),
                                                           span=node.span)

    def inline_distribution(self, node: ast.DistributionDecl) -> None:
        """A distribution written inside a property (``distribution = bayes(DATA)``)."""
        self._distribution(Decl(node, self.root.parent))

    def _table_sums(self, node: ast.DistributionDecl, rows: list) -> None:
        """FS310: the probabilities of one feature's values under one condition must sum to 1
        (to at most 1 while a value is left out: it gets the rest)."""
        names = {r.feature for r in rows} | {g for r in rows for g, _ in r.given}
        fs = next((fs for fs in self.feature_sets.values() if all(fs.get(n) for n in names)), None)
        groups: dict = {}
        for r, e in zip(rows, [e for e in node.entries if 0.0 <= e.prob <= 1.0]):
            groups.setdefault((r.feature, frozenset(r.given)), []).append((r, e))
        for (feature, given), items in groups.items():
            total = sum(r.prob for r, _ in items)
            values = {r.value for r, _ in items}
            f = fs.get(feature) if fs is not None else None
            if f is not None and isinstance(f.domain, ir.Boolean) or values <= {True, False}:
                complete = values == {True, False}
            elif f is not None and isinstance(f.domain, ir.Categorical):
                complete = {str(v) for v in values} >= {str(c) for c in f.domain.categories}
            else:
                complete = False
            if total > 1.0 + 1e-6 or (complete and abs(total - 1.0) > 1e-6):
                cond = (" given " + ", ".join(ir.event_text(g, v) for g, v in items[0][0].given)) if given else ""
                self.sink.add("FS310", f"the probabilities of '{feature}'{cond} sum to {total:g}, not 1",
                              items[-1][1].span)

    # ------------------------------------------------------------------ properties
    def _property(self, d: Decl, node: ast.PropertyDecl, env: dict, name_prefix: str | None,
                  apply_span: Span | None = None) -> None:
        name = node.name.id if name_prefix is None else f"{name_prefix}.{node.name.id}"
        try:
            prop = props.build_property(self, node, name, env)
        except LowerError:
            return
        if prop is not None and props.check_plan(self, prop, node.stmts, self._spec_view()):
            self.properties.append(prop)

    def _repair(self, d: Decl) -> None:
        prop = props.build_repair(self, d.node)
        if prop is not None and props.check_plan(self, prop, d.node.stmts, self._spec_view()):
            self.properties.append(prop)

    def _spec_view(self):
        """What plan() reads of the spec while it is being built: the distributions."""
        return _SpecView(tuple(self.distributions.values()))

    def _apply(self, d: Decl, policies: dict) -> None:
        node: ast.ApplyDecl = d.node
        pol = policies.get(node.policy.id)
        if pol is None:
            self.fail("FS201", f"unknown policy '{node.policy.id}'", node.policy.span, hint=did_you_mean(node.policy.id, policies))
        prefix = node.alias.id if node.alias else node.policy.id
        prev = self.apply_prefixes.get(prefix)
        if prev is not None:  # unaliased twice: the properties' names would collide
            self.sink.add("FS202", f"policy '{prefix}' is applied twice without a name, so its properties would "
                                   f"have the same names", node.span,
                          hint=f"name each application: apply {prefix}(...) as NAME",
                          related=(Related(prev.span, "first applied here"),))
            raise LowerError()
        self.apply_prefixes[prefix] = node
        env = props.bind_policy_args(self, pol.node, node)
        for p in pol.node.properties:
            before = len(self.sink.items)
            self._property(pol, p, env, prefix)
            self.apply_sites[f"{prefix}.{p.name.id}"] = (node.span, p.span, node.policy.id, p.name.id)
            # a finding inside the policy's body is located where the user applied it (the policy
            # file may be the one shipped inside the package); the body is a related location
            for i in range(before, len(self.sink.items)):
                dg = self.sink.items[i]
                where = f"policy '{node.policy.id}', property '{p.name.id}'"
                if dg.span is None or node.span is None or dg.span.file == node.span.file and \
                        node.span.line <= dg.span.line <= node.span.end_line:
                    continue
                self.sink.items[i] = dataclasses.replace(
                    dg, span=node.span, message=f"{dg.message} (in {where}, applied here)",
                    related=(Related(dg.span, f"in {where}"),) + dg.related)


def _whole(lo):
    return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer() and v >= lo


_BAYES_PARAMS = {"bins": _whole(1), "max_parents": _whole(0), "max_iter": _whole(1),
                 "score": lambda v: v in ("k2", "bic"),
                 "alpha": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0}
DISTRIBUTION_PARAMS = {
    "empirical": {},
    "independent": {k: _BAYES_PARAMS[k] for k in ("bins", "alpha")},
    "conditional": {k: _BAYES_PARAMS[k] for k in ("bins", "alpha")},
    "bayes": _BAYES_PARAMS,
}
DISTRIBUTION_PARAM_WORDS = {
    "bins": "the number of quantile bins of numeric features, a whole number >= 1",
    "max_parents": "the largest number of parents of a node, a whole number >= 0",
    "max_iter": "the number of hill-climbing steps, a whole number >= 1",
    "score": "the network score, k2 or bic",
    "alpha": "the Laplace smoothing of the probability tables, a number >= 0",
}


def _shown(v) -> str:
    return f'"{v}"' if isinstance(v, str) and not v.isidentifier() else str(v)


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def _name_nodes(e):
    """Every ast.Name inside e, in source order."""
    if isinstance(e, ast.Name):
        yield e
    elif dataclasses.is_dataclass(e):
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            for x in (v if isinstance(v, tuple) else (v,)):
                if isinstance(x, ast.Node):
                    yield from _name_nodes(x)


def _names_in(e) -> set[str]:
    out = set()

    def walk(n):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Call):
            for a in n.args:
                if a.value is not None:
                    walk(a.value)
        elif isinstance(n, ast.Compare):
            walk(n.left)
            # `sex == Male`: Male is a category; `"F" == sex`: sex is the feature read
            if not isinstance(n.right, ast.Name) or not isinstance(n.left, ast.Name):
                walk(n.right)
        elif isinstance(n, ast.InSet):
            walk(n.item)
        elif dataclasses.is_dataclass(n):
            for f in dataclasses.fields(n):
                v = getattr(n, f.name)
                if isinstance(v, ast.Node):
                    walk(v)
                elif isinstance(v, tuple):
                    for x in v:
                        if isinstance(x, ast.Node):
                            walk(x)

    walk(e)
    return out


def used_columns(spec: ir.Spec) -> tuple:
    """The data sets with ``used`` set: the columns the spec reads from each (the features' columns,
    and every column a label, where, weight, logged-decision or other expression names). A row is
    dropped for a missing value only in these (issue 23: an empty cell in a column no property
    reads keeps the row). Over-approximated: a column name read anywhere counts for every data set
    that has it."""
    named: set[str] = set()

    def walk(n, depth=0):
        if depth > 200:
            return
        if isinstance(n, (tuple, list)):
            for x in n:
                walk(x, depth + 1)
            return
        if not dataclasses.is_dataclass(n) or isinstance(n, type):
            return
        if isinstance(n, ir.ColumnRef):
            named.add(n.column)
        for f in dataclasses.fields(n):
            v = getattr(n, f.name)
            if isinstance(v, str) and (f.name == "column" or f.name.endswith("_column") or f.name == "weight"):
                named.add(v)
            elif isinstance(v, (tuple, list)) or dataclasses.is_dataclass(v):
                walk(v, depth + 1)

    walk((spec.models, spec.feature_sets, spec.groups, spec.distributions, spec.properties,
          tuple((d.where, d.label) for d in spec.datasets)))
    out = []
    for d in spec.datasets:
        cols = {f.column for fs in spec.feature_sets if fs.data == d.name for f in fs.features}
        from fairspec.runtime.data import DataError, column_names

        try:
            names = column_names(d)[0]
        except DataError:
            out.append(d)
            continue
        cols |= named & set(names)
        out.append(dataclasses.replace(d, used=tuple(n for n in names if n in cols)))
    return tuple(out)


def check_file(path, *, peek_models: bool = True, sources: dict | None = None, allow=(),
               substitutes: dict | None = None) -> CheckResult:
    """Check a spec file; ``sources`` maps paths to text read instead of the file (unsaved editor buffers);
    ``allow``: folders outside the spec's project that its paths may name (--allow-path);
    ``substitutes``: {("model" | "data", name): file} read instead of the declared files (the Python API)."""
    return Checker(Path(path), peek_models=peek_models, sources=sources, allow=allow,
                   substitutes=substitutes).run()
