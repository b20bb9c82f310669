"""An encode block's columns looked up among the input names a model file records (fairspec.sema.names
says when and why; lint calls :func:`match` for the names it reads from a file, check for a pickle's, which lint
cannot read: fairspec.runtime.context). Kept apart from sema so that the run-time context can call it."""

from __future__ import annotations

import dataclasses
import re

from fairspec import ir
from fairspec.diagnostics import Related
from fairspec.syntax import literals

from .base import loose_name as loose

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
    # a name the model records in another case, or with spaces around it ('Sex' or ' sex' for the feature
    # sex: pandas keeps the spaces of a header like Adult's ", sex", which fairspec strips from the data's),
    # is that input when no other input's name is the same so: read by position instead, a block naming
    # none of the model's names exactly fed its columns in the block's order (a proof about swapped columns)
    folds: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        folds.setdefault(loose(n), []).append(i)
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
            per = [[min((by_case[loose(n)] for n in cands if loose(n) in by_case), default=None)
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
        # a loose spelling must name one encoded column: 'sex_ Male' is loosely both category Male of a one-hot 'sex'
        # ('sex_Male') and a feature 'sex_Male' -- picking one is a proof about the other reading
        owners: dict[str, set] = {}
        for col in enc.columns:
            f = fs.get(col.feature)
            for b in [b for b in dict.fromkeys((f.column if f is not None else None, col.feature)) if b]:
                for k, cands in enumerate(slot_names(col, f, b)):
                    for n in cands:
                        owners.setdefault(loose(n), set()).add((col.feature, k))
        for n in names:
            if len(owners.get(loose(n), ())) > 1:
                said = sorted({feat for feat, _ in owners[loose(n)]})
                sink.add("FS420", f"model '{model}' records the input '{n}', which differs only in case or spaces "
                                  f"from the names of more than one encoded column (of {_show(said)}), so which one "
                                  f"it is cannot be told", enc.columns[0].span if enc.columns else span,
                         hint="name the features (or their data columns) exactly as the model's inputs: "
                              + _show(names, 12))
                return None
        c, i = cased[0]
        sink.add("FS421", f"model '{model}' records the input '{names[i]}' for '{c.feature}' (names differing in "
                          f"case or spaces{', and ' + str(len(cased) - 1) + ' more' if len(cased) > 1 else ''}); the "
                          f"columns are mapped by the model's names", c.span,
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
