"""Semantic analysis: bind names, type-check against the real model and data, build the IR.

Everything here is cheap enough for ``fairspec lint``: models are only
*peeked* (input width), data files only sampled (header and first rows).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from fairspec import ir
from fairspec.files import real_path
from fairspec.diagnostics import DiagnosticError, Related, Sink, Span
from fairspec.sema import properties as props
from fairspec.sema.check_data import DataChecks, used_columns
from fairspec.sema.check_distributions import DistributionChecks
from fairspec.sema.check_features import FeatureChecks
from fairspec.sema.check_models import ModelChecks
from fairspec.sema.decl import Decl
from fairspec.sema.exprs import ExprLowerer, LowerError, did_you_mean
from fairspec.sema.imports import load_modules
from fairspec.sema.options import check_plan
from fairspec.sema.repeats import repeated_options
from fairspec.syntax import ast


@dataclass(frozen=True)
class _SpecView:
    distributions: tuple
    models: tuple = ()


@dataclass
class CheckResult:
    spec: ir.Spec | None
    diagnostics: list
    model_widths: dict
    modules: list = dataclasses.field(default_factory=list)  # the parsed files, imports first (for the editor server)
    # applied property name -> (apply span, policy property span, policy name, property name)
    apply_sites: dict = dataclasses.field(default_factory=dict)
    # every file the spec reads or names to read, also when lint fails: the spec and its imports,
    # the model and data files (no file fairspec writes may replace one of them)
    inputs: tuple = ()
    # the warnings an ignore comment or --ignore suppressed: (Diagnostic, "inSource" | "external"),
    # counted and kept for SARIF (fairspec.diagnostics.ignores; set by fairspec.pipeline.lint)
    suppressed: list = dataclasses.field(default_factory=list)


def _arg_value(arg: ast.Arg):
    return arg.value


class Checker(DataChecks, FeatureChecks, ModelChecks, DistributionChecks):
    """Binds a spec's names and checks each declaration, in the order `run` gives; each kind of declaration
    has its part in a module of its own (check_data, check_features, check_models, check_distributions)."""

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
        self.header_renames: dict = {}  # data name -> (renames, path argument, the file as named): FS430
        self.nested_columns: dict = {}  # data name -> ({column: "struct" | "list" | ...}, path argument): FS404
        self.empty_columns: dict = {}  # data name -> ({column: rows}, rows, path argument): FS404 (all null)
        self.constant_labels: dict = {}  # data name -> (message, span, hint): FS434 when a group metric reads it
        # applied property name -> (apply span, the policy property's span, policy, property)
        self.apply_sites: dict = {}
        self.symbols: dict[str, Decl] = {}
        self.lower.declared = self.symbols  # a name declared but failed its checks: no cascade error
        self.models: dict[str, ir.Model] = {}
        self.model_widths: dict[str, int | None] = {}
        self.model_names: dict[str, tuple[str, ...] | None] = {}  # the input names a model file records
        self.model_categories: dict = {}  # model -> {input index: the categories it was fit on, in code order}
        self.pipelines: dict = {}  # model -> its scikit-learn Pipeline's folded preprocessing (sklearn_pipeline.Folded)
        self.model_spans: dict = {}
        self.pipeline_paths: dict = {}  # model -> its path's span, while MinMaxScaler(clip=True) waits for a domain
        self.frame_inputs: dict = {}  # model -> its inputs, one per column (a multi-input ONNX model)
        self.deferred_pickles: dict = {}  # trusted pickles whose class the inert peek cannot read
        self.datasets: dict[str, ir.Data] = {}
        self.data_columns: dict[str, dict[str, str]] = {}
        self.data_booleans: dict[str, set[str]] = {}  # data set -> its Parquet boolean columns (FS404 if numeric)
        # data set -> (file, column -> sampled values of complete rows); None when a where filter applies
        self.data_samples: dict[str, tuple[str, dict[str, list[str]]] | None] = {}
        # data name -> {column: the distinct values of the sampled rows, missing markers left out}, with or
        # without where: what a logged decision column holds (FS431)
        self.data_values: dict[str, dict[str, set[str]]] = {}
        self.data_rows: dict[str, int] = {}  # data name -> the rows lint read (fewer than 200: the whole file)
        self.feature_sets: dict[str, ir.FeatureSet] = {}
        self.encodings: dict[str, ir.Encoding] = {}
        self.groups: dict[str, ir.GroupAtom] = {}
        self.group_decls: dict[str, ast.GroupDecl] = {}
        self.distributions: dict[str, ir.Distribution] = {}
        self.properties: list[ir.Property] = []
        # declarations that failed their own checks (already reported): later uses stay silent
        self.failed_features: set[str] = set()  # feature names whose declaration (or feature set) failed
        self.encoded_models: set[str] = set()  # models with an encode block, even a failed one
        self.failed_models: set[str] = set()  # models whose file could not be read (FS401): uses stay silent
        self.apply_prefixes: dict[str, ast.ApplyDecl] = {}  # property-name prefix of each policy application
        # {path: what it is: "the spec itself", "a spec file the spec imports", "a model file the spec reads", ...}
        self.reads: dict[Path, str] = {}

    # ------------------------------------------------------------------ driver
    def run(self) -> CheckResult:
        opened: list = []
        try:
            modules = load_modules(self.root, self.sink, self.roots, self.sources, opened)
        except DiagnosticError as e:
            self.sink.extend(e.diagnostics)
            return CheckResult(None, self.sink.items, {}, inputs=(str(self.root),))
        for i, p in enumerate(opened):
            self.reads[p] = "the spec itself" if i == 0 else "a spec file the spec imports"
        # an import that did not load (not found, outside, not parsed; a cycle loses no file): its names
        # are unknown here, and each use of one is not said again (FS201 / FS205 stay silent)
        self.lower.imports_failed = any(d.is_error and d.code != "FS204" for d in self.sink.items)
        if self.sink.has_errors and not modules:
            return CheckResult(None, self.sink.items, {}, inputs=self._inputs())
        # Imported files contribute declarations; their properties, repairs and
        # policy applications run only when that file is the one being checked.
        root = modules[-1]
        checks = (ast.PropertyDecl, ast.RepairDecl, ast.ApplyDecl)
        decls = [Decl(d, real_path(m.file).parent) for m in modules for d in m.decls
                 if not isinstance(d, ast.Import) and (m is root or not isinstance(d, checks))]
        self._bind(decls)
        repeated_options(decls, self.sink)  # FS214: csv(..., label = a, label = b), bootstrap twice
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
        for d in by_kind(ast.PolicyDecl):  # a parameter named twice: said here, not at each apply
            seen: dict = {}
            for p in d.node.params:
                if p.name.id in seen:
                    self.sink.add("FS202", f"parameter '{p.name.id}' is declared twice in policy '{d.node.name.id}'",
                                  p.name.span, related=(Related(seen[p.name.id].span, "first declared here"),))
                    policies[d.node.name.id] = None  # its applications stay silent
                    break
                seen[p.name.id] = p.name
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
            properties=tuple(self.properties), sources=tuple(str(m.file) for m in modules))
        spec = dataclasses.replace(spec, datasets=used_columns(spec))
        self._header_renames(spec)
        self._nested_columns(spec)
        self._constant_labels(spec)
        self._network_backends(spec)
        self._tree_models(spec)
        self._unplanned(spec)
        return CheckResult(spec, self.sink.items, dict(self.model_widths), modules, dict(self.apply_sites),
                           self._inputs())

    def _inputs(self) -> tuple:
        return tuple(dict.fromkeys((str(self.root), *(str(p) for p in self.reads))))

    def read_by_spec(self, path) -> str | None:
        """What ``path`` is when the spec reads it (its real location is the spec, an import, a model
        or a data file declared so far): "a model file the spec reads", ...; None otherwise."""
        from fairspec.files import _real

        real = _real(Path(path))
        return next((what for p, what in self.reads.items() if _real(p) == real), None)

    def _header_renames(self, spec: ir.Spec) -> None:
        """FS430: the spec reads a column name the file's header repeats (it reads the first)."""
        for d in spec.datasets:
            renames, arg, shown = self.header_renames.get(d.name, ((), None, None))
            for name in dict.fromkeys(old for old, _, _ in renames):
                if d.used is not None and name not in d.used:
                    continue
                later = ", ".join(f"column {pos} as {new!r}" for old, new, pos in renames if old == name)
                self.sink.add("FS430", f"data file {shown} names the column {name!r} more than once; the spec "
                                       f"reads the first, and the later ones are read by position ({later})",
                              arg.span)

    def _constant_labels(self, spec: ir.Spec) -> None:
        """FS434 (check_data._constant_label) where a group metric over the data set reads its label."""
        from fairspec.analyses.group_rates import METRICS, uses_label

        read = {p.data for p in spec.properties if isinstance(p, ir.GroupMetric) and p.metric in METRICS
                and uses_label(p.metric)}
        for name, (message, span, hint) in self.constant_labels.items():
            if name in read:
                self.sink.add("FS434", message, span, hint=hint)

    def _nested_columns(self, spec: ir.Spec) -> None:
        """FS404: the spec reads a Parquet column of nested values (check refuses it with the same
        sentence; a nested column the spec never reads is ignored)."""
        from fairspec.runtime.data import empty_column, nested_column

        for d in spec.datasets:
            nested, arg = self.nested_columns.get(d.name, ({}, None))
            for name, kind in nested.items():
                if d.used is not None and name in d.used:
                    self.sink.add("FS404", str(nested_column(d.path, name, kind)), arg.span,
                                  hint="write each value the spec reads in a column of its own (one number or text "
                                       "per row; a struct's fields: pyarrow's Table.flatten())")
        for d in spec.datasets:  # a column the spec reads that is null in every row: check has no rows left
            empty, n, arg = self.empty_columns.get(d.name, ({}, 0, None))
            for name in empty:
                if d.used is None or name in d.used:
                    self.sink.add("FS404", str(empty_column(d.path, name, n)), arg.span,
                                  hint="fill the column, or leave it out of the features, label and where")

    def _unplanned(self, spec: ir.Spec) -> None:
        """FS504: a property no registered backend decides (check reports it unknown)."""
        from fairspec.planning import plan

        for prop in self.properties:
            p = plan(prop, spec)
            if not p.runs:
                self.sink.add("FS504", f"property '{prop.name}' will be reported unknown: {p.why}", prop.span)

    def _guard(self, fn, *args):
        try:
            fn(*args)
        except LowerError:
            pass

    def user_path(self, arg: ast.Str, base: Path, what: str) -> Path:
        """A path written in the spec, resolved inside the project roots (FS212 at its span when outside)."""
        from fairspec.files import OutsideRoot, PathError

        try:
            path = self.roots.resolve(arg.value, base, what)
            if what in ("data file", "model file"):  # read by the spec (a write must never replace it)
                self.reads.setdefault(path, f"a {what} the spec reads")
            return path
        except OutsideRoot as e:
            self.fail("FS212", str(e), arg.span)
        except PathError as e:
            self.fail("FS404" if what.startswith("data") else "FS401", str(e), arg.span)

    def fail(self, code, msg, span, hint=None):
        self.sink.add(code, msg, span, hint=hint)
        raise LowerError()

    def unknown(self, code, msg, span, hint=None):
        """A name no declaration gives that a failed import could have: said unless an import failed."""
        self.lower.unknown(code, msg, span, hint=hint)

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
        self.unknown("FS201", f"unknown {what.split(' ', 1)[-1]} '{name.id}'", name.span, hint=did_you_mean(name.id, table))

    # ------------------------------------------------------------------ properties
    def _property(self, d: Decl, node: ast.PropertyDecl, env: dict, name_prefix: str | None,
                  apply_span: Span | None = None) -> None:
        name = node.name.id if name_prefix is None else f"{name_prefix}.{node.name.id}"
        try:
            prop = props.build_property(self, node, name, env)
        except LowerError:
            return
        if prop is not None and check_plan(self, prop, node.stmts, self._spec_view()):
            self.properties.append(prop)

    def _repair(self, d: Decl) -> None:
        prop = props.build_repair(self, d.node)
        if prop is not None and check_plan(self, prop, d.node.stmts, self._spec_view()):
            self.properties.append(prop)

    def _spec_view(self):
        """What plan() reads of the spec while it is being built: the distributions and the models."""
        return _SpecView(tuple(self.distributions.values()), tuple(self.models.values()))

    def _apply(self, d: Decl, policies: dict) -> None:
        node: ast.ApplyDecl = d.node
        pol = policies.get(node.policy.id)
        if pol is None and node.policy.id in policies:  # declared, but its declaration failed (reported)
            raise LowerError()
        if pol is None:
            self.unknown("FS201", f"unknown policy '{node.policy.id}'", node.policy.span,
                         hint=did_you_mean(node.policy.id, policies) or _shipped_policy(node.policy.id))
        prefix = node.alias.id if node.alias else node.policy.id
        prev = self.apply_prefixes.get(prefix)
        if prev is not None and node.alias is not None:  # one name given twice: "'a' is declared twice" (_bind)
            raise LowerError()
        if prev is not None:  # unaliased twice: the properties' names would collide
            self.sink.add("FS202", f"policy '{prefix}' is applied twice without a name, so its properties would "
                                   f"have the same names", node.span,
                          hint=f"name each application: apply {prefix}(...) as NAME",
                          related=(Related(prev.span, "first applied here"),))
            raise LowerError()
        self.apply_prefixes[prefix] = node
        env = props.bind_policy_args(self, pol.node, node)
        if not pol.node.properties:  # nothing to check: said here, not left to the empty report
            self.sink.add("FS217", f"policy '{node.policy.id}' states no property, so applying it checks nothing",
                          node.span, related=(Related(pol.node.name.span, "declared here"),))
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


def check_file(path, *, peek_models: bool = True, sources: dict | None = None, allow=(),
               substitutes: dict | None = None) -> CheckResult:
    """Check a spec file; ``sources`` maps paths to text read instead of the file (unsaved editor buffers);
    ``allow``: folders outside the spec's project that its paths may name (--allow-path);
    ``substitutes``: {("model" | "data", name): file} read instead of the declared files (the Python API);
    {("refused", name): sentence}: that model's file is refused unopened, FS212 (pipeline.check_models)."""
    from fairspec import filecache

    with filecache.one_run():  # each ONNX file parsed once in this run, and again in the next
        return Checker(Path(path), peek_models=peek_models, sources=sources, allow=allow,
                       substitutes=substitutes).run()


def _shipped_policy(name: str) -> str | None:
    """An apply of a shipped policy the spec does not import (`apply four_fifths(...)` without
    `import "fairspec/policies/four_fifths.fair"`), or of a misspelt one: the import that declares it."""
    import re

    from fairspec import paths
    from fairspec.sema.exprs import closest

    found = {}
    try:
        for f in sorted((paths.specs_dir() / "policies").glob("*.fair")):
            for m in re.finditer(r"^policy\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", f.read_text(encoding="utf-8"), re.M):
                found.setdefault(m.group(1), f.name)
    except OSError:
        return None
    near = name if name in found else closest(name, found)
    if near is None:
        return None
    what = "it" if near == name else f"'{near}'"
    return f'the shipped policy file "fairspec/policies/{found[near]}" declares {what}: import it'
