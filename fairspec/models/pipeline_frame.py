"""The values a scikit-learn pipeline evaluated whole reads for a categorical feature (session 35, h1).

A pipeline fairspec cannot fold is evaluated on a data frame (``SklearnModel.bind_encoding`` / ``_as_frame``):
each categorical feature's column holds, for each declared category, the object the pipeline was fitted on --
the value of its encoder's ``categories_`` that the declared name spells (``sklearn_pipeline._label``: 0 for an
int 0, ``true`` for a bool True). The declared name itself is the right object only where the pipeline was
fitted on text: a column of numbers (pandas reads a CSV column of 0 / 1 / 2 as int64) fed the text "0" is an
unknown category to its encoder, which raises or, with ``handle_unknown='ignore'``, encodes it silently as all
zeros (a TargetEncoder: as the overall target mean) -- a model other than the runtime's. A declared name the
encoder does not know is written in the type of the categories it knows where it reads as one (the number 5
among ints), so the encoder sees the unknown category the runtime would.

Imports scikit-learn only through the objects it is handed.
"""

from __future__ import annotations


def _own_categories(pipe, column: str):
    """The fitted categories (``categories_[i]``, an array) of the first transformer of ``pipe``'s
    ColumnTransformer entry that reads ``column`` and records them (the entry itself, or a step of a nested
    pipeline: an imputer before it passes a present value through); None where no entry does."""
    from .sklearn_pipeline import _names

    steps = [s for _, s in getattr(pipe, "steps", []) if s is not None and not isinstance(s, str)]
    ct = steps[0] if steps else None
    if type(ct).__name__ != "ColumnTransformer":
        return None
    inputs = tuple(str(n) for n in getattr(pipe, "feature_names_in_", ())) or tuple(
        f"x{i}" for i in range(int(getattr(pipe, "n_features_in_", 0) or 0)))
    for _, trans, cols in getattr(ct, "transformers_", ()):
        if isinstance(trans, str):
            continue
        names = _names(cols, inputs)
        if not names or column not in names:
            continue
        i = names.index(column)
        for step in [s for _, s in getattr(trans, "steps", [])] or [trans]:
            cats = getattr(step, "categories_", None)
            if cats is not None and len(cats) == len(names):
                return cats[i]
    return None


def frame_column(pipe, column: str, declared, boolean: bool = False):
    """The array of the objects ``pipe`` reads for the categories ``declared`` (names as the spec writes them,
    in code order) of its input ``column``: its encoder's own categories where one records them (module doc),
    else the declared names (``True`` / ``False`` for a boolean feature)."""
    import numpy as np

    from .sklearn_pipeline import _label

    default = [x == "true" for x in declared] if boolean else list(declared)
    known = _own_categories(pipe, column)
    if known is None:
        return np.asarray(default, dtype=object)

    def norm(s: str) -> str:
        return s.lower() if boolean else s

    by_label = {}
    for v in known:
        by_label.setdefault(norm(_label(v)), v)
    kind = getattr(getattr(known, "dtype", None), "kind", "O")
    out, typed = [], kind in "biuf"
    for name, d in zip(declared, default):
        v = by_label.get(norm(name))
        if v is None and kind in "iuf":
            try:        # a number the encoder does not know: the unknown category the runtime would hand it
                x = float(name)
                v = known.dtype.type(x) if kind == "f" or x.is_integer() else None
            except (TypeError, ValueError, OverflowError):
                v = None
        if v is None:
            typed = False
            v = d
        out.append(v)
    if typed:
        return np.asarray(out, dtype=known.dtype)
    return np.asarray(out, dtype=object)
