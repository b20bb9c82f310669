"""scikit-learn ``Pipeline`` / ``ColumnTransformer`` preprocessing read as an encoding (issue 23 item 1).

A pipeline such as ``Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(), ["sex", "race"]),
("sc", StandardScaler(), ["age"])])), ("clf", LogisticRegression())])`` is a fitted encoding followed
by an estimator. ``fold`` reads the fitted transformers (categories, means, scales) and returns the
encoding they compute, column by column, in the same terms as a hand-written ``encode`` block
(``raw``, ``code``, ``onehot``, ``minmax``, ``standard``), with the final estimator: every backend then
sees the estimator on the encoded columns, exactly as with a hand-written block.

Folded: ``OneHotEncoder`` (with ``drop``, the dropped category is the block of all zeros: fairspec lays out the
whole block and widens the estimator, ``sklearn_widen``; grouping infrequent categories, one column per category
laid out and the estimator's column of a group read as the sum of its categories' columns, :func:`_grouped_onehot`), ``OrdinalEncoder`` (infrequent
categories grouped, or a category imputed before it: the codes read off its own transform, ``FoldedColumn.codes``,
categories sharing one a witness prints as kinds/shared_codes chooses),
``StandardScaler``, ``MinMaxScaler`` (any ``feature_range``; ``clip=True`` only against a domain the
clip never acts on, :func:`settle`), ``"passthrough"`` and
``"drop"``, ``SimpleImputer`` without indicator columns whose ``missing_values`` is NaN, None or pd.NA (the identity on every domain point: no
declared value is missing; one whose ``missing_values`` is a number, once :func:`settle` finds the declared
domain holds no such value) alone or as the first steps of a nested pipeline before one of those, inside a ``ColumnTransformer`` that is the pipeline's first step (``transformer_weights`` where one encoding
computes the weighted output exactly, :func:`_weighted`) (a pipeline without one
is evaluated whole, on the columns an encode block writes, as before), and whose output is dense when the
final estimator is XGBoost's (a sparse one's absent entries are missing values to XGBoost, the dense encoding's 0
is not), and whose output is float64 unless the final estimator is a tree model reading one-hot blocks and whole
codes (every output float32 -- encoders with ``dtype=np.float32`` -- makes a linear model or an MLP compute in
float32, ``pipeline_layout.narrow_handoff``, applied by the loader). Anything else is listed in ``Folded.unfoldable``, one
phrase per transformer, and the pipeline is evaluated as a whole (its own ``predict_proba``).

Imports scikit-learn only through the estimator objects it is handed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

ENCODERS = ("OneHotEncoder", "OrdinalEncoder")
SCALERS = ("StandardScaler", "MinMaxScaler")


@dataclass(frozen=True)
class FoldedColumn:
    """One input column of the pipeline and the encoded columns [offset, offset + width) it becomes."""

    column: str                       # the pipeline's input column (a data frame column name)
    kind: str                         # raw | code | onehot | minmax | standard
    offset: int
    width: int
    transformer: str = ""             # the ColumnTransformer entry that encodes it, for messages
    categories: tuple[str, ...] = ()  # onehot: one column per category in this order; code: code i = categories[i]
    lo: float | None = None
    hi: float | None = None
    mean: float | None = None
    std: float | None = None
    scale: float | None = None        # minmax: the scaler's scale_ and min_ (it computes v * scale_ + min_)
    shift: float | None = None
    values: tuple = field(default=(), compare=False, repr=False)   # the fitted categories as the pipeline holds them
    drop: int | None = None           # onehot: the category OneHotEncoder(drop=...) writes as all zeros (its
    #                                   column is not in the estimator's input; see Folded.keep)
    clip: tuple[float, float] | None = None   # minmax: MinMaxScaler(clip=True)'s feature_range (settle)
    lenient: bool = False             # onehot: handle_unknown='ignore' (another category is all zeros), for messages
    weight: float | None = None       # onehot: transformer_weights' power-of-2 weight, its columns 0 / weight in
    #                                   the estimator's input (fairspec encodes 0 / 1, see Folded.scale)
    groups: tuple | None = None       # onehot grouping infrequent categories: per output column of the encoder,
    #                                   the categories (indices) its own transform writes a 1 there for (a
    #                                   category in none is written all zeros); fairspec lays out one column per
    #                                   category and the estimator reads the sums (Folded.merged)
    reweighted: tuple | None = None   # standard / minmax times a transformer weight other than a power of 2:
    #                                   (step phrase, w, mean, std) / (step phrase, w, scale, shift), the pipeline's
    #                                   own arithmetic, which settle compares with this column's on every domain value
    imputes: tuple = ()               # SimpleImputers before it replacing a number: (step, value, statistic) each,
    #                                   the identity on a domain holding none of the values (settle)
    codes: tuple[float, ...] = ()     # code: the code of categories[i] as the pipeline computes it (its own
    #                                   transform: shared by categories an encoder groups or an imputer maps
    #                                   onto another, scaled by a transformer weight); () = its index i


@dataclass(frozen=True)
class Folded:
    columns: tuple[FoldedColumn, ...]   # by offset
    width: int                          # the final estimator's input width
    final: Any                          # the final estimator
    inputs: tuple[str, ...]             # the pipeline's input columns, in its order
    unfoldable: tuple[str, ...] = field(default=())   # transformers fairspec cannot fold, one phrase each
    dropped: tuple[str, ...] = field(default=())      # input columns the pipeline drops
    # OneHotEncoder(drop=...): ``final`` is the estimator widened to read the full one-hot blocks
    # (sklearn_widen), ``runtime`` the pipeline's own estimator, which reads ``X[:, keep]``
    keep: tuple[int, ...] | None = None
    runtime: Any = None
    # a weighted one-hot block: the runtime estimator reads ``X[:, keep] * scale`` (its columns 0 / w, as the
    # ColumnTransformer hands them over), ``final`` the widened estimator with its weights times w on 0 / 1
    scale: tuple[float, ...] | None = None
    # a OneHotEncoder grouping infrequent categories: the runtime estimator's column j is the sum of fairspec's
    # columns ``merged[j]`` (``keep[j]`` its first), exactly the encoder's 0 / 1 (one 1 per block at most)
    merged: tuple[tuple[int, ...], ...] | None = None
    # MinMaxScaler(clip=True): evaluated whole (``unfoldable`` names the clip) until the spec's domain
    # is known; ``clipped`` is the pipeline folded, which :func:`settle` takes when the clip never acts
    clipped: Any = None
    # every ColumnTransformer entry's category encoder, folded or not (sema checks a pipeline evaluated
    # whole against the declared categories with them): (column, entry, categories as the spec writes
    # them, whether an unknown category raises, whether an imputer runs before it)
    encoders: tuple = field(default=(), compare=False)
    # fitted on a data frame (feature_names_in_): its columns have names; else x0, x1, ... are positions
    named: bool = True

    def column(self, name: str) -> FoldedColumn | None:
        return next((c for c in self.columns if c.column == name), None)


def is_pipeline(est) -> bool:
    """A Pipeline whose first step is a ColumnTransformer: its input is a data frame's columns,
    and fairspec folds it. (A pipeline of array transformers, e.g. StandardScaler then
    LogisticRegression, stays one model on the columns an encode block writes.)"""
    if not (type(est).__name__ == "Pipeline" and hasattr(est, "steps")):
        return False
    steps = [s for _, s in est.steps if s is not None and not (isinstance(s, str) and s == "passthrough")]
    return len(steps) >= 2 and type(steps[0]).__name__ == "ColumnTransformer"


def _label(v) -> str:
    """A category as the spec writes it: numpy strings and numbers as text, booleans as true/false."""
    if isinstance(v, (bool,)) or type(v).__name__ == "bool_":
        return "true" if bool(v) else "false"
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _names(columns, inputs: tuple[str, ...]) -> list[str] | None:
    """A ColumnTransformer entry's columns as input names (strings, integer positions, masks)."""
    import numpy as np

    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, slice):
        return list(inputs[columns])
    try:
        cols = list(columns)
    except TypeError:
        return None
    if cols and all(isinstance(c, (bool, np.bool_)) for c in cols):
        return [n for n, keep in zip(inputs, cols) if keep]
    out = []
    for c in cols:
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, (int, np.integer)) and 0 <= int(c) < len(inputs):
            out.append(inputs[int(c)])
        else:
            return None
    return out


def _fold_one(name: str, trans, cols: list[str], offset: int, width: int) -> list[FoldedColumn] | str:
    """The columns one fitted transformer computes, or a phrase saying why it cannot be folded."""
    import numpy as np

    kind = type(trans).__name__ if not isinstance(trans, str) else trans
    what = f"{kind} '{name}'"
    if kind == "SimpleImputer":
        # Only missing values change under an imputer, and no point of a declared domain is missing
        # (rows with a missing value in a column the spec reads are dropped before any model runs):
        # on every input fairspec evaluates it is the identity.
        if getattr(trans, "add_indicator", False) or getattr(trans, "indicator_", None) is not None:
            return f"{what} (add_indicator=True adds columns)"
        mv = getattr(trans, "missing_values", float("nan"))
        number = isinstance(mv, (int, float, np.integer, np.floating)) and not isinstance(mv, (bool, np.bool_)) \
            and mv == mv and abs(float(mv)) != float("inf")
        if number:
            # a number the imputer replaces: the identity on a domain that holds no such value, a map of one point
            # (no encoding expresses it) on one that does; evaluated whole until settle sees the domain
            stats = getattr(trans, "statistics_", None)
            if stats is None or len(stats) != len(cols) or width != len(cols):
                return f"{what} (missing_values={mv!r} replaces a value, not a missing cell)"
            return [FoldedColumn(c, "raw", offset + i, 1, name, imputes=((name, float(mv), stats[i]),))
                    for i, c in enumerate(cols)]
        if not (mv is None or type(mv).__name__ == "NAType" or (isinstance(mv, float) and mv != mv)):
            # missing_values=0 (or "?", -1): a value a domain point may hold, which the imputer replaces;
            # before an OrdinalEncoder (a nested pipeline) a category's code table says it (_codes), on a
            # number it is a map of one point the encodings (affine per column) do not express
            return f"{what} (missing_values={mv!r} replaces a value, not a missing cell)"
        stats = getattr(trans, "statistics_", None)
        if stats is not None and len(stats) != len(cols):
            return f"{what} (it drops columns that were empty in training)"
        if width != len(cols):
            return f"{what} (its width {width} is not one column per input)"
        return [FoldedColumn(c, "raw", offset + i, 1, name) for i, c in enumerate(cols)]
    if kind == "Pipeline":
        # a nested pipeline: imputers (the identity on domain points, above) then one foldable step
        steps = [(n, s) for n, s in trans.steps if s is not None and not (isinstance(s, str) and s == "passthrough")]
        imputers = [(n, s) for n, s in steps if type(s).__name__ == "SimpleImputer"]
        rest = [(n, s) for n, s in steps if type(s).__name__ != "SimpleImputer"]
        if len(rest) > 1 or (rest and steps.index(rest[0]) != len(steps) - 1):
            return f"{what} (a nested pipeline folds imputers followed by one encoder or scaler)"
        valued = [(n, s) for n, s in imputers if not _imputes_missing(s)]
        if valued and rest and type(rest[0][1]).__name__ == "OrdinalEncoder" and width == len(cols) \
                and all(not getattr(s, "add_indicator", False) for _, s in imputers):
            # an imputer of a category, then an OrdinalEncoder: the category's code is its fill value's
            # (the codes read off the nested pipeline's own transform)
            extra = [s.missing_values for _, s in valued]
            return _code_columns(name, trans, rest[0][1], cols, offset, extra)
        imputed: dict = {}
        for n, s in imputers:
            got = _fold_one(f"{name}/{n}", s, cols, offset, len(cols))
            if isinstance(got, str):
                return got
            for c in got:
                imputed[c.column] = imputed.get(c.column, ()) + c.imputes
        if not rest:
            out = [FoldedColumn(c, "raw", offset + i, 1, name) for i, c in enumerate(cols)] \
                if width == len(cols) else f"{what} (its width {width} is not one column per input)"
        else:
            out = _fold_one(f"{name}/{rest[0][0]}", rest[0][1], cols, offset, width)
        if isinstance(out, str) or not imputed:
            return out
        from dataclasses import replace
        return [replace(c, imputes=imputed.get(c.column, ())) for c in out]
    if kind == "FunctionTransformer" and getattr(trans, "func", None) is None:
        trans = "passthrough"                      # how a fitted ColumnTransformer keeps "passthrough"
    if isinstance(trans, str) and trans == "passthrough":
        if width != len(cols):
            return f"passthrough '{name}' (its width {width} is not one column per input)"
        return [FoldedColumn(c, "raw", offset + i, 1, name) for i, c in enumerate(cols)]
    if kind == "OneHotEncoder":
        if any(x is not None for x in (getattr(trans, "infrequent_categories_", None) or [])):
            return _grouped_onehot(name, trans, cols, offset, width)
        drops = getattr(trans, "drop_idx_", None)
        drops = [None] * len(cols) if drops is None else list(drops)
        out, at = [], offset
        for c, cats, d in zip(cols, trans.categories_, drops):
            labels = tuple(_label(v) for v in cats)
            d = None if d is None else int(d)
            # drop=...: the dropped category's column is left out (its block all zeros); the offset and
            # width here are the estimator's, fold() lays the full block out
            w = len(labels) - (d is not None)
            out.append(FoldedColumn(c, "onehot", at, w, name, categories=labels, values=tuple(cats), drop=d,
                                    lenient=getattr(trans, "handle_unknown", "error") == "ignore"))
            at += w
        return out if at - offset == width else f"{what} (its output width {width} is not one column per category)"
    if kind == "OrdinalEncoder":
        # min_frequency / max_categories: the infrequent categories share the last code and the frequent
        # ones are numbered among themselves, so a code is no longer the category's index in categories_
        if width != len(cols):
            return f"{what} (its width {width} is not one column per input)"
        if any(x is not None for x in (getattr(trans, "infrequent_categories_", None) or [])):
            # the infrequent categories share one code, the frequent ones numbered among themselves: the
            # codes as its own transform computes them (a code table with shared codes)
            return _code_columns(name, trans, trans, cols, offset, [])
        return [FoldedColumn(c, "code", offset + i, 1, name, categories=tuple(_label(v) for v in cats),
                             values=tuple(cats))
                for i, (c, cats) in enumerate(zip(cols, trans.categories_))]
    if kind == "StandardScaler":
        if width != len(cols):
            return f"{what} (its width {width} is not one column per input)"
        # with_mean=False still fits mean_ (and with_std=False leaves scale_ None): transform subtracts
        # mean_ only under with_mean, divides by scale_ only under with_std
        with_mean, with_std = getattr(trans, "with_mean", True), getattr(trans, "with_std", True)
        mean = np.zeros(len(cols)) if trans.mean_ is None or not with_mean else np.asarray(trans.mean_, dtype=np.float64)
        scale = np.ones(len(cols)) if trans.scale_ is None or not with_std else np.asarray(trans.scale_, dtype=np.float64)
        return [FoldedColumn(c, "standard", offset + i, 1, name, mean=float(mean[i]), std=float(scale[i]))
                for i, c in enumerate(cols)]
    if kind == "MinMaxScaler":
        # any feature_range folds: transform is X * scale_ + min_ whatever the range (scale_ and min_
        # carry it), and the column is folded as exactly that arithmetic; clip=True clips it to
        # feature_range after, which is that arithmetic only where it never acts (settle decides)
        clip = tuple(float(v) for v in trans.feature_range) if getattr(trans, "clip", False) else None
        if width != len(cols):
            return f"{what} (its width {width} is not one column per input)"
        lo = np.asarray(trans.data_min_, dtype=np.float64)
        hi = np.asarray(trans.data_max_, dtype=np.float64)
        if np.any(hi <= lo):
            return f"{what} (a column that was constant in training)"
        scale = np.asarray(trans.scale_, dtype=np.float64)
        shift = np.asarray(trans.min_, dtype=np.float64)
        return [FoldedColumn(c, "minmax", offset + i, 1, name, lo=float(lo[i]), hi=float(hi[i]),
                             scale=float(scale[i]), shift=float(shift[i]), clip=clip)
                for i, c in enumerate(cols)]
    return what


def _imputes_missing(imp) -> bool:
    """Does SimpleImputer ``imp`` replace only missing cells (NaN, None, pd.NA), the identity on every domain point?"""
    mv = getattr(imp, "missing_values", float("nan"))
    return mv is None or type(mv).__name__ == "NAType" or (isinstance(mv, float) and mv != mv)


def _code_columns(name: str, step, enc, cols: list[str], offset: int, extra: list) -> list[FoldedColumn] | str:
    """Code columns of an OrdinalEncoder ``enc`` (``step``: it, or a nested pipeline of imputers ending in it)
    whose codes are not the categories' positions: each category the encoder knows, and each in ``extra``
    (an imputer's missing value), with the code ``step.transform`` gives it -- the pipeline's own numbers,
    infrequent categories sharing one, an imputed category its fill value's."""
    import numpy as np
    import pandas as pd

    kind = type(enc).__name__
    per = []
    for cats in enc.categories_:
        known = list(cats)
        more = [v for v in extra if isinstance(v, str) and not any(isinstance(k, str) and k == v for k in known)]
        if extra and not all(isinstance(v, str) for v in extra):
            return f"{kind} '{name}' (an imputer before it replaces {extra[0]!r}, not a category)"
        per.append(np.asarray(known + more, dtype=object if more else cats.dtype))
    n = max(len(v) for v in per)
    frame = pd.DataFrame({c: np.concatenate([v, np.repeat(v[:1], n - len(v))]) for c, v in zip(cols, per)})
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = np.asarray(step.transform(frame), dtype=np.float64)
    except Exception as exc:  # noqa: BLE001 - its own transform refused its categories: not folded
        return f"{kind} '{name}' (its transform of its own categories failed: {type(exc).__name__})"
    if got.shape != (n, len(cols)) or not np.all(np.isfinite(got)):
        return f"{kind} '{name}' (its codes of its own categories are not one number per category)"
    # categories sharing a code (grouped as infrequent, an imputed category) are one model input: the code
    # table holds that, and a witness prints the categories of a shared code that make it the property's
    # pair (kinds/shared_codes)
    return [FoldedColumn(c, "code", offset + i, 1, name, categories=tuple(_label(v) for v in vals),
                         values=tuple(vals), codes=tuple(float(x) for x in got[:len(vals), i]))
            for i, (c, vals) in enumerate(zip(cols, per))]


def _grouped_onehot(name: str, trans, cols: list[str], offset: int, width: int) -> list[FoldedColumn] | str:
    """A OneHotEncoder grouping infrequent categories (``min_frequency`` / ``max_categories``, with or without
    ``drop``): each category's output row read off its own transform. Folded when every row is 0 / 1 with at
    most one 1 (``FoldedColumn.groups``: the categories writing a 1 in each output column); fairspec then lays
    out one column per category, exactly one of them 1, and the pipeline's estimator reads column j as the sum
    of the columns of ``groups[j]``: a sum of 0s and at most one 1, exact in any order, so its input is the
    encoder's own bit for bit."""
    import numpy as np
    import pandas as pd

    what = f"OneHotEncoder '{name}'"
    sizes = getattr(trans, "_n_features_outs", None)
    if sizes is None or len(sizes) != len(cols) or sum(int(k) for k in sizes) != width:
        return f"{what} (it groups infrequent categories, and its output columns per input are not recorded)"
    per = [list(c) for c in trans.categories_]
    n = max(len(v) for v in per)
    frame = pd.DataFrame({c: np.asarray(v + [v[0]] * (n - len(v)), dtype=cats.dtype)
                          for c, v, cats in zip(cols, per, trans.categories_)})
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = trans.transform(frame)
        got = np.asarray(got.toarray() if hasattr(got, "toarray") else got, dtype=np.float64)
    except Exception as exc:  # noqa: BLE001 - its own transform refused its categories: not folded
        return f"{what} (it groups infrequent categories, and its transform of its own categories failed: " \
               f"{type(exc).__name__})"
    out, at = [], 0
    for c, cats, k in zip(cols, trans.categories_, sizes):
        k = int(k)
        block = got[:len(cats), at:at + k]
        if not (np.all((block == 0) | (block == 1)) and np.all(block.sum(axis=1) <= 1)):
            return f"{what} (it groups infrequent categories, and its output for a category of '{c}' is not 0 / 1 " \
                   f"with one 1 at most)"
        groups = tuple(tuple(int(i) for i in np.flatnonzero(block[:, j] == 1)) for j in range(k))
        if any(not g for g in groups):
            return f"{what} (it groups infrequent categories, and an output column of '{c}' is 1 for no category)"
        out.append(FoldedColumn(c, "onehot", offset + at, k, name, categories=tuple(_label(v) for v in cats),
                                values=tuple(cats), lenient=getattr(trans, "handle_unknown", "error") != "error",
                                groups=groups))
        at += k
    return out


def _step_kind(trans) -> str:
    """The class name of a ColumnTransformer entry's transformer (its last step's, for a nested pipeline)."""
    if isinstance(trans, str):
        return trans
    steps = [s for _, s in getattr(trans, "steps", [])]
    return type(steps[-1] if steps else trans).__name__


def _power_of_two(w: float) -> bool:
    import math

    m, e = math.frexp(w)
    return m == 0.5 and -60 <= e <= 60


def _out_dtype(trans):
    """The dtype of a ColumnTransformer entry's codes: its OrdinalEncoder's ``dtype`` (the last step of a nested
    pipeline), else float64."""
    import numpy as np

    steps = [s for _, s in getattr(trans, "steps", [])] or [trans]
    try:
        return np.dtype(getattr(steps[-1], "dtype", np.float64)) if type(steps[-1]).__name__ == "OrdinalEncoder" \
            else np.dtype(np.float64)
    except TypeError:
        return np.dtype(np.float64)


def _weighted(columns: list[FoldedColumn], weight, name: str, kind: str = "", dtype=None) -> list[FoldedColumn] | str:
    """The columns of a ColumnTransformer entry whose output ``transform`` multiplies by ``weight``
    (``res * weight``, float64), folded where one encoding computes exactly that product: a number passed
    through as ``minmax`` with scale ``weight`` and shift 0 (``v * w + 0``); a code table with each code
    times ``weight``; a scaler's affine map with ``weight`` folded in when it is a power of 2 (scaling by
    one is exact, so ``((v - mean) / std) * w`` is ``(v - mean) / (std / w)`` and ``(v * s + m) * w`` is
    ``v * (s * w) + m * w``, bit for bit). Otherwise a phrase: a one-hot block's columns become 0 / w,
    which a one-hot encoding (0 / 1) does not express, and another weight rounds differently."""
    import math
    from dataclasses import replace

    import numpy as np

    why = f"{kind + ' ' if kind else ''}'{name}' (transformer_weights multiplies its output by {weight!r}"
    try:
        w = float(weight)
    except (TypeError, ValueError):
        return why + ")"
    if not (math.isfinite(w) and w > 0):
        return why + ")"
    out = []
    for c in columns:
        if c.kind == "raw":
            out.append(replace(c, kind="minmax", scale=w, shift=0.0))
        elif c.kind == "code":
            # as transform computes it: the encoder's codes in its own dtype times the weight as given (a float32
            # code times a Python float stays float32: OrdinalEncoder(dtype=np.float32))
            codes = np.asarray(c.codes or tuple(float(i) for i in range(len(c.categories))), dtype=dtype or np.float64)
            out.append(replace(c, codes=tuple(float(k) for k in np.asarray(codes * weight, dtype=np.float64))))
        elif c.kind == "standard" and _power_of_two(w):
            out.append(replace(c, std=c.std / w))
        elif c.kind == "minmax" and c.clip is None and c.scale is not None and _power_of_two(w):
            out.append(replace(c, scale=c.scale * w, shift=c.shift * w))
        elif c.kind == "standard":      # one affine map only where it rounds as the product on every domain value
            out.append(replace(c, std=c.std / w, reweighted=(why, w, c.mean, c.std)))
        elif c.kind == "minmax" and c.clip is None and c.scale is not None:
            out.append(replace(c, scale=c.scale * w, shift=c.shift * w, reweighted=(why, w, c.scale, c.shift)))
        elif c.kind == "onehot" and _power_of_two(w):
            out.append(replace(c, weight=w))        # 0 / w columns: the estimator widened to read 0 / 1 (fold)
        elif c.kind == "onehot":
            return why + (", not a power of 2: its one-hot columns become 0 / w, and an estimator's weights times w "
                          "would round otherwise)")
        else:
            return why + ", not a power of 2: the scaled product rounds otherwise than one affine map of the column)"
    return out


def _encoders(ct, inputs: tuple[str, ...]) -> tuple:
    """Folded.encoders of a fitted ColumnTransformer: each entry's OneHotEncoder / OrdinalEncoder (the
    last step of a nested pipeline), one row per column it reads."""
    out = []
    for tname, trans, cols in getattr(ct, "transformers_", ()):
        steps = [s for _, s in getattr(trans, "steps", [])] or [trans]
        enc, names = steps[-1], _names(cols, inputs)
        if type(enc).__name__ not in ("OneHotEncoder", "OrdinalEncoder") or not names:
            continue
        strict = getattr(enc, "handle_unknown", "error") == "error"
        imputed = any(type(s).__name__ == "SimpleImputer" for s in steps[:-1])
        for c, cats in zip(names, getattr(enc, "categories_", ())):
            out.append((c, str(tname), tuple(_label(v) for v in cats), strict, imputed))
    return tuple(out)


def fold(pipe) -> Folded:
    """The preprocessing of a fitted Pipeline as encoded columns, and its final estimator."""
    from dataclasses import replace

    out = _fold(pipe)
    first = next((s for _, s in pipe.steps[:-1] if s is not None and not isinstance(s, str)), None)
    if type(first).__name__ != "ColumnTransformer":
        return out
    encs = _encoders(first, out.inputs)
    named = bool(len(getattr(pipe, "feature_names_in_", ())))
    clipped = out.clipped if out.clipped is None else replace(out.clipped, encoders=encs, named=named)
    return replace(out, encoders=encs, clipped=clipped, named=named)


def _fold(pipe) -> Folded:
    steps = [(n, s) for n, s in pipe.steps if s is not None and not (isinstance(s, str) and s == "passthrough")]
    final = steps[-1][1]
    pre = steps[:-1]
    inputs = tuple(str(n) for n in getattr(pipe, "feature_names_in_", ())) or tuple(
        f"x{i}" for i in range(int(getattr(pipe, "n_features_in_", 0) or 0)))
    width = getattr(final, "n_features_in_", None)
    if not pre:
        return Folded(tuple(FoldedColumn(c, "raw", i, 1) for i, c in enumerate(inputs)), len(inputs), final,
                      inputs)
    bad = [f"{type(s).__name__} '{n}' (only the first step is folded)" for n, s in pre[1:]]
    name, first = pre[0]
    columns: list[FoldedColumn] = []
    dropped: list[str] = []
    if type(first).__name__ == "ColumnTransformer":
        ct = first
        slices = getattr(ct, "output_indices_", {}) or {}
        for tname, trans, cols in ct.transformers_:
            names = _names(cols, inputs)
            if names is None:
                bad.append(f"the columns of '{tname}' ({cols!r})")
                continue
            if (isinstance(trans, str) and trans == "drop") or not names:
                dropped.extend(names)
                continue
            sl = slices.get(tname)
            if sl is None:
                bad.append(f"'{tname}' (its output columns are not recorded)")
                continue
            weight = (getattr(ct, "transformer_weights", None) or {}).get(tname, 1)
            got = _fold_one(tname, trans, names, sl.start, sl.stop - sl.start)
            if weight != 1 and not isinstance(got, str):    # transform multiplies this entry's output by it
                got = _weighted(got, weight, tname, _step_kind(trans), _out_dtype(trans))
            if isinstance(got, str):
                bad.append(got)
            else:
                columns.extend(got)
        if getattr(ct, "sparse_output_", False) and _sparse_is_missing(final):
            bad.append(f"'{name}' (it hands the {type(final).__name__} a sparse matrix, whose absent entries, the "
                       f"encoding's zeros, XGBoost reads as missing values, not as 0)")
    else:
        w = width if width is not None else len(inputs)
        got = _fold_one(name, first, list(inputs), 0, int(w))
        if isinstance(got, str):
            bad.append(got)
        else:
            columns.extend(got)
    seen: dict[str, int] = {}
    for c in columns:
        seen[c.column] = seen.get(c.column, 0) + 1
    bad.extend(f"column '{c}' read by two transformers" for c, k in seen.items() if k > 1)
    columns.sort(key=lambda c: c.offset)
    total = sum(c.width for c in columns)
    if not bad and (width is None or total != int(width)
                    or any(a.offset + a.width != b.offset for a, b in zip(columns, columns[1:]))
                    or (columns and columns[0].offset != 0)):
        bad.append(f"'{name}' (its folded columns do not cover the estimator's {width} inputs)")
    if bad or not any(c.drop is not None or c.weight is not None or c.groups is not None for c in columns):
        out = Folded(tuple(columns), total, final, inputs, tuple(bad), tuple(dropped))
    else:
        out = _full_blocks(columns, final, inputs, dropped)
    clipping = tuple(f"MinMaxScaler '{t}' (clip=True)"
                     for t in dict.fromkeys(c.transformer for c in columns if c.clip is not None)) + tuple(
        f"SimpleImputer '{step}' (missing_values={_spec_number(v)} replaces a value, not a missing cell)"
        for step, v in dict.fromkeys((i[0], i[1]) for c in columns for i in c.imputes)) + tuple(
        dict.fromkeys(c.reweighted[0] + ", not a power of 2: the scaled product rounds otherwise than one affine map "
                      "of the column)" for c in columns if c.reweighted is not None))
    if not clipping:
        return out
    if out.unfoldable:                  # evaluated whole whatever the domain
        return Folded(out.columns, out.width, out.final, inputs, out.unfoldable + clipping, out.dropped)
    return Folded(tuple(columns), total, final, inputs, clipping, tuple(dropped), clipped=out)


def _sparse_is_missing(est) -> bool:
    """Does ``est`` read a sparse matrix's absent entries as missing values (XGBoost: the default branch of
    every split), where the dense encoded columns fairspec evaluates it on hold 0? (scikit-learn's estimators
    and LightGBM read them as 0.)"""
    return type(est).__module__.split(".")[0] == "xgboost"


def _domain(fs, column: str):
    """(lo, hi) of the numeric feature of feature set ``fs`` (an ir.FeatureSet) that names ``column``,
    or None."""
    f = next((f for f in fs.features if f.column == column), None) or fs.get(column)
    dom = getattr(f, "domain", None)
    if getattr(dom, "kind", None) not in ("int", "real"):
        return None
    return dom.lo, dom.hi


def settle(folded: Folded, fs) -> Folded:
    """A pipeline with ``MinMaxScaler(clip=True)`` or a ``SimpleImputer`` of a number (``FoldedColumn.imputes``:
    folded where the column's declared domain holds none of its values -- an int domain no whole number among
    them in [lo, hi], a real one none in [lo, hi] --, the imputer then the identity on every domain point, rows
    outside the domain being dropped before any model runs; any other domain, e.g. a boolean, stays whole)
    against the domains of feature set ``fs`` (the one
    its encoding encodes; None: unknown, it stays whole): folded (``folded.clipped``) when, for each
    clipped column, the scaler's float64 results at the domain's ends, ``v * scale_ + min_`` as its
    transform computes them, lie inside its feature_range. The clip then never acts on the domain (both operations are
    monotone in v, rounding included: every domain value's result lies between those two), so the
    fold is exact. Otherwise still evaluated whole, its phrase saying where the domain reaches past.
    Sema (the derived encoding, an encode block) and the loaded model (bind_encoding) decide here,
    on the same feature set."""
    from dataclasses import replace

    alt = folded.clipped
    if alt is None or fs is None:
        return folded
    why = {}
    for c in alt.columns:
        dom = None if c.clip is None else _domain(fs, c.column)
        if dom is None:     # not clipped; or no numeric feature reads the column: FS422 (sema) on the folded one
            continue
        lo, hi = float(dom[0]), float(dom[1])
        a, b = lo * c.scale + c.shift, hi * c.scale + c.shift     # IEEE double, two roundings, as transform
        if not (c.clip[0] <= a and b <= c.clip[1]):
            # inside the fitted range, a bound can still scale one rounding past feature_range
            how = "lies inside" if c.lo <= lo and hi <= c.hi else "reaches past"
            why.setdefault(c.transformer, f"MinMaxScaler '{c.transformer}' (clip=True, and the domain of "
                                          f"'{c.column}', [{_spec_number(lo)}, {_spec_number(hi)}], {how} the range it was fitted on, "
                                          f"[{c.lo:g}, {c.hi:g}], and scales to [{a!r}, {b!r}], outside "
                                          f"feature_range ({c.clip[0]:g}, {c.clip[1]:g}), where the clip acts)")
    for c in alt.columns:
        for step, v, stat in c.imputes:
            f = next((f for f in fs.features if f.column == c.column), None) or fs.get(c.column)
            dom = getattr(f, "domain", None)
            kind = getattr(dom, "kind", None)
            held = kind not in ("int", "real") or (dom.lo <= v <= dom.hi and (kind == "real" or float(v).is_integer()))
            if held:        # a domain point the imputer maps onto its statistic: a map no encoding expresses
                where = f"the domain of '{c.column}'" if kind not in ("int", "real") else \
                    f"the domain of '{c.column}', [{_spec_number(dom.lo)}, {_spec_number(dom.hi)}],"
                why.setdefault(step, f"SimpleImputer '{step}' (missing_values={_spec_number(v)} replaces a value "
                                     f"{where} may hold by {_spec_number(float(stat))}: a map of one point, which "
                                     f"no encoding expresses)")
    for c in alt.columns:
        if c.reweighted is not None:
            bad = _reweighted_differs(c, fs)
            if bad is not None:
                why.setdefault(c.transformer, f"{c.reweighted[0]}, not a power of 2: {bad})")
    if why:
        return replace(folded, unfoldable=tuple(why.values()), clipped=None)
    return alt


#: int domain values a weighted scaler's fold is checked on, one by one, at most
MAX_REWEIGHTED = 1 << 16


def _reweighted_differs(c: FoldedColumn, fs) -> str | None:
    """Why column ``c`` (a scaler times a transformer weight w not a power of 2, ``c.reweighted``) cannot be folded
    as its one affine map on the declared domain of feature set ``fs``, or None: on an int domain of at most
    :data:`MAX_REWEIGHTED` values, the map this column computes (runtime.encoding.encode: ``(v - mean) / std'``,
    ``v * scale' + shift'``) and the pipeline's own (``((v - mean) / std) * w``, ``(v * scale + shift) * w``: its
    transform, then the ColumnTransformer's product) compared bit for bit at every value."""
    import numpy as np

    f = next((f for f in fs.features if f.column == c.column), None) or fs.get(c.column)
    dom = getattr(f, "domain", None)
    if getattr(dom, "kind", None) != "int":
        # a real domain: the product and the one affine map differ in the last bit on about a third of the reals
        # (README, the pipeline section), which the runtime's encoding, the tree engines' boundaries and the data's
        # scores would then read otherwise than the pipeline
        return (f"the domain of '{c.column}' is not a range of whole numbers, whose every value the fold is checked "
                f"on (on reals the product and one affine map differ in the last bit about a third of the time)")
    lo, hi = int(dom.lo), int(dom.hi)
    if hi - lo + 1 > MAX_REWEIGHTED:
        return f"the domain of '{c.column}' has more than {MAX_REWEIGHTED:,} values to check the fold on one by one"
    v = np.arange(lo, hi + 1, dtype=np.float64)
    _, w, a, b = c.reweighted
    if c.kind == "standard":
        ours, theirs = (v - c.mean) / (c.std or 1.0), ((v - a) / b) * w
    else:
        ours, theirs = v * c.scale + c.shift, (v * a + b) * w
    off = np.flatnonzero(ours.view(np.int64) != theirs.view(np.int64))
    if off.size:
        k = int(off[0])
        return (f"at '{c.column}' = {lo + k} the pipeline's product is {float(theirs[k])!r} and one affine map of the "
                f"column gives {float(ours[k])!r}")
    return None


def _full_blocks(columns, final, inputs, dropped) -> Folded:
    """One-hot blocks with a dropped category laid out whole (k columns, the dropped one among them),
    the estimator widened to read that layout (sklearn_widen); unfoldable if it cannot be."""
    from dataclasses import replace

    from .sklearn_widen import widen

    laid, members, others, scale, at = [], [], [], [], 0
    for c in columns:
        if c.groups is not None:        # one column per category; the estimator's column j the sum of groups[j]
            full = len(c.categories)
            members.extend(tuple(at + i for i in g) for g in c.groups)
            others.extend(tuple(at + i for i in range(full) if i not in g) for g in c.groups)
        else:
            full = c.width + (c.drop is not None)
            members.extend((at + i,) for i in range(full) if i != c.drop)
            others.extend(None for i in range(full) if i != c.drop)
        laid.append(replace(c, offset=at, width=full))
        scale.extend([c.weight if c.weight is not None else 1.0] * c.width)
        at += full
    keep = [m[0] for m in members]
    merged = tuple(members) if any(len(m) > 1 for m in members) else None
    weighted = any(v != 1.0 for v in scale)
    wide = widen(final, keep, at, scale if weighted else None, merged, others if merged is not None else None)
    if wide is None:
        fname = type(final).__name__
        if merged is not None:
            c = next(c for c in columns if c.groups is not None and any(len(g) > 1 for g in c.groups))
            grouped = "; ".join(", ".join(c.categories[i] for i in g) for g in c.groups if len(g) > 1)
            from .sklearn_group_splits import GROWTH

            tail = (f"and rewriting the splits of {fname} on it grows a tree past {GROWTH} times its nodes, or "
                    f"it has categorical splits") if _is_tree(final) else f"and {fname} is not one"
            return Folded(tuple(columns), sum(c.width for c in columns), final, inputs,
                          (f"OneHotEncoder '{c.transformer}' (it groups infrequent categories, {grouped}, into one "
                           f"column: fairspec reads that column as the sum of their one-hot columns, into a linear "
                           f"model or an MLP (their weights on it copied to each"
                           f"{', times a power of 2 exactly' if weighted else ''}), or a tree (its "
                           f"splits on it rewritten as splits on their columns), {tail})",),
                          tuple(dropped))
        c = next(c for c in columns if c.drop is not None or c.weight is not None or c.groups is not None)
        why = ("drop=...: its dropped category's column is read back" if c.drop is not None else
               f"transformer_weights {c.weight!r}: its 0 / w columns are read as 0 / 1" if c.weight is not None else
               "it groups infrequent categories: its columns, the infrequent one last, are read back from one per "
               "category")
        return Folded(tuple(columns), sum(c.width for c in columns), final, inputs,
                      (f"OneHotEncoder '{c.transformer}' ({why} only into the final estimators fairspec can widen"
                       f"{' exactly' if weighted else ''}, and {fname} is not one)",),
                      tuple(dropped))
    return Folded(tuple(laid), at, wide, inputs, (), tuple(dropped), keep=tuple(keep), runtime=final,
                  scale=tuple(scale) if weighted else None, merged=merged)


def _is_tree(est) -> bool:
    from .sklearn_widen import BOOSTED, FORESTS, HIST, TREES

    return type(est).__name__ in TREES + FORESTS + BOOSTED + HIST


def unfold(folded: Folded, X, integral=frozenset()):
    """The data frame whose transform is X (the encoded columns of folded): categories from
    their one-hot block or code, scaled numbers scaled back (rounded to an integer for the
    columns in ``integral``: integer features); columns the pipeline drops are NaN. For replaying
    a witness through the pipeline's own predict_proba."""
    import numpy as np
    import pandas as pd

    n = X.shape[0]
    cols = {name: np.full(n, np.nan) for name in folded.inputs}
    for c in folded.columns:
        seg = X[:, c.offset:c.offset + c.width]
        if c.kind == "onehot":
            v = np.asarray(c.values, dtype=object)[np.argmax(seg, axis=1)]
        elif c.kind == "code" and c.codes:        # the category of the nearest code (shared: the first)
            idx = np.argmin(np.abs(seg[:, :1] - np.asarray(c.codes, dtype=np.float64)[None, :]), axis=1)
            v = np.asarray(c.values, dtype=object)[idx]
        elif c.kind == "code":
            idx = np.clip(np.rint(seg[:, 0]).astype(np.int64), 0, len(c.values) - 1)
            v = np.asarray(c.values, dtype=object)[idx]
        else:
            v = seg[:, 0].astype(np.float64)
            if c.kind == "standard":
                v = v * c.std + c.mean
            elif c.kind == "minmax":
                v = (v - c.shift) / c.scale if c.scale else v * (c.hi - c.lo) + c.lo
            if c.column in integral:
                v = np.rint(v)
        cols[c.column] = v
    return pd.DataFrame(cols, columns=list(folded.inputs))


def describe_unfoldable(folded: Folded) -> str:
    return "; ".join(folded.unfoldable)
