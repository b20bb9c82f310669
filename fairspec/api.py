"""The Python API: check a spec against the models and data frames a notebook or a training script
holds in memory.

    import fairspec
    report = fairspec.check("fairness/credit.fair", models={"clf": pipeline}, data={"test": df})
    report.ok                 # no property violated or unknown, no diagnostics that are errors
    report["four_fifths"]     # one Verdict (status, how, value, bound, witness, proof, ...)
    report.to_json()          # the document `fairspec check --format json` prints
    report                    # in Jupyter: the HTML report (`fairspec check --html`)

How in-memory objects are checked: each is written, in the format its declaration in the spec
names, to a private temporary folder (scikit-learn estimators and pipelines with skops, XGBoost
as JSON, LightGBM as its text format, torch modules as TorchScript, ONNX ModelProto as .onnx,
data frames as CSV with the declaration's separator, header and missing marker, or Parquet; a
polars DataFrame first becomes a pandas one with its ``to_pandas()``); the
spec then reads those files instead of the declared ones, through exactly the code `fairspec
check` runs, so the verdicts are the CLI's on the same model and data. The folder is removed
when the call returns, and the errors, diagnostics and reasons about those files name the
objects instead ("the data frame given for 'test'"). The spec file and everything it declares are
only read.

A declaration that lists ``columns = [...]`` reads its file by position; a data frame's columns are
matched to that list by name (any order, no column missing and none extra), unless its labels are
pandas' default 0..n-1, which stay positional (as many columns as the list).

Paths (str or os.PathLike) are accepted wherever an object is, and replace the declared file.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Mapping

from fairspec.errors import FairspecError, undeclared
from fairspec.files import real_path
from fairspec.verdict import Verdict

# how the caller's in-memory objects are written as the declared files (fairspec.api_objects)
from fairspec.api_objects import _DataDecl, _is_path, _ModelDecl, _Pickled, _write_data, _write_model

__all__ = ["check", "lint", "CheckReport", "FairspecError"]


@dataclass
class CheckReport:
    """What :func:`check` returns: the pipeline's report with a notebook-friendly face."""

    report: Any  # fairspec.pipeline.Report

    @property
    def verdicts(self) -> list[Verdict]:
        return list(self.report.verdicts)

    @property
    def diagnostics(self) -> list:
        return list(self.report.diagnostics)

    @property
    def exit_code(self) -> int:
        """The code `fairspec check` would exit with (0 holds, 1 violated, 2 errors -- a spec that states no
        property too --, 3 unknown, 4 internal error)."""
        return self.report.exit_code

    @property
    def ok(self) -> bool:
        """Every property holds (proved or estimated) and the spec has no error."""
        return self.exit_code == 0

    def __iter__(self) -> Iterator[Verdict]:
        return iter(self.report.verdicts)

    def __len__(self) -> int:
        return len(self.report.verdicts)

    def __getitem__(self, name: str) -> Verdict:
        for v in self.report.verdicts:
            if v.name == name:
                return v
        raise KeyError(f"no property named {name!r} (properties: {', '.join(v.name for v in self)})")

    def to_dict(self) -> dict:
        return json.loads(self.to_json())

    def to_json(self) -> str:
        """The JSON document `fairspec check --format json` prints for the same inputs."""
        from fairspec import report as rep

        return rep.to_json(self.report)

    def to_html(self) -> str:
        """The page `fairspec check --html` writes (one self-contained document)."""
        from fairspec.report import html

        return html.render(self.report)

    def _repr_html_(self) -> str:  # Jupyter's rich display
        return self.to_html()

    def __str__(self) -> str:
        import io

        from rich.console import Console

        from fairspec import report as rep

        buf = io.StringIO()
        rep.print_text(self.report, Console(file=buf, highlight=False, width=120, color_system=None))
        return buf.getvalue()

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for v in self:
            key = v.status if v.how is None else f"{v.status} ({v.how})"
            counts[key] = counts.get(key, 0) + 1
        body = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no verdicts"
        return f"<fairspec report {self.report.spec}: {body}; exit code {self.exit_code}>"


def lint(spec, *, models: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None,
         allow=(), ignore=()) -> list:
    """The diagnostics `fairspec lint` gives for the spec, with in-memory models and data in place of
    the declared files. Returns a list of fairspec Diagnostics (empty when the spec is clean).
    ``ignore``: warning codes suppressed everywhere (``--ignore``; the spec's ignore comments act too)."""
    from fairspec import pipeline

    allow = _allow(allow)
    with _Substitutes(spec, models, data) as sub:
        res = pipeline.lint(sub.spec, allow=allow + sub.allow, substitutes=sub.files, ignore=_codes(ignore))
        return [sub.relabel(d) for d in res.diagnostics]


def check(spec, *, models: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None,
          property: str | None = None, allow=(), workers: int = 1, ignore=()) -> CheckReport:
    """Lint the spec, then decide every property (or ``property``), as `fairspec check` does.

    spec:     the path of a .fair file.
    models:   {model name in the spec: an estimator, Pipeline, XGBoost/LightGBM model, torch
              module, ONNX ModelProto, or a file path}.
    data:     {data name in the spec: a pandas or polars DataFrame, or a file path}; under
              ``columns = [...]`` a frame's columns are matched to the list by name.
    property: decide only this property.
    allow:    folders outside the spec's project that its paths may name (--allow-path).
    workers:  > 1 decides the properties in parallel worker processes (--workers).
    ignore:   warning codes suppressed everywhere (--ignore), e.g. ["FS427"]; counted in to_dict()'s
              "suppressed". The spec's ``# fairspec: ignore[...]`` comments act without it.

    A bad spec is not an exception: the report carries its diagnostics (``report.diagnostics``,
    ``exit_code`` 2). An object that cannot be written in the declared format raises FairspecError.
    """
    from fairspec import pipeline

    from fairspec.runtime import executor

    allow = _allow(allow)
    if property is not None and not isinstance(property, str):
        raise FairspecError(f"property names one property of the spec (a string), not {type(property).__name__}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise FairspecError(f"workers is a whole number of worker processes, 1 or more, not {workers!r}")
    parallel = workers > 1
    codes = _codes(ignore)
    with _Substitutes(spec, models, data) as sub:
        before = dict(executor._CONFIG)
        if parallel:
            executor.configure(workers=workers, cluster=before.get("cluster"))
        try:
            rep = pipeline.check(sub.spec, only=property, allow=allow + sub.allow,
                                 substitutes=sub.files, parallel=parallel, ignore=codes)
        finally:
            executor._CONFIG.update(before)
        sub.relabel_report(rep)
        if rep.invocation:  # the caller's folders, not the temporary one the in-memory objects were written to
            rep.invocation["allow_path"] = [str(a) for a in allow]
    return CheckReport(rep)


# --------------------------------------------------------------------------- writing objects


def _codes(ignore) -> tuple[str, ...]:
    """``ignore`` as codes: one code (a string) or several; FairspecError for anything else."""
    items = [ignore] if isinstance(ignore, str) else ignore
    try:
        items = list(items or ())
    except TypeError:
        raise FairspecError(f"ignore is a warning code or a list of them (e.g. ['FS427']), not a "
                            f"{type(ignore).__name__}") from None
    bad = [x for x in items if not isinstance(x, str)]
    if bad:
        raise FairspecError(f"ignore is a warning code or a list of them (e.g. ['FS427']); {bad[0]!r} is not a code")
    return tuple(items)


def _allow(allow) -> tuple[str, ...]:
    """``allow`` as the folders it names: one path (a string or a Path) or several. A string is one
    folder, never its characters (tuple("/srv") would allow "/"); an empty one is refused, as
    --allow-path "" is (it would allow the working folder)."""
    if allow is None:
        return ()
    paths = [allow] if isinstance(allow, (str, os.PathLike)) else allow
    try:
        paths = list(paths)
    except TypeError:
        raise FairspecError(f"allow is a folder path or a list of folder paths, not a {type(allow).__name__}") from None
    out = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise FairspecError(f"allow is a folder path or a list of folder paths; {p!r} is not a path")
        if not str(os.fspath(p)).strip():
            raise FairspecError("allow names an empty path, which would allow the working folder; name the folder")
        out.append(str(os.fspath(p)))
    return tuple(out)


class _Substitutes:
    """A private folder holding the in-memory objects as files, removed on exit. The errors,
    diagnostics and reasons about those files name the objects instead (:meth:`relabel`): "the data
    frame given for 'test'", "the model given for 'clf'", not a file that is gone when the call returns."""

    def __init__(self, spec, models, data):
        if not isinstance(spec, (str, os.PathLike)):
            raise FairspecError(f"spec is the path of a .fair file, not a {type(spec).__name__}")
        self.spec = Path(spec)
        if self.spec.is_dir():
            raise FairspecError(f"spec {self.spec} is a folder, not a .fair file")
        if not self.spec.is_file():
            raise FairspecError(f"spec file {self.spec} does not exist")
        for what, given in (("models", models), ("data", data)):
            if given is not None and not isinstance(given, Mapping):
                raise FairspecError(f"{what} maps names the spec declares to objects or paths (a dict), "
                                    f"not a {type(given).__name__}")
        self.models = dict(models or {})
        self.data = dict(data or {})
        self.files: dict = {}
        self.allow: tuple = ()
        self.labels: dict[str, tuple[str, str]] = {}  # a written file -> (kind, name)
        self.rounds: dict[str, dict] = {}  # a model -> the rounds its written file kept (load entry)
        self.index_names: dict[str, list[str]] = {}  # a data frame -> its index's names (not written)
        self._tmp = None

    def __enter__(self):
        if not self.models and not self.data:
            return self
        declared = _declarations(self.spec)
        if declared is None:  # the spec does not parse: check/lint report its diagnostic
            return self
        self._tmp = tempfile.TemporaryDirectory(prefix="fairspec-api-")
        try:
            self._write_all(declared, Path(self._tmp.name))
        except BaseException:
            self._tmp.cleanup()
            raise
        return self

    def _write_all(self, declared: dict, folder: Path) -> None:
        self.allow = (str(folder),)
        for kind, objects, write, words in (("model", self.models, _write_model, ("model", "models")),
                                            ("data", self.data, _write_data, ("data set", "data sets"))):
            for name, obj in objects.items():
                decl = declared[kind].get(name)
                if decl is None:
                    raise undeclared(self.spec, words[0], words[1], name, declared[kind])
                path = write(obj, decl, folder / f"{kind}-{name}", name)
                if isinstance(path, _Pickled):                    # the caller's object, as a trusted pickle
                    path, self.files[("trusted", name)] = path[0], True
                if kind == "data" and isinstance(path, tuple):    # a frame's nulls written as a marker
                    path, self.files[("missing", name)] = path
                if kind == "model" and isinstance(path, tuple):   # an XGBoost wrapper's rounds kept
                    path, self.rounds[name] = path
                self.files[(kind, name)] = path
                if kind == "data" and not _is_path(obj):
                    names = getattr(getattr(obj, "index", None), "names", None) or ()
                    self.index_names[name] = [str(n) for n in names if n is not None]
                if kind == "model" and decl.fmt == "lightgbm" and not _is_path(obj):
                    # an LGBMClassifier's labels, which its text file does not record (its booster's class 1
                    # is classes_[1]): lint asks which is positive as for a scikit-learn classifier (FS413)
                    classes = getattr(obj, "classes_", None)
                    if classes is not None:
                        self.files[("classes", name)] = tuple(v.item() if hasattr(v, "item") else v for v in classes)
                if not _is_path(obj):
                    for shown in {str(path), str(real_path(path))}:
                        self.labels[shown] = (kind, name)

    def __exit__(self, *exc):
        if self._tmp is not None:
            self._tmp.cleanup()
        return False

    def relabel(self, x):
        """``x`` (a message, a Diagnostic, a Verdict, or a list, tuple or dict of them) with each
        written file named as the object it holds."""
        if not self.labels:
            return x
        if isinstance(x, str):
            return self._text(x)
        if type(x) in (list, tuple):
            return type(x)(self.relabel(v) for v in x)
        if type(x) is dict:
            return {k: self.relabel(v) for k, v in x.items()}
        from fairspec.diagnostics import Diagnostic

        if isinstance(x, Diagnostic):
            message = self._text(x.message)
            hint = self.relabel(x.hint)
            if message != x.message and x.code in _WRITTEN_HINTS and hint == _default_hint(x.code):
                hint = _WRITTEN_HINTS[x.code]    # "paths are relative to the spec file": not about an object
            if x.code == "FS207":                # a column that is the frame's index, which is not written
                for dname, names in self.index_names.items():
                    n = next((n for n in names if f"no column {n!r}" in message), None)
                    if n is not None and f"data set {dname!r}" in message:
                        hint = (f"{n!r} is the index of the data frame given for {dname!r}, and fairspec reads "
                                f"its columns only: pass frame.reset_index()")
                        break
            return replace(x, message=message, hint=hint,
                           related=tuple(replace(r, message=self._text(r.message)) for r in x.related))
        if isinstance(x, Verdict):
            return replace(x, reason=self.relabel(x.reason), details=self.relabel(x.details))
        return x

    def relabel_report(self, rep) -> None:
        """The report's diagnostics, error, warnings and verdicts, relabelled in place; a model's load
        entry says which of its boosting rounds were evaluated when the written file keeps fewer."""
        for load in rep.loads:
            if load.get("what") == "model" and load.get("name") in self.rounds:
                load["rounds"] = self.rounds[load["name"]]
        if not self.labels:
            return
        rep.diagnostics = self.relabel(list(rep.diagnostics))
        rep.verdicts = self.relabel(list(rep.verdicts))
        rep.error = self.relabel(rep.error)
        rep.warnings = self.relabel(list(rep.warnings))
        rep.internal_errors = self.relabel(list(rep.internal_errors))
        for load in rep.loads:      # "file": the object, not its temporary file
            if isinstance(load.get("file"), str):
                load["file"] = self._text(load["file"])
        if getattr(rep, "started", None) is not None:
            prov = rep.provenance()     # hashed now, while the written files exist (the folder goes on return)
            for entry in prov.get("files", ()):
                entry["file"] = self._text(entry["file"])

    def _text(self, text: str) -> str:
        if not any(path in text for path in self.labels):
            return text
        for path, (kind, name) in sorted(self.labels.items(), key=lambda kv: -len(kv[0])):
            shown = f"the data frame given for {name!r}" if kind == "data" else f"the model given for {name!r}"
            q = re.escape(path)
            text = re.sub(rf"\bthe pipeline in {q}", f"the pipeline given for {name!r}", text)
            # "data file P", "model file P", "ONNX model P", "scikit-learn model P": the object
            text = re.sub(rf"\b(?:(?:ONNX|onnx|torch|sklearn|scikit-learn|xgboost|XGBoost|lightgbm|LightGBM) )?"
                          rf"(?:data file|model file|model) {q}", shown, text)
            text = re.sub(rf"^{q} holds ", f"{shown} is ", text)   # "P holds a Pipeline that ..."
            text = text.replace(path, shown)
            if kind == "model":     # "model 'clf': the model given for 'clf': ..." names it once
                text = text.replace(f"model {name!r}: {shown}", shown)
                prefix = f"model {name!r}: "    # "model 'm': the output of the model given for 'm' ...": once
                if text.startswith(prefix) and shown in text[len(prefix):]:
                    text = text[len(prefix):]
            else:                   # "data file P column 'w' ...": "column 'w' of the data frame given for 'test' ..."
                text = re.sub(rf"\b{re.escape(shown)} column ('[^']*'|\"[^\"]*\")", lambda m: f"column {m.group(1)} of {shown}",
                              text)
        return text


def _declarations(spec: Path) -> dict | None:
    """{"model": {name: format}, "data": {name: _DataDecl}} as the spec writes them (parsed only;
    the files they name are not read)."""
    from fairspec.syntax import ast
    from fairspec.syntax.parser import parse_text, read_source

    out: dict = {"model": {}, "data": {}}
    try:
        tree = parse_text(read_source(spec), str(spec))
    except Exception:  # noqa: BLE001 - a spec that does not parse: lint reports it, nothing is substituted
        return None
    for node in tree.decls:
        if isinstance(node, ast.ModelDecl):
            kw = {a.name.id: a.value for a in node.args if a.kind not in ("pos", "trust")}
            rounds = kw.get("rounds")
            out["model"][node.name.id] = _ModelDecl(getattr(node.fmt, "id", None),
                                                    rounds.id if isinstance(rounds, ast.Name) else None)
        elif isinstance(node, ast.DataDecl):
            kw = {a.name.id: a.value for a in node.args if a.kind not in ("pos", "trust")}
            sep = kw["sep"].value if "sep" in kw and isinstance(kw["sep"], ast.Str) else ","
            columns = None
            if isinstance(kw.get("columns"), ast.ListLit):
                columns = tuple(x.id if isinstance(x, ast.Name) else x.value for x in kw["columns"].items
                                if isinstance(x, (ast.Name, ast.Str)))
            # as fairspec.sema.check_data reads it: `header` when given, else a header line unless
            # `columns` names the columns
            header = kw["header"].value if isinstance(kw.get("header"), ast.BoolLit) else "columns" not in kw
            missing = ""
            m = kw.get("missing")
            if isinstance(m, ast.Str):
                missing = m.value
            elif isinstance(m, ast.ListLit) and m.items and isinstance(m.items[0], ast.Str):
                missing = m.items[0].value
            out["data"][node.name.id] = _DataDecl(node.fmt.id, sep, header, missing, columns)
    return out


#: the hint of a load error about an object the call wrote (the codes' own hints speak of paths)
_WRITTEN_HINTS = {
    "FS401": ("fairspec wrote the object in the format its declaration names (scikit-learn: skops) and read it "
              "back as `fairspec check` reads a file; the message says what that read found. Pass a path "
              "instead to check a file you saved yourself"),
    "FS404": ("fairspec wrote the data frame with the declaration's separator, header and missing marker and read "
              "it back as `fairspec check` reads a file; the message says what that read found"),
}


def _default_hint(code: str) -> str | None:
    from fairspec.diagnostics.codes import CODES

    return CODES[code].hint if code in CODES else None

