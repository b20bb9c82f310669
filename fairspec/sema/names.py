"""The encode block against the input names a model file records (issue 20 item 6).

A model fit on a data frame keeps its column names (XGBoost ``feature_names``, LightGBM
``feature_name``, scikit-learn ``feature_names_in_``, the graph inputs of a multi-input ONNX
model). Each encoded column is looked up there by name: a single-column feature by its name or
its data column; a one-hot category as ``feature_category`` (also ``=``, ``.``, ``:`` or no
separator, as pandas ``get_dummies`` and scikit-learn's ``get_feature_names_out`` write them).

* every column found, in the block's order: nothing to say;
* every column found, in another order (one-hot blocks kept whole): the columns are mapped by
  the model's names (offsets follow the model) and FS421 warns that the block's order differs;
* some found and some not, or a one-hot block whose categories the model orders differently or
  splits: FS420, an error at the first such line -- never evaluated on swapped columns;
* none found: generic names (``f0``, ``Column_0``, ``x3``, ...) say nothing; other names get
  FS421 (the block's order is used, the names cannot confirm it).

A tree model fit on a data frame with categorical columns also records each one's categories in its
code order (XGBoost 3.1+ ``cats``, LightGBM ``pandas_categorical``; the library re-codes a data frame
by them): a ``code`` column whose code table is not the model's -- another order, or a category the
model does not know -- is FS420 at its line (:func:`check_codes`), never evaluated on swapped codes;
so is any other line feeding such an input what is not its categories' codes (a raw int read by
position, real or scaled values, one-hot columns).
"""

from __future__ import annotations

from fairspec import ir
from fairspec.models.input_names import _show, match, slot_names

__all__ = ["match", "slot_names"]  # (their home is models/input_names; sema's callers import them here)
from fairspec.syntax import literals


def unnamed(enc: ir.Encoding, model: ir.Model, sink, span) -> None:
    """FS427: a scikit-learn model that records no input names (fitted on an array: no
    ``feature_names_in_``) is fed the encode block's columns in the block's order. That is legitimate
    but unchecked -- nothing can tell a block in another order than the model was fitted on -- so it
    is stated, never silent; the JSON report's load entry says it too (``"input_order": "declared"``)."""
    from fairspec.models.base import declared_order

    sink.add("FS427", declared_order(enc, model), span)


def check_codes(enc: ir.Encoding, model: str, recorded: dict, sink, fs: ir.FeatureSet | None = None) -> bool:
    """FS420 for each encoded column that feeds a model input recording its categories (``recorded``:
    {input index: categories in code order}) anything but those categories' codes. The library reads a
    number there as a code, the position of a category in that list, whatever the spec meant:

    * ``code`` (and ``raw`` of a bool, which codes false = 0, true = 1): each category's code must be
      its position among the model's categories, and every category one the model knows;
    * ``raw`` of an int feature: silent only when every value of its range is the code of the category
      written as that number (the model was fit on 0, 1, 2, ...: value and code agree); otherwise the
      spec's numbers are codes of categories it never names (``{B, C, A}`` read by position) -- which
      is what the code-table check is there to catch -- so it is FS420, the hint a categorical
      feature with the model's categories and code table;
    * ``raw`` of a real feature, ``minmax``, ``standard``, ``onehot``: no category's code: FS420.

    The caller checks only a block as wide as the model (otherwise FS402 said so and the offsets do
    not line up). True when every such column agrees."""
    ok = True
    for c in enc.columns:
        at = [i for i in range(c.offset, c.offset + c.width) if recorded.get(i)]
        if not at:
            continue
        i, cats = at[0], recorded[at[0]]
        feature = fs.get(c.feature) if fs is not None else None
        domain = feature.domain if feature is not None else None
        if c.kind == "code" or (c.kind == "raw" and isinstance(domain, ir.Boolean)):
            categories, codes = (c.categories, c.codes) if c.kind == "code" else (("false", "true"), (0.0, 1.0))
            ok = _check_table(c, categories, codes, model, cats, sink) and ok
            continue
        if c.kind == "raw" and isinstance(domain, ir.IntRange) and \
                all(0 <= v < len(cats) and cats[v] == str(v) for v in range(domain.lo, domain.hi + 1)):
            continue                          # the values are the categories and their codes alike
        ok = False
        table = "{" + ", ".join(f"{literals.category(cat)} = {k}" for k, cat in enumerate(cats)) + "}"
        hint = (f"declare '{c.feature}' with the categories the model was fit on, {literals.category_set(cats)}, "
                f"and encode it by their codes: {c.feature} : code {table}")
        reads = (f"model '{model}' reads input {i} as a category: it was fit on the categories {_show(cats)} and "
                 f"reads a number there as a category's position in that list (its code)")
        if c.kind == "onehot":
            sink.add("FS420", f"{reads}, and the encode block one-hot encodes '{c.feature}' over inputs {c.offset} .. "
                              f"{c.offset + c.width - 1}: each 0 or 1 would be read as a code", c.span, hint=hint)
        elif c.kind == "raw" and isinstance(domain, ir.IntRange):
            v = next(v for v in range(domain.lo, domain.hi + 1) if not (0 <= v < len(cats) and cats[v] == str(v)))
            what = (f"; {v} would be read as the category {literals.category(cats[v])}" if 0 <= v < len(cats)
                    else f"; {v} is the code of no category")
            sink.add("FS420", f"{reads}, and the encode block feeds it the raw values of '{c.feature}' (int in "
                              f"[{domain.lo}, {domain.hi}]), as codes of categories the spec does not name{what}",
                     c.span, hint=hint)
        else:
            what = "raw real values" if c.kind == "raw" else f"values {c.kind} scales"
            sink.add("FS420", f"{reads}, and the encode block feeds it the {what} of '{c.feature}', which are no "
                              f"category's code", c.span, hint=hint)
    return ok


def _check_table(c: ir.ColumnEncoding, categories, codes, model: str, cats, sink) -> bool:
    """A code table (the spec's categories and their codes) against the model's categories in code order."""
    theirs = {name: float(i) for i, name in enumerate(cats)}
    mine = dict(zip(categories, codes))
    unknown = [cat for cat in categories if cat not in theirs]
    if not unknown and all(theirs[cat] == mine[cat] for cat in categories):
        return True
    table = "{" + ", ".join(f"{literals.category(cat)} = {int(theirs[cat])}" for cat in cats) + "}"
    if unknown:
        sink.add("FS420", f"model '{model}' was fit on the categories {_show(cats)} of '{c.feature}' and knows "
                          f"no category {_show(unknown)}", c.span,
                 hint=f"declare the categories the model was fit on; it codes them {table}")
    else:
        given = ", ".join(f"{cat} = {_number(mine[cat])}" for cat in categories)
        sink.add("FS420", f"model '{model}' codes the categories of '{c.feature}' as it was fit on them, "
                          f"{table[1:-1]}, and the encode block codes them {given}", c.span,
                 hint=f"write the model's codes: {c.feature} : code {table}")
    return False


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))
