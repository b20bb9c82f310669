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

import dataclasses
import re

from fairspec import ir
from fairspec.diagnostics import Related
from fairspec.syntax import literals

_SEPARATORS = ("_", "=", ".", ":", "")
_GENERIC = re.compile(r"^(f|x|c|col|column|feature|feat|input|var|v)[_ ]?\d+$", re.IGNORECASE)


def _show(names, limit: int = 8) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def slot_names(col: ir.ColumnEncoding, feature: ir.Feature | None, base: str) -> list[set[str]]:
    """The names each model input of this encoded column may carry, spelt from ``base`` (the
    feature's data column or its name)."""
    bases = {base}
    if col.kind != "onehot":
        return [bases]
    boolean = feature is not None and feature.domain.kind == "bool"

    def spellings(i: int, cat: str) -> set[str]:
        if not boolean:
            return {cat}
        return {cat, cat.capitalize(), cat.upper(), str(i), f"{i}.0"}     # pandas writes True/False, 1/0

    return [{f"{b}{sep}{c}" for b in bases for sep in _SEPARATORS for c in spellings(i, cat)}
            for i, cat in enumerate(col.categories)]


def match(enc: ir.Encoding, fs: ir.FeatureSet, model: str, names: tuple[str, ...], sink, span):
    """The encoding with offsets taken from the model's names (or unchanged), after adding any
    FS420/FS421 to ``sink``. Returns None when FS420 was reported."""
    if len(names) != enc.width:
        return enc                                   # FS402 already says the widths differ
    index: dict[str, int] = {}
    for i, n in enumerate(names):
        index.setdefault(n, i)
    # a name the model records in another case ('Sex' for the feature sex) is that input, when no
    # other input's name has the same letters: read by position instead, a block naming none of the
    # model's names exactly fed its columns in the block's order (a proof about swapped columns)
    folds: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        folds.setdefault(n.casefold(), []).append(i)
    by_case = {k: v[0] for k, v in folds.items() if len(v) == 1}
    found: list[tuple[ir.ColumnEncoding, list[int | None]]] = []
    cased: list[tuple[ir.ColumnEncoding, int]] = []
    for c in enc.columns:
        f = fs.get(c.feature)
        # the data column first, then the name: a model's names are the columns of the frame it was
        # fitted on (as a pipeline's and a multi-input graph's are matched), so `age column "hours"`
        # beside `hours column "age"` is each fed the column it reads, not both the first input
        bases = [b for b in dict.fromkeys((f.column if f is not None else None, c.feature)) if b]
        per = [[min((index[n] for n in cands if n in index), default=None) for cands in slot_names(c, f, b)]
               for b in bases]
        slots = [next((p[k] for p in per if p[k] is not None), None) for k in range(len(per[0]))]
        if any(i is None for i in slots):
            per = [[min((by_case[n.casefold()] for n in cands if n.casefold() in by_case), default=None)
                    for cands in slot_names(c, f, b)] for b in bases]
            for k in range(len(slots)):
                if slots[k] is None:
                    slots[k] = next((p[k] for p in per if p[k] is not None), None)
                    if slots[k] is not None:
                        cased.append((c, slots[k]))
        found.append((c, slots))
    hits = sum(i is not None for _, s in found for i in s)
    if hits == 0:
        if not all(_GENERIC.match(n) for n in names):
            sink.add("FS421", f"model '{model}' records the input names {_show(names)}, and the encode block "
                              f"names none of them, so its columns are taken in the block's order", span,
                     hint="name the features as the model's inputs (or give their data column), so that "
                          "fairspec can check the order")
        return enc
    for c, slots in found:
        if any(i is None for i in slots):
            at = c.offset + next(k for k, i in enumerate(slots) if i is None)
            what = (f"'{c.feature}'" if c.width == 1 else
                    f"category '{c.categories[slots.index(None)]}' of '{c.feature}'")
            sink.add("FS420", f"model '{model}' records no input named {what} (its inputs are {_show(names)}); "
                              f"at position {at} it has '{names[at]}'", c.span,
                     hint="encode the model's inputs by their recorded names, in the model's order: "
                          + _show(names, 12))
            return None
    used = [i for _, s in found for i in s]
    if len(set(used)) != len(used):
        c = next(c for c, s in found if any(used.count(i) > 1 for i in s))
        sink.add("FS420", f"two encoded columns match the same input of model '{model}' ('{c.feature}')", c.span)
        return None
    for c, slots in found:
        if c.width > 1 and slots != list(range(slots[0], slots[0] + c.width)):
            sink.add("FS420", f"model '{model}' orders the one-hot columns of '{c.feature}' as "
                              f"{_show(names[i] for i in sorted(slots))}, not in the order the feature declares its "
                              f"categories ({_show(c.categories)})", c.span,
                     hint=f"declare the categories of '{c.feature}' in the model's order: "
                          f"{literals.category_set(cat for _, cat in sorted(zip(slots, c.categories)))}")
            return None
    if cased:
        c, i = cased[0]
        sink.add("FS421", f"model '{model}' records the input '{names[i]}' for '{c.feature}' (names differing in "
                          f"case{', and ' + str(len(cased) - 1) + ' more' if len(cased) > 1 else ''}); the columns "
                          f"are mapped by the model's names", c.span,
                 hint="name the features (or their data columns) as the model's inputs to silence this")
    if all(s[0] == c.offset for c, s in found):
        return enc
    first = next(c for c, s in found if s[0] != c.offset)
    moved = tuple(sorted((dataclasses.replace(c, offset=s[0]) for c, s in found), key=lambda c: c.offset))
    sink.add("FS421", f"the encode block lists the features of model '{model}' in another order than the model "
                      f"records them ({_show(names)}); the columns are mapped by the model's names", first.span,
             hint="list the features in the model's order to silence this",
             related=(Related(span, "the encode block"),) if span is not None else ())
    return dataclasses.replace(enc, columns=moved)


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
