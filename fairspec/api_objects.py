"""How the Python API (fairspec.api) writes the caller's in-memory objects as the files a spec declares: a model
in the format its declaration names (scikit-learn with skops, or a pickle the check trusts where skops refuses the
object; XGBoost as JSON, LightGBM as its text format, torch as TorchScript, ONNX as .onnx), a data frame as CSV
with the declaration's separator, header and missing marker, or Parquet (pandas; polars through ``to_pandas()``).
fairspec.api's ``_Substitutes`` calls :func:`_write_model` and :func:`_write_data`; the spec then reads these files
through exactly the code `fairspec check` runs."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from fairspec.errors import FairspecError
from fairspec.files import real_path


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
            from fairspec.models.sklearn_files import import_skops_io

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
        if fmt in ("xgboost", "lightgbm") and not _fitted(obj):
            raise FairspecError(f"model {name!r}: the {type(obj).__name__} given is not fitted (call its fit method "
                                f"on the training data first)")
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
    from fairspec.models.sklearn_files import _is_trusted

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


def _fitted(obj) -> bool:
    """Is a scikit-learn style wrapper (XGBClassifier, LGBMClassifier, ...) fitted? Its own
    ``__sklearn_is_fitted__`` says; a Booster, which has none, is."""
    is_fitted = getattr(obj, "__sklearn_is_fitted__", None)
    try:
        return is_fitted is None or bool(is_fitted())
    except Exception:  # noqa: BLE001 - the writer's own error then says what is wrong
        return True


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
