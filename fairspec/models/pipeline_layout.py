"""The memory layout a folded pipeline's ColumnTransformer hands its final estimator, so that fairspec
scores that estimator on the same floats in the same layout, bit for bit the pipeline's own.

A linear model's or an MLP's ``X @ W`` is a BLAS product whose order of summation follows the layout of X:
``ColumnTransformer`` stacks its transformers' outputs with ``np.hstack``, which keeps the layout its parts
share -- a block of scaled or passed-through numbers selected from a data frame is column-major (Fortran
order), a one-hot block row-major -- and a fitted ``sparse_output_`` hands over a CSR matrix (summed over its
nonzero entries). Scored row-major, a LogisticRegression behind a passthrough of two numbers differed from
the pipeline's predict_proba in the last bit on 1 of 140 domain points, a LinearSVC's decision on 5-7, and
behind a sparse one-hot block an MLP on 9 (session 33). :func:`probe` reads the layout off the pipeline's
own transform of a few rows of the frame fairspec replays witnesses on (``sklearn_pipeline.unfold``);
:func:`laid_out` gives fairspec's rows that layout. certify's runtime error bounds hold for every
summation order; enumerations and replays compare exact floats, and need this.

The layout is the pipeline's, not the frame's: the ColumnTransformer copies the columns it selects and its
``sparse_output_`` is fixed at fit, so frames of int32 / int64, category, string, object or nullable Int64
columns, or built from C- or F-ordered arrays, get the probed layout and the same floats
(tests/test_pipeline_frame_dtypes.py, session 34). Data rows reach it as float64 numbers (runtime.frame; the
Python API writes a float32 column widened, exactly).
"""

from __future__ import annotations

ROWS = 3        # a batch of more than one row: one row is row- and column-major at once


def _transformed(pipe, folded):
    """The pipeline's preprocessing of :data:`ROWS` rows of the frame ``unfold`` builds (numbers float64,
    categories as the pipeline's own values), or None where its transform of them fails (it then fails on any)."""
    import warnings

    import numpy as np

    from .sklearn_pipeline import unfold

    width = max((c.offset + c.width for c in folded.columns), default=0)
    X = np.zeros((ROWS, width), dtype=np.float64)
    for c in folded.columns:
        if c.kind == "onehot" and c.width:
            X[:, c.offset] = 1.0                # its first category, on every row
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pipe[:-1].transform(unfold(folded, X))
    except Exception:  # noqa: BLE001 - the pipeline's own predict raises the same on any frame
        return None


def probe(pipe, folded) -> str:
    """``"F"`` (column-major), ``"C"`` (row-major) or a scipy sparse format (``"csr"``): how the pipeline's
    preprocessing lays out a batch of rows of the frame ``unfold`` builds (numbers float64, categories as
    the pipeline's own values). ``"C"`` where its transform of those rows fails (it then fails on any)."""
    import numpy as np

    t = _transformed(pipe, folded)
    if t is None:
        return "C"
    if hasattr(t, "format") and hasattr(t, "toarray"):
        return str(t.format)
    t = np.asarray(t)
    return "F" if t.ndim == 2 and t.flags.f_contiguous and not t.flags.c_contiguous else "C"


def narrow_float(pipe, folded) -> str | None:
    """The name of the floating-point type narrower than float64 the pipeline's preprocessing hands its
    estimator (``"float32"``: every transformer's output is float32, e.g. encoders with ``dtype=np.float32``,
    so ``np.hstack`` keeps float32; a linear model or an MLP then computes in float32), or None (float64,
    integers, or a transform that fails)."""
    import numpy as np

    t = _transformed(pipe, folded)
    if t is None:
        return None
    dtype = np.dtype(getattr(t, "dtype", None) or np.asarray(t).dtype) if not hasattr(t, "dtypes") else \
        np.result_type(*[np.dtype(d) if isinstance(d, np.dtype) else np.float64 for d in t.dtypes])
    if np.issubdtype(dtype, np.floating) and np.finfo(dtype).bits < 64:
        return str(dtype)
    return None


def laid_out(X, layout: str):
    """X (float64, rows of the estimator's input) in ``layout`` (:func:`probe`)."""
    import numpy as np

    if layout == "F":
        return np.asfortranarray(X)
    if layout == "C":
        return np.ascontiguousarray(X)
    import scipy.sparse as sp

    # the ColumnTransformer's sparse.hstack(...).tocsr(): the nonzero entries of each row in column order
    # (a dense block's zeros dropped), as csr_matrix of the dense rows stores them
    return sp.csr_matrix(np.asarray(X, dtype=np.float64)).asformat(layout)


def narrow_handoff(pipe, out):
    """The folded pipeline ``out`` (``sklearn_pipeline.fold``) evaluated whole where its ColumnTransformer hands
    the estimator float32 (:func:`narrow_float`): a linear model or an MLP then computes in float32
    (predict_proba float32), which fairspec's float64 rows and the solvers' float64 reading do not model. A tree
    model (it compares float32 values, or float64 ones exactly widened) keeps the fold where every column is a
    one-hot block or a code table of whole numbers, exact in any float width."""
    from dataclasses import replace

    from .sklearn_pipeline import _is_tree

    cand = out if not out.unfoldable else out.clipped
    if cand is None:
        return out
    width = narrow_float(pipe, cand)
    if width is None:
        return out
    exact = all((c.kind == "onehot" and c.weight is None) or
                (c.kind == "code" and all(float(k).is_integer() and abs(k) < 2 ** 11 for k in c.codes))
                for c in cand.columns)
    est = cand.runtime if cand.runtime is not None else cand.final
    if exact and _is_tree(est):
        return out
    ct = next((n for n, s in pipe.steps if type(s).__name__ == "ColumnTransformer"), "preprocessing")
    why = (f"ColumnTransformer '{ct}' (it hands the {type(est).__name__} {width} rows: every transformer's output is "
           f"{width}, and the estimator then computes in {width}, while fairspec reads it in float64; give its "
           f"encoders dtype=np.float64)")
    return replace(out, final=est, unfoldable=out.unfoldable + (why,), clipped=None, keep=None, runtime=None,
                   scale=None, merged=None)
