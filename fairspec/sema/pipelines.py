"""The encoding of a scikit-learn Pipeline, read from its fitted preprocessing (issue 23 item 1).

``fairspec.models.sklearn_pipeline.fold`` turns the pipeline's ColumnTransformer into encoded
columns; here they become the ``ir.Encoding`` of a feature set, exactly as a hand-written
``encode`` block would (so every backend sees the final estimator on the encoded columns):

* no ``encode`` block: the feature set whose features name every column the pipeline reads
  (by feature name or data ``column``) gets the derived encoding;
* an ``encode`` block: it is checked against the pipeline, line by line: the same features, in
  the pipeline's output order, with the same kind (``passthrough`` = ``raw``,
  ``OrdinalEncoder`` = ``code``, ``OneHotEncoder`` = ``onehot``, ``StandardScaler`` =
  ``standard``, ``MinMaxScaler`` = ``minmax``) and, where the block gives them, the same
  parameters; a disagreement is FS422 at the line. Scaling the block leaves to be fitted takes
  the pipeline's own parameters (the model applies them, whatever the data).

A category the feature declares must be one the pipeline knows; a one-hot block needs the
pipeline's categories in the declared order (scikit-learn sorts them).
"""

from __future__ import annotations

import math

from fairspec import filecache, ir
from fairspec.syntax import literals


def _shown(cats) -> str:
    """Categories as the spec writes them (quoted unless a plain name or a number), comma-separated."""
    return ", ".join(map(literals.category, cats))


@filecache.by_file(lambda fmt, path, *args, **kw: path)
def load_pipeline(fmt, path, output, index, score, trust):
    """(the folded preprocessing of a scikit-learn model file or None without a ColumnTransformer, the final
    estimator its runtime calls); loaded once per state of the file in the editor server, which lints on
    every keystroke."""
    from fairspec.models import load_model

    model = load_model(fmt, path, output=output, index=index, score_kind=score, trust_pickle=trust)
    folded = getattr(model, "folded", None)
    if folded is not None:
        return folded, folded.runtime if folded.runtime is not None else folded.final
    raw = getattr(model, "raw", None)
    return None, raw.steps[-1][1] if hasattr(raw, "steps") else raw


def _feature_for(fs: ir.FeatureSet, column: str) -> ir.Feature | None:
    return next((f for f in fs.features if f.column == column), None) or fs.get(column)


def _same(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _unit_range(ce) -> bool:
    """Does the pipeline's minmax column map [lo, hi] onto [0, 1] (MinMaxScaler's default range)?"""
    if ce.scale is None or ce.lo is None or ce.hi is None:
        return True
    start = ce.lo * ce.scale    # shift = range_min - lo * scale: range_min is start + shift, up to start's rounding
    return _same(ce.scale * (ce.hi - ce.lo), 1.0) and abs(start + ce.shift) <= 1e-9 * max(1.0, abs(start))


def _range_of(ce) -> str:
    return f"({ce.lo * ce.scale + ce.shift:.6g}, {ce.hi * ce.scale + ce.shift:.6g})"


def _norm(f: ir.Feature, cat: str) -> str:
    return cat.lower() if isinstance(f.domain, ir.Boolean) else cat


SPACED_HINT = ("fit the pipeline on the text without the spaces around it, as fairspec reads it (frame[col] = "
               "frame[col].str.strip(); pandas.read_csv(..., skipinitialspace=True) drops the leading ones)")


def spaced(known, cats, f: ir.Feature, model: str) -> str | None:
    """The message when the pipeline knows categories with spaces around them that the feature declares without
    (" Male" for Male, as pandas reads Adult's file): fairspec reads every text cell stripped, so the pipeline
    would be fed categories it does not know -- an error whether its encoder raises on them or, with
    handle_unknown='ignore', encodes them silently as all zeros (its predictions on the data rows then differ
    from its own on the frame). None when there is none."""
    names = {_norm(f, c) for c in cats}
    found = [k for k in known if k != k.strip() and _norm(f, k.strip()) in names]
    if not found:
        return None
    return (f"the pipeline of model '{model}' was fitted on categories of '{f.name}' with spaces around them "
            f"({_shown(found)}), and fairspec reads a text cell without them ({literals.category(found[0])} is "
            f"{literals.category(found[0].strip())}): the pipeline would be fed categories it does not know")


def column_encoding(fc, f: ir.Feature, model: str, span) -> tuple[ir.ColumnEncoding | None, str | None, str | None]:
    """(the ColumnEncoding of feature f that the pipeline's column computes, or None with a
    message and a hint)."""
    dom = f.domain
    where = f"the pipeline of model '{model}'"
    numeric = isinstance(dom, (ir.IntRange, ir.RealRange))
    if fc.kind in ("raw", "standard", "minmax"):
        # a bool passed through (a weighted one: minmax with scale w, shift 0 and no fitted range) is its 0 / 1
        passed = fc.kind == "raw" or (fc.kind == "minmax" and fc.lo is None)
        if not (numeric or (passed and isinstance(dom, ir.Boolean))):
            how = "passes it through as a number" if fc.kind == "raw" else f"scales it ({fc.transformer})"
            return None, (f"'{f.name}' is categorical, but {where} {how}"), \
                "declare the feature as a number, or encode the column with OneHotEncoder/OrdinalEncoder"
        return ir.ColumnEncoding(f.name, fc.kind, fc.offset, 1, lo=fc.lo, hi=fc.hi, mean=fc.mean, std=fc.std,
                                 scale=fc.scale, shift=fc.shift, span=span), None, None
    if not isinstance(dom, (ir.Categorical, ir.Boolean)):
        return None, (f"'{f.name}' is numeric, but {where} encodes its column with {fc.transformer!r} as categories "
                      f"({_shown(fc.categories[:6])})"), "declare the feature's categories: name : {A, B, C}"
    known = [_norm(f, c) for c in fc.categories]
    cats = dom.categories
    msg = spaced(fc.categories, cats, f, model)
    if msg is not None:
        return None, msg, SPACED_HINT
    unknown = [c for c in cats if _norm(f, c) not in known]
    if unknown:
        lenient = fc.kind == "onehot" and fc.lenient
        return None, (f"the categories {_shown(unknown)} of '{f.name}' are unknown to {where} "
                      f"(it knows {_shown(fc.categories)})"), \
            "declare only the categories the pipeline was fitted on" + (
                f" (its encoder '{fc.transformer}' has handle_unknown='ignore', which encodes another as all zeros: "
                f"fairspec folds the categories it knows)" if lenient else "")
    if fc.kind == "code":
        # the pipeline's own code of each declared category (its position in categories_ unless an encoder
        # groups infrequent ones, an imputer maps it onto another, or a transformer weight scales them)
        table = getattr(fc, "codes", ()) or tuple(float(i) for i in range(len(known)))
        codes = tuple(float(table[known.index(_norm(f, c))]) for c in cats)
        return ir.ColumnEncoding(f.name, "code", fc.offset, 1, categories=cats, codes=codes, span=span), None, None
    if [_norm(f, c) for c in cats] != known:
        # as the feature spells them (the pipeline's spelling for one it does not declare)
        order = [next((c for c in cats if _norm(f, c) == k), raw) for k, raw in zip(known, fc.categories)]
        return None, (f"{where} one-hot encodes '{f.name}' as {_shown(fc.categories)}, and the feature declares "
                      f"{_shown(cats)}"), \
            f"declare the categories of '{f.name}' in the pipeline's order: {literals.category_set(order)}"
    return ir.ColumnEncoding(f.name, "onehot", fc.offset, fc.width, categories=cats, span=span), None, None


def unread_categories(fc, f: ir.Feature, model: str, span, sink) -> None:
    """FS437 when an OrdinalEncoder column knows categories feature f does not declare (a one-hot block
    that does is FS422 in column_encoding): the codes of the declared ones are the pipeline's, but the
    properties range over fewer categories than the model was fitted on -- a model retrained on a new
    category, or a domain narrowed on purpose (then acknowledged with an ignore comment)."""
    if fc.kind != "code":
        return
    declared = {_norm(f, c) for c in f.domain.categories}
    more = [c for c in fc.categories if _norm(f, c) not in declared]
    if more:
        order = literals.category_set([next((c for c in f.domain.categories if _norm(f, c) == _norm(f, k)), k)
                                       for k in fc.categories])
        sink.add("FS437", f"the pipeline of model '{model}' was fitted on categories of '{f.name}' the feature does "
                          f"not declare: {_shown(more)} (OrdinalEncoder '{fc.transformer}'); the properties range over "
                          f"the declared categories only", f.span or span,
                 hint=f"declare every category the pipeline knows ({f.name} : {order}), or acknowledge the narrower "
                      f"domain with # fairspec: ignore[FS437]")


def _candidates(folded, feature_sets) -> list:
    cols = [c.column for c in folded.columns]
    return [fs for fs in feature_sets if all(_feature_for(fs, c) is not None for c in cols)]


def candidate(folded, feature_sets) -> ir.FeatureSet | None:
    """The one feature set that declares every column the folded pipeline reads (the one derive
    takes), or None."""
    found = _candidates(folded, feature_sets)
    return found[0] if len(found) == 1 else None


def derive(folded, feature_sets, model: str, sink, span, failed=frozenset()) -> ir.Encoding | None:
    """The derived encoding for a pipeline model that has no encode block, or None after FS422 (none when
    the columns no feature set declares are all features whose declaration failed, ``failed``: that
    error, a column the data lacks or a data set that could not be read, is the one reported)."""
    cols = [c.column for c in folded.columns]
    candidates = _candidates(folded, feature_sets)
    if len(candidates) != 1:
        if not candidates and _declared_but_failed(cols, feature_sets, failed):
            return None
        if candidates:
            sink.add("FS422", f"the feature sets {', '.join(fs.name for fs in candidates)} all declare the columns the "
                              f"pipeline of model '{model}' reads, so which one it takes is ambiguous", span,
                     hint=f"write an encode block: encode {candidates[0].name} for {model} {{ ... }}")
            return None
        best = max(feature_sets, key=lambda fs: sum(_feature_for(fs, c) is not None for c in cols), default=None)
        missing = [c for c in cols if best is None or _feature_for(best, c) is None]
        hint = "declare a feature for each column the pipeline reads (name it as the column, or give column \"NAME\")"
        if not getattr(folded, "named", True):      # fitted on an array: x0, x1, ... are positions, not names
            sink.add("FS422", f"the pipeline of model '{model}' was fitted on an array, so it records no column names "
                              f"(its columns are positions: {', '.join(cols)}), and fairspec feeds it the data's "
                              f"columns by name", span,
                     hint="fit the pipeline on a pandas DataFrame whose columns the features name (its "
                          "ColumnTransformer then selects them by name)")
            return None
        if best is None:
            said = "no feature set declares them"
        else:
            # the features of the closest set that read no column of the pipeline: a renamed column is one of them
            read = {id(_feature_for(best, c)) for c in cols}
            unread = [f.name for f in best.features if id(f) not in read]
            said = (f"no feature set declares {', '.join(missing)} (feature set {best.name} "
                    + ("declares the others" if len(missing) < len(cols) else "declares none of them")
                    + (f", and its feature{'s' * (len(unread) > 1)} {', '.join(unread)} name{'s' * (len(unread) == 1)} "
                       f"no column the pipeline reads)" if unread else ")"))
            spaced_cols = [c for c in missing if c != c.strip()]
            if spaced_cols:     # no data column has them: a header name is read stripped, as a text cell is
                hint = (f"fairspec reads a column name without the spaces around it ({spaced_cols[0]!r} is "
                        f"{spaced_cols[0].strip()!r}), so no data column is {spaced_cols[0]!r}: fit the pipeline on "
                        f"a frame whose column names are stripped (frame.rename(columns=str.strip))")
            elif len(missing) == 1 and len(unread) == 1:
                hint = (f"if feature '{unread[0]}' is the pipeline's column '{missing[0]}', say so in its declaration: "
                        f"{unread[0]} : ... column {literals.string(missing[0])}; else declare a feature for it")
        sink.add("FS422", f"the pipeline of model '{model}' reads the columns {', '.join(cols)}, and {said}", span,
                 hint=hint)
        return None
    fs = candidates[0]
    out = []
    ok = True
    for fc in folded.columns:
        f = _feature_for(fs, fc.column)
        ce, msg, hint = column_encoding(fc, f, model, span)
        if ce is None:
            sink.add("FS422", msg, f.span or span, hint=hint)
            ok = False
        else:
            unread_categories(fc, f, model, span, sink)
            out.append(ce)
    if not ok:
        return None
    read = {ce.feature for ce in out}
    for f in fs.protected:      # an encode block leaving it out is FS403; a pipeline may drop it on purpose
        if f.name not in read:
            sink.add("FS424", f"the pipeline of model '{model}' never reads protected feature '{f.name}' (it drops "
                              f"the column): the model is blind to it, so its individual-fairness properties over "
                              f"'{f.name}' hold trivially", f.span or span)
    return ir.Encoding(fs.name, model, tuple(out), folded.width, span=span)


def _declared_but_failed(cols, feature_sets, failed) -> bool:
    """Is every column no feature set's features name one that a failed feature declaration named?"""
    best = max(feature_sets, key=lambda fs: sum(_feature_for(fs, c) is not None for c in cols), default=None)
    missing = [c for c in cols if best is None or _feature_for(best, c) is None]
    return bool(missing) and all(c in failed for c in missing)


def frame_encoding(folded, feature_sets, model: str, sink, span, failed=frozenset()) -> ir.Encoding | None:
    """For a pipeline fairspec cannot fold (evaluated whole on a data frame): one column per
    input column the pipeline reads, a number as ``raw`` and a category as its ``code``
    (0, 1, ... in declared order); the loader turns them back into the data frame
    (SklearnModel.bind_encoding). Columns the pipeline drops may go undeclared."""
    need = [c for c in folded.inputs if c not in folded.dropped]
    candidates = [fs for fs in feature_sets if all(_feature_for(fs, c) is not None for c in need)]
    if not candidates and _declared_but_failed(need, feature_sets, failed):
        return None
    if len(candidates) != 1:
        what = ("several feature sets declare them: " + ", ".join(fs.name for fs in candidates)) if candidates \
            else "no feature set declares them all"
        sink.add("FS422", f"model '{model}' reads the columns {', '.join(need)}, and {what}", span,
                 hint="declare one feature set with a feature for each column the pipeline reads")
        return None
    fs = candidates[0]
    whole_categories(folded, fs, model, sink, span)
    cols, offset = [], 0
    for c in folded.inputs:
        f = _feature_for(fs, c)
        if f is None:
            continue
        if isinstance(f.domain, ir.Categorical):
            cols.append(ir.ColumnEncoding(f.name, "code", offset, 1, categories=f.domain.categories,
                                          codes=tuple(float(i) for i in range(len(f.domain.categories))), span=span))
        elif isinstance(f.domain, ir.Boolean):
            cols.append(ir.ColumnEncoding(f.name, "code", offset, 1, categories=("false", "true"), codes=(0.0, 1.0),
                                          span=span))
        else:
            cols.append(ir.ColumnEncoding(f.name, "raw", offset, 1, span=span))
        offset += 1
    return ir.Encoding(fs.name, model, tuple(cols), offset, span=span)


def whole_categories(folded, fs: ir.FeatureSet, model: str, sink, span) -> None:
    """A pipeline evaluated whole against the categories its encoders were fitted on: a declared one
    the encoder does not know (and raises on: handle_unknown='error', no imputer before it) is FS422,
    as for a folded pipeline -- its own predict would fail on it --; ones it knows that the feature
    leaves out are FS437, the properties ranging over the declared ones only (session 29: both were
    silent, the first an unexplained evaluation failure at check)."""
    for column, entry, known, strict, imputed in getattr(folded, "encoders", ()):
        f = _feature_for(fs, column)
        if f is None or not isinstance(f.domain, ir.Categorical):
            continue
        cats = f.domain.categories
        msg = spaced(known, cats, f, model)
        if msg is not None:
            sink.add("FS422", msg, f.span or span, hint=SPACED_HINT)
            continue
        unknown = [c for c in cats if c not in known]
        if unknown and strict and not imputed:
            sink.add("FS422", f"the categories {_shown(unknown)} of '{f.name}' are unknown to the pipeline of model "
                              f"'{model}' (its encoder '{entry}' knows {_shown(known)}, and raises on another)",
                     f.span or span, hint="declare only the categories the pipeline was fitted on")
        more = [k for k in known if k not in cats]
        if more:
            order = literals.category_set([k for k in known])
            sink.add("FS437", f"the pipeline of model '{model}' was fitted on categories of '{f.name}' the feature "
                              f"does not declare: {_shown(more)} (encoder '{entry}'); the properties range over the "
                              f"declared categories only", f.span or span,
                     hint=f"declare every category the pipeline knows ({f.name} : {order}), or acknowledge the "
                          f"narrower domain with # fairspec: ignore[FS437]")


def check_block(enc: ir.Encoding, fs: ir.FeatureSet, folded, model: str, sink) -> ir.Encoding | None:
    """The hand-written block against the pipeline: the pipeline's encoding (with its parameters)
    when they agree, else None after FS422 at the first line that disagrees."""
    by_feature = {c.feature: c for c in enc.columns}
    derived = []
    for fc in folded.columns:
        f = _feature_for(fs, fc.column)
        mine = by_feature.get(f.name) if f is not None else None
        if mine is None and not getattr(folded, "named", True):
            sink.add("FS422", f"the pipeline of model '{model}' was fitted on an array, so it records no column names "
                              f"(its columns are positions: {', '.join(c.column for c in folded.columns)}), and "
                              f"fairspec feeds it the data's columns by name", enc.span,
                     hint="fit the pipeline on a pandas DataFrame whose columns the features name (its "
                          "ColumnTransformer then selects them by name)")
            return None
        if mine is None:
            sink.add("FS422", f"the pipeline of model '{model}' reads the column '{fc.column}' ({fc.transformer}), "
                              f"and the encode block does not encode it", enc.span,
                     hint="drop the encode block (fairspec reads the pipeline's own), or encode every column it reads")
            return None
        ce, msg, hint = column_encoding(fc, f, model, mine.span)
        if ce is None:
            sink.add("FS422", msg, mine.span, hint=hint)
            return None
        problem = None
        if mine.kind != ce.kind:
            problem = f"the pipeline encodes '{f.name}' as {ce.kind} ({fc.transformer}), not {mine.kind}"
        elif mine.offset != ce.offset:
            problem = (f"the pipeline puts '{f.name}' at input {ce.offset}, and the encode block at {mine.offset}: list "
                       f"the features in the pipeline's output order")
        elif mine.kind == "code" and mine.codes != ce.codes:
            problem = (f"the pipeline codes the categories of '{f.name}' as "
                       f"{', '.join(f'{c} = {k:g}' for c, k in zip(ce.categories, ce.codes))}")
        elif mine.kind == "minmax" and not mine.fitted and not (_same(mine.lo, ce.lo) and _same(mine.hi, ce.hi)):
            problem = f"the pipeline scales '{f.name}' with lo = {ce.lo!r}, hi = {ce.hi!r}"
        elif mine.kind == "minmax" and not _unit_range(ce):
            # the encode block's minmax(lo, hi) maps [lo, hi] onto [0, 1]; this scaler maps it elsewhere
            problem = (f"the pipeline scales '{f.name}' onto the range {_range_of(ce)}, and minmax(lo, hi) onto "
                       f"(0, 1)")
        elif mine.kind == "standard" and not mine.fitted and not (_same(mine.mean, ce.mean) and _same(mine.std, ce.std)):
            problem = f"the pipeline scales '{f.name}' with mean = {ce.mean!r}, std = {ce.std!r}"
        if problem:
            sink.add("FS422", f"the encode block disagrees with the pipeline of model '{model}': {problem}", mine.span,
                     hint="drop the encode block: fairspec reads the pipeline's own encoding")
            return None
        unread_categories(fc, f, model, mine.span, sink)
        derived.append(ce)
    extra = [c for c in enc.columns if c.feature not in {d.feature for d in derived}]
    if extra:
        sink.add("FS422", f"the pipeline of model '{model}' does not read '{extra[0].feature}'"
                          + (" (it drops the column)" if _column(fs, extra[0].feature) in folded.dropped else ""),
                 extra[0].span, hint="remove the feature from the encode block")
        return None
    return ir.Encoding(enc.features, enc.model, tuple(derived), folded.width, span=enc.span)


def _column(fs: ir.FeatureSet, feature: str) -> str:
    f = fs.get(feature)
    return f.column if f is not None else feature
