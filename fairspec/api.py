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


@dataclass(frozen=True)
class _ModelDecl:
    fmt: str | None
    rounds: str | None  # xgboost(..., rounds = best | all) as written (sema checks it)


@dataclass(frozen=True)
class _DataDecl:
    fmt: str
    sep: str
    header: bool
    missing: str
    columns: tuple | None  # `columns = [...]`: the file's columns, in order


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


def _is_path(obj) -> bool:
    return isinstance(obj, (str, os.PathLike))


def _write_model(obj, decl: _ModelDecl, stem: Path, name: str):
    """The path written for ``obj``, or (path, rounds) when it keeps fewer boosting rounds than the
    object records (an XGBoost wrapper after early stopping: the load entry's ``rounds``)."""
    if _is_path(obj):
        return real_path(obj)
    fmt = decl.fmt
    obj = _searched(obj, name)
    mod = type(obj).__module__.split(".")[0]
    try:
        if fmt == "sklearn":
            if mod not in ("sklearn", "imblearn", "xgboost", "lightgbm") and not hasattr(obj, "predict"):
                raise FairspecError(f"model {name!r} is declared sklearn(...) but the object is a {type(obj).__name__}")
            from fairspec.models.sklearn_model import import_skops_io

            sio = import_skops_io()     # as the loader imports it: without torch (a plain import pulls it in)
            path = stem.with_suffix(".skops")
            sio.dump(obj, path)
            if not _skops_refuses(sio, path):
                return path
            # another library's objects inside (a Pipeline ending in an XGBClassifier): the loader refuses them
            # in a skops file, so the caller's own object is written as a pickle the check trusts (the caller
            # holds it already; the declared file, if it is read, keeps its own rule)
            import pickle

            path.unlink()
            path = stem.with_suffix(".pkl")
            with open(path, "wb") as fh:
                pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
            from fairspec.models.base import mark_own_object

            mark_own_object(path)       # its name and SHA-256: no "loading ... runs the code inside the pickle"
            return _Pickled(path)
        if fmt in ("xgboost", "lightgbm", "torch") and not _of_library(obj, fmt, mod):
            raise FairspecError(f"model {name!r} is declared {fmt}(...): pass {_LIBRARY_OBJECTS[fmt]} or a file "
                                f"path, not a {type(obj).__name__}")
        if fmt == "xgboost":
            booster, rounds = _xgboost_booster(obj, decl, name)
            path = stem.with_suffix(".json")
            booster.save_model(str(path))
            return path if rounds is None else (path, rounds)
        if fmt == "lightgbm":
            from fairspec.models.pipeline_boosters import lightgbm_early_stop

            if lightgbm_early_stop(obj):
                raise FairspecError(f"model {name!r}: the LightGBM model given predicts with pred_early_stop=True "
                                    f"(it stops adding a row's trees once its margin is large), which a saved model "
                                    f"file does not record and fairspec does not model; pass it with "
                                    f"set_params(pred_early_stop=False)")
            booster = getattr(obj, "booster_", obj)
            path = stem.with_suffix(".txt")
            booster.save_model(str(path))
            return path
        if fmt == "onnx":
            if not hasattr(obj, "SerializeToString"):
                raise FairspecError(f"model {name!r} is declared onnx(...): pass an onnx.ModelProto or a file path, "
                                    f"not a {type(obj).__name__}")
            path = stem.with_suffix(".onnx")
            path.write_bytes(obj.SerializeToString())
            return path
        if fmt == "torch":
            import torch

            import warnings

            module = obj
            if not isinstance(obj, torch.jit.ScriptModule):
                training = obj.training          # the caller's module is left in the mode it was given in
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", DeprecationWarning)
                        module = torch.jit.script(obj.eval())
                except Exception as exc:  # noqa: BLE001 - one sentence for the user
                    raise FairspecError(f"model {name!r}: the torch module could not be compiled with "
                                        f"torch.jit.script ({str(exc).splitlines()[0][:160]}); pass "
                                        f"torch.jit.trace(module, example) instead") from None
                finally:
                    obj.train(training)
            path = stem.with_suffix(".pt")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                torch.jit.save(module, str(path))
            return path
    except FairspecError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise FairspecError(f"model {name!r} could not be written as {fmt}: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from None
    raise FairspecError(f"model {name!r} is declared as {fmt}(...), which the Python API cannot take in memory; "
                        f"pass a file path")


def _searched(obj, name: str):
    """A fitted hyper-parameter search (GridSearchCV, RandomizedSearchCV, the halving searches): the estimator
    its own predict and predict_proba call, ``best_estimator_`` (refit on the whole training set); one fitted
    with refit=False predicts nothing, which is one sentence."""
    cls = type(obj).__name__
    if not (cls.endswith("SearchCV") and type(obj).__module__.split(".")[0] == "sklearn"):
        return obj
    best = getattr(obj, "best_estimator_", None)
    if best is None:
        raise FairspecError(f"model {name!r}: the {cls} given has no best_estimator_ (it is not fitted, or was fitted "
                            f"with refit=False), so it predicts nothing; pass the estimator to check, fitted")
    return best


class _Pickled(tuple):
    """The path of a model the API wrote as a pickle (the check trusts it: the caller's own object)."""

    def __new__(cls, path):
        return super().__new__(cls, (path,))


def _skops_refuses(sio, path: Path) -> bool:
    """Does the skops file hold another library's types, which fairspec's loader refuses
    (fairspec.models.sklearn_model)? Not when one is a function of the training script (a lambda column
    selector, a FunctionTransformer's def): the loader's hint says how to save the pipeline without it."""
    from fairspec.models.sklearn_model import _is_trusted

    refused = [t for t in sio.get_untrusted_types(file=str(path)) if not _is_trusted(t)]
    return bool(refused) and not any(t.startswith("__main__.") or "<lambda>" in t or "<locals>" in t
                                     for t in refused)


_LIBRARY_OBJECTS = {"xgboost": "an XGBoost model (XGBClassifier, XGBRegressor or Booster)",
                    "lightgbm": "a LightGBM model (LGBMClassifier, LGBMRegressor or Booster)",
                    "torch": "a torch module (torch.nn.Module or TorchScript)"}


def _of_library(obj, fmt: str, mod: str) -> bool:
    """Is ``obj`` a model of the library ``fmt`` names (a subclass defined elsewhere included)?"""
    if fmt == "torch":
        import torch

        return isinstance(obj, torch.nn.Module)
    if fmt == "xgboost":
        return mod == "xgboost" or hasattr(obj, "get_booster")
    return mod == "lightgbm" or hasattr(obj, "booster_")


def _xgboost_booster(obj, decl: _ModelDecl, name: str):
    """(booster, rounds): the booster to write for an XGBoost object, as its own ``predict`` computes,
    and, when it keeps fewer rounds than the object records, which (the load entry's ``rounds``, so
    the report says what was checked; else None). A scikit-learn
    wrapper (XGBClassifier, XGBRegressor, ...) predicts with rounds 0 .. best_iteration when early
    stopping recorded one: the written booster keeps those rounds only (what ``rounds = best``
    reads), unless the declaration chooses with ``rounds = ...`` (then the file keeps every round
    and its best_iteration, and the loader applies the declaration). A raw Booster is written as it
    is: its ``predict`` uses every round but a caller may pass ``iteration_range``, so a best
    iteration that leaves rounds out is FS425 as for a file. The wrapper's ``missing`` is not
    recorded in a saved model (it is a property of the DMatrix): one other than NaN, the library's
    default and the only one a model file can mean, is refused -- its predict sends that value
    down each split's default branch, which fairspec's tree encodings do not model."""
    if not hasattr(obj, "get_booster"):
        return obj, None
    import math

    missing = getattr(obj, "missing", math.nan)
    try:
        nan = missing is None or math.isnan(float(missing))      # np.nan, float("nan"), np.float32("nan")
    except (TypeError, ValueError):
        nan = False
    if not nan:
        raise FairspecError(f"model {name!r}: the XGBoost model given treats {missing!r} as missing "
                            f"(missing={missing!r}), which a saved model file does not record and fairspec does "
                            f"not model; fairspec reads XGBoost models whose missing value is NaN (the default), "
                            f"so refit it with missing=np.nan")
    booster = obj.get_booster()
    best = booster.attr("best_iteration")
    if best is None or decl.rounds is not None or getattr(obj, "booster", None) == "gblinear":
        return booster, None
    from fairspec.models.treefile import rounds_ambiguous

    best = int(best)
    if not rounds_ambiguous(best, booster.num_boosted_rounds()):
        return booster, None
    # XGBClassifier.predict's iteration_range (0, best_iteration + 1); the report says so (_Substitutes)
    sliced = _with_categories(booster[: best + 1], booster)
    return sliced, {"used": int(sliced.num_boosted_rounds()), "recorded": int(booster.num_boosted_rounds()),
                    "chosen_by": f"the {type(obj).__name__}'s predict, best_iteration {best}"}


def _with_categories(sliced, full):
    """``sliced`` with the categories ``full`` records for its categorical columns (XGBoost 3.1+
    ``cats``: each column's categories in code order, which the object's predict re-codes a data
    frame by and lint checks the encode block's code tables against). A slice of a booster records
    none (xgboost 3.2 writes them empty), so they are copied back into its JSON."""
    import xgboost as xgb

    cats = json.loads(bytes(full.save_raw("json")))["learner"]["gradient_booster"]["model"].get("cats")
    if not isinstance(cats, dict) or not any((e or {}).get("values") for e in cats.get("enc") or ()):
        return sliced
    doc = json.loads(bytes(sliced.save_raw("json")))
    model = doc["learner"]["gradient_booster"]["model"]
    if any((e or {}).get("values") for e in (model.get("cats") or {}).get("enc") or ()):
        return sliced
    model["cats"] = cats
    out = xgb.Booster()
    out.load_model(bytearray(json.dumps(doc).encode()))
    return out


def _write_data(obj, decl: _DataDecl, stem: Path, name: str) -> Path:
    if _is_path(obj):
        return real_path(obj)
    frame = _pandas_frame(obj, name)
    if decl.columns is not None:
        frame = _declared_order(frame, decl.columns, name)
    marker = None
    if decl.fmt != "parquet":
        frame = _widened(frame)
    if decl.fmt != "parquet" and not decl.missing:
        frame, marker = _mark_nulls(frame)
    try:
        if decl.fmt == "parquet":
            path = stem.with_suffix(".parquet")
            frame.to_parquet(path, index=False)
            return path
        path = stem.with_suffix(".csv")
        frame.to_csv(path, sep=decl.sep, header=decl.header, index=False, na_rep=decl.missing)
        return path if marker is None else (path, marker)
    except Exception as exc:  # noqa: BLE001
        raise FairspecError(f"data set {name!r} could not be written as {decl.fmt}: {type(exc).__name__}: {exc}") from None


def _pandas_frame(obj, name: str):
    """``obj`` as a pandas DataFrame, or FairspecError. A polars DataFrame is converted with its
    ``to_pandas()`` (polars' default conversion, through pyarrow): an Enum or Categorical column
    becomes a pandas categorical, an integer column with nulls a float one (NaN), a null a NaN or
    None -- what a pandas frame of the same data holds, so it is written and read as that frame is.
    A lazy frame or a series is refused with the call that makes a DataFrame of it."""
    kind = type(obj).__name__
    if type(obj).__module__.split(".")[0] == "polars":
        if hasattr(obj, "collect") and not hasattr(obj, "to_pandas"):
            raise FairspecError(f"data set {name!r}: the polars LazyFrame given is not computed; pass "
                                f"frame.collect() (a polars DataFrame)")
        if not hasattr(obj, "to_pandas") or not hasattr(obj, "columns"):
            raise FairspecError(f"data set {name!r}: pass a pandas or polars DataFrame or a file path, "
                                f"not a polars {kind}" + (" (series.to_frame() makes one)" if kind == "Series" else ""))
        try:
            import pandas  # noqa: F401 - polars' to_pandas needs it; say so in one sentence
        except ImportError:
            raise FairspecError(f"data set {name!r}: a polars DataFrame is converted with its to_pandas(), which "
                                f"needs pandas (pip install pandas); or pass the path of a file written with "
                                f"frame.write_csv / frame.write_parquet") from None
        try:
            obj = obj.to_pandas()
        except Exception as exc:  # noqa: BLE001 - one sentence for the user
            raise FairspecError(f"data set {name!r}: the polars DataFrame given could not be converted with "
                                f"to_pandas(): {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                                ) from None
    if not hasattr(obj, "to_csv") or not hasattr(obj, "columns"):
        raise FairspecError(f"data set {name!r}: pass a pandas or polars DataFrame or a file path, not a {kind}"
                            + (" (series.to_frame() makes one)" if kind == "Series" else ""))
    if getattr(obj.columns, "nlevels", 1) > 1:  # to_csv wrote a header line per level: the later ones read as rows
        raise FairspecError(f"the data frame given for {name!r} has columns of {obj.columns.nlevels} levels (a "
                            f"MultiIndex), which no CSV header or Parquet column name holds; flatten them first "
                            f"(frame.columns = ['_'.join(map(str, c)) for c in frame.columns])")
    return obj


def _widened(frame):
    """``frame`` with its float16 / float32 columns as float64 (exact), so that CSV holds each cell's own number:
    pandas writes a float32 cell as its shortest float32 decimal (0.1f as "0.1"), which reads back as another
    float64 (0.1, not 0.10000000149011612, the number the frame holds and the model's own predict reads)."""
    import numpy as np
    import pandas as pd

    def narrow(col) -> bool:
        dt = col.dtype
        if isinstance(dt, pd.SparseDtype):              # a sparse column of float32 / float16 cells
            dt = dt.subtype
        if dt == object:                                # np.float32 / np.float16 scalars among its cells
            return any(isinstance(v, (np.float32, np.float16)) for v in col)
        try:
            return pd.api.types.is_float_dtype(dt) and np.dtype(getattr(dt, "numpy_dtype", dt)).itemsize < 8
        except TypeError:                               # an extension dtype numpy cannot read: not a narrow float
            return False

    cols = [i for i in range(frame.shape[1]) if narrow(frame.iloc[:, i])]
    if not cols:
        return frame
    out = frame.copy()
    for i in cols:
        col = out.iloc[:, i]
        if isinstance(col.dtype, pd.SparseDtype):
            col = col.sparse.to_dense()
        if col.dtype == object:                         # each narrow cell as its own double (exact), others kept
            out.isetitem(i, col.map(lambda v: float(v) if isinstance(v, (np.float32, np.float16)) else v))
            continue
        nullable = hasattr(col.dtype, "numpy_dtype")
        out.isetitem(i, col.astype("Float64" if nullable else np.float64))
    return out


def _mark_nulls(frame):
    """(frame, marker): a data frame's null cells (NaN, None, pd.NA, NaT) outside its number columns
    written as a marker no cell holds, which the spec then reads as missing (``("missing", name)``
    in the substitutes): a CSV file's empty cell is missing in a number column only, and a null in a
    text column written as one was read as the category "" -- a missing label as a negative one.
    (frame, None) when there is no such null; number columns keep theirs as empty cells."""
    import pandas as pd

    # by position: a frame may name two columns alike (written so, then read as NAME.1 with FS430, as a
    # file's header is), where frame[c] is a frame of both (AttributeError: no dtype)
    def text(i):
        return not pd.api.types.is_numeric_dtype(frame.iloc[:, i].dtype)

    cols = [i for i in range(frame.shape[1]) if text(i) or pd.api.types.is_bool_dtype(frame.iloc[:, i].dtype)]
    cols = [i for i in cols if frame.iloc[:, i].isna().any()]
    if not cols:
        return frame, None
    marker = "<missing>"
    seen = {str(v) for i in range(frame.shape[1]) if text(i) for v in frame.iloc[:, i].dropna().unique()}
    while marker in seen:
        marker = "<" + marker + ">"
    out = frame.copy()
    for i in cols:
        out.isetitem(i, out.iloc[:, i].astype(object).where(out.iloc[:, i].notna(), marker))
    return out, marker


def _declared_order(frame, columns: tuple, name: str):
    """A data frame for a declaration that lists its columns (``columns = [...]``: a file is read by
    position): the frame's columns matched by name, in the declared order. A frame whose labels are
    pandas' default 0..n-1 carries no names and stays positional, as a headerless file.
    A named frame has exactly the declared columns, in any order: a file read by position has no
    more either, and a missing or unknown name is a mistake a verdict must not hide."""
    labels = list(frame.columns)
    from fairspec.syntax.literals import name_or_string

    listed = f"columns = [{', '.join(name_or_string(c) for c in columns)}]"
    if labels == list(range(len(labels))):
        if len(labels) != len(columns):
            raise FairspecError(f"the data frame given for {name!r} has {len(labels)} unnamed columns, and the "
                                f"declaration of data set {name!r} lists {len(columns)} in {listed}")
        return frame
    missing = [c for c in columns if c not in labels]
    if missing:
        raise FairspecError(f"the data frame given for {name!r} has no {_columns(missing)}, which the declaration "
                            f"of data set {name!r} lists in {listed} (a frame's columns are matched by name; one "
                            f"with pandas' default labels 0..n-1 is read by position)")
    twice = list(dict.fromkeys(c for c in labels if labels.count(c) > 1))
    if twice:
        raise FairspecError(f"the data frame given for {name!r} has the {_columns(twice)} twice, so it cannot "
                            f"be matched by name to the {listed} of data set {name!r}")
    extra = [c for c in labels if c not in columns]
    if extra:
        raise FairspecError(f"the data frame given for {name!r} has the {_columns(extra)}, which the declaration "
                            f"of data set {name!r} does not list in {listed} (a file declared so holds exactly "
                            f"those columns; select them with frame[[...]])")
    return frame[list(columns)]


def _columns(names: list) -> str:
    """'column 'y'' / 'columns 'y' and 'prior'' (at most five named)."""
    q = [repr(str(n)) for n in names]
    if len(q) > 5:
        q = q[:4] + [f"{len(q) - 4} more"]
    return f"column {q[0]}" if len(q) == 1 else f"columns {', '.join(q[:-1])} and {q[-1]}"
