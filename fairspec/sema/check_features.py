"""Semantic analysis, features, encodings and groups (part of fairspec.sema.check's Checker): feature
declarations and their domains (checked against the sampled data), a model's `encode` block (column
encodings), which features a model reads, and `group` declarations."""

from __future__ import annotations

import dataclasses

from fairspec import ir
from fairspec.diagnostics import Related
from fairspec.sema.decl import Decl
from fairspec.sema.exprs import LowerError, Scope, closest, column_hint, did_you_mean, quoted
from fairspec.syntax import ast, literals

ENCODING_KINDS = ("raw", "code", "onehot", "minmax", "standard")


class FeatureChecks:
    """The Checker's features part: `features`, `encode` and `group` declarations."""

    def _features(self, d: Decl) -> None:
        node: ast.FeaturesDecl = d.node
        data = None
        if node.source is not None:
            try:
                data = self._lookup(node.source, ast.DataDecl, "a data set", self.datasets).name
            except LowerError:
                self.failed_features.update(fd.name.id for fd in node.features)
                raise
        seen: dict[str, ast.FeatureDecl] = {}
        feats = []
        for fd in node.features:
            if fd.name.id in seen:
                self.sink.add("FS202", f"feature '{fd.name.id}' is declared twice in {node.name.id}", fd.name.span,
                              related=(Related(seen[fd.name.id].name.span, "first declared here"),))
                continue
            seen[fd.name.id] = fd
            try:
                feats.append(self._feature(fd, data))
            except LowerError:
                self.failed_features.add(fd.name.id)
        self.feature_sets[node.name.id] = ir.FeatureSet(node.name.id, tuple(feats), data, span=node.span)

    def _feature(self, fd: ast.FeatureDecl, data: str | None) -> ir.Feature:
        t = fd.type
        if t.kind in ("int", "real"):
            if t.kind == "int" and (not float(t.lo).is_integer() or not float(t.hi).is_integer()):
                self.fail("FS301", "an int range needs whole-number bounds", t.span, hint="use 'real in [...]'")
            if t.lo > t.hi:
                self.fail("FS302", f"range [{t.lo}, {t.hi}] is empty", t.span)
            dom = ir.IntRange(int(t.lo), int(t.hi)) if t.kind == "int" else ir.RealRange(float(t.lo), float(t.hi))
        elif t.kind == "bool":
            dom = ir.Boolean()
        else:
            cats = [c.value for c in t.categories]
            for i, c in enumerate(t.categories):
                if c.value in cats[:i]:
                    self.fail("FS304", f"category '{c.value}' is listed twice", c.span)
                if c.value != c.value.strip():    # session 37: its rows were dropped (FS410 only), the verdict kept
                    self.fail("FS441", f"category {c.value!r} of '{fd.name.id}' has spaces around it, and fairspec "
                                       f"reads every text cell without them: no data row can hold it",
                              c.span, hint=f"declare {literals.category(c.value.strip())}, and fit the model on the "
                                           f"text without the spaces, as fairspec reads it (frame[col] = "
                                           f"frame[col].str.strip())")
            dom = ir.Categorical(tuple(cats))
        bins = None
        if fd.bins is not None:
            bins = tuple(float(b) for b in fd.bins)
            if t.kind not in ("int", "real"):
                self.fail("FS407", "bins apply to numeric features", fd.bins_span)
            if any(b2 <= b1 for b1, b2 in zip(bins, bins[1:])):
                self.fail("FS302", "bin edges must increase", fd.bins_span)
        column = fd.column.value if fd.column else fd.name.id
        if data is not None:
            cols = self.data_columns.get(data, {})
            if column not in cols:
                span = fd.column.span if fd.column else fd.name.span
                # in place: the string of `column "..."`, else the feature's name when the column is a name
                close = closest(column, cols)
                if fd.column:
                    fix = did_you_mean(column, cols, literals.string)
                elif close is not None and literals.name_or_string(close) == close:
                    fix = did_you_mean(column, cols)
                else:
                    fix = column_hint(column, cols)
                self.fail("FS207", f"data set '{data}' has no column '{column}' for feature '{fd.name.id}'", span,
                          hint=fix or "name the column with: column \"...\"")
            if not self._boolean_column(fd, dom, data, column):
                self._sampled_domain(fd, dom, data, column)
        return ir.Feature(fd.name.id, dom, fd.protected, column, bins, span=fd.span)

    def _boolean_column(self, fd: ast.FeatureDecl, dom, data: str, column: str) -> bool:
        """FS404 (True): a Parquet boolean column read by a number feature or as category codes. Check
        read it as 1/0 without a word (its reader, runtime.frame, now refuses it in these words too, for a
        file rewritten after lint); a CSV column of true/false so declared is this error (its text is
        no number), and the file's type says it of every row, sampled or not (a where filter)."""
        d = self.datasets.get(data)
        if d is None or column not in self.data_booleans.get(data, ()):
            return False
        if isinstance(dom, ir.Boolean) or (isinstance(dom, ir.Categorical) and d.categories != "codes"):
            return False
        said = ("should hold integer category codes" if isinstance(dom, ir.Categorical)
                else f"should be numeric for feature {fd.name.id!r}")
        self.sink.add("FS404", f"data file {d.path} column {column!r} {said} but is a Parquet boolean column "
                               f"(true/false)", fd.type.span,
                      hint=f"declare the feature bool ({fd.name.id} : bool), or write the column as numbers")
        return True

    def _sampled_domain(self, fd: ast.FeatureDecl, dom, data: str, column: str) -> None:
        """FS410: sampled rows whose value lies outside the feature's declared domain (check drops them)."""
        got = self.data_samples.get(data)
        if got is None:
            return
        from fairspec.runtime.data import is_number      # read sampled rows: runtime.data is loaded

        file, cols, mode = got
        vals = cols.get(column, [])
        numeric = not isinstance(dom, (ir.Categorical, ir.Boolean)) or (isinstance(dom, ir.Categorical)
                                                                          and mode == "codes")
        text = [v for v in vals if v != "" and not is_number(v)] if numeric else []
        if text and data in self.datasets:
            # check's frame refuses the whole file (runtime.frame._column): the same sentence, an error
            path = self.datasets[data].path
            said = ("should hold integer category codes" if isinstance(dom, ir.Categorical)
                    else f"should be numeric for feature {fd.name.id!r} but holds {text[0]!r}")
            words = {"true", "false", "yes", "no", "t", "f", "y", "n"}  # what a bool feature reads (runtime.frame)
            hint = (f"the column holds true/false: declare the feature bool ({fd.name.id} : bool)"
                    if all(v.lower() in words for v in text) else
                    f"if {text[0]!r} marks a missing value, add it to the data's missing list: "
                    f"missing = [{literals.string(text[0])}]")
            self.sink.add("FS404", f"data file {path} column {column!r} {said}", fd.type.span, hint=hint)
            return
        if isinstance(dom, ir.Categorical):
            if mode == "codes":
                bad = [v for v in vals if not (is_number(v) and float(v).is_integer()
                                               and 0 <= float(v) < len(dom.categories))]
            else:
                bad = [v for v in vals if v not in dom.categories]
        elif isinstance(dom, ir.Boolean):
            bad = [v for v in vals if v.lower() not in ("1", "true", "yes", "t", "y", "0", "false", "no", "f", "n")]
        else:
            bad = [v for v in vals if is_number(v) and not (dom.lo <= float(v) <= dom.hi
                                                             and (isinstance(dom, ir.RealRange) or float(v).is_integer()))]
        if bad:
            ex = ", ".join(repr(v) for v in sorted(set(bad))[:3])
            self.sink.add("FS410", f"{len(bad)} of the first {len(vals)} complete rows of {file} have a value in "
                                   f"column '{column}' outside the declared domain of '{fd.name.id}' (e.g. {ex}); "
                                   "check drops those rows",
                          fd.type.span)

    def _encoding(self, d: Decl) -> None:
        node: ast.EncodeDecl = d.node
        self.encoded_models.add(node.model.id)
        fs = self._lookup(node.features, ast.FeaturesDecl, "a feature set", self.feature_sets)
        model = self._lookup(node.model, ast.ModelDecl, "a model", self.models)
        if model.name in self.encodings:
            self.fail("FS202", f"model '{model.name}' already has an encoding", node.model.span)
        cols: list[ir.ColumnEncoding] = []
        seen: dict[str, ast.Name] = {}
        offset = 0
        complete = True  # False once a line is invalid: its width is unknown, so FS402/FS211 would only echo it
        for line in node.lines:
            kind = line.kind.id
            if kind not in ENCODING_KINDS:
                self.sink.add("FS406", f"unknown encoding '{kind}'", line.kind.span, hint=did_you_mean(kind, ENCODING_KINDS))
                complete = False
                continue
            for nm in line.names:
                f = fs.get(nm.id)
                if f is None:
                    complete = False
                    if nm.id not in self.failed_features:
                        self.sink.add("FS205", f"unknown feature '{nm.id}' in {fs.name}", nm.span,
                                      hint=did_you_mean(nm.id, [x.name for x in fs.features]))
                    continue
                if nm.id in seen:
                    self.sink.add("FS405", f"feature '{nm.id}' is encoded twice", nm.span,
                                  related=(Related(seen[nm.id].span, "first encoded here"),))
                    continue
                seen[nm.id] = nm
                try:
                    col = self._column_encoding(f, line, offset, fs)
                except LowerError:
                    complete = False
                    continue
                cols.append(col)
                offset += col.width
        enc = ir.Encoding(fs.name, model.name, tuple(cols), offset, span=node.span)
        width = self.model_widths.get(model.name)
        if complete and model.name in self.pipelines:
            from fairspec.sema.pipelines import check_block

            if self.settle_pipeline(model.name, fs).unfoldable:
                self.sink.add("FS422", f"the pipeline of model '{model.name}' is evaluated whole (fairspec cannot fold "
                                       f"its preprocessing), so an encode block cannot describe its inputs",
                              node.span, hint="drop the encode block")
            else:
                enc = check_block(enc, fs, self.pipelines[model.name], model.name, self.sink) or enc
            width = None                                 # check_block compared the block with the pipeline
        if complete and width is not None and width != offset:
            self.sink.add("FS402", f"the encoding of {fs.name} for {model.name} is {offset} columns wide, "
                                   f"but the model takes {width} inputs", node.span)
        names = self.model_names.get(model.name)
        if complete and names:
            from fairspec.sema.names import match

            enc = match(enc, fs, model.name, names, self.sink, node.span) or enc
        elif (complete and names is None and model.format == "sklearn" and self.model_widths.get(model.name)
              and model.name not in self.pipelines               # the block was checked against the pipeline
              and (width is None or width == offset)             # else FS402: the block's columns are not its inputs
              and str(model.path).lower().endswith(".skops")):   # a pickle's names are read at check time
            from fairspec.sema.names import unnamed

            unnamed(enc, model, self.sink, node.span)
        recorded = self.model_categories.get(model.name)
        if complete and recorded and (width is None or width == offset):   # else FS402: offsets do not line up
            from fairspec.sema.names import check_codes

            check_codes(enc, model.name, recorded, self.sink, fs)
        mentioned = {nm.id for line in node.lines for nm in line.names}  # an invalid line is reported already
        for f in fs.protected:
            if f.name not in mentioned:
                self.sink.add("FS403", f"protected feature '{f.name}' is not used by the encoding for {model.name}",
                              f.span or node.span, related=(Related(node.span, "the encoding"),))
        for f in fs.features:
            if complete and not f.protected and f.name not in mentioned:
                self.sink.add("FS211", f"feature '{f.name}' of {fs.name} is not encoded for {model.name}",
                              f.span or node.span, related=(Related(node.span, "the encoding"),),
                              hint=f"the model never sees '{f.name}'; add it to the encode block, or remove it "
                                   f"from {fs.name} if no group or condition reads it")
        self.encodings[model.name] = enc

    def _column_encoding(self, f: ir.Feature, line: ast.EncLine, offset: int, fs: ir.FeatureSet) -> ir.ColumnEncoding:
        kind = line.kind.id
        dom = f.domain
        params = {p.id: v for p, v in (line.params or ())}
        allowed_params = {"minmax": {"lo", "hi"}, "standard": {"mean", "std"}}.get(kind, set())
        for p, _v in (line.params or ()):
            if p.id not in allowed_params:
                self.fail("FS208", f"'{kind}' takes no parameter '{p.id}'", p.span,
                          hint=f"parameters: {', '.join(sorted(allowed_params))}" if allowed_params else None)
        if line.codes is not None and kind != "code":
            self.fail("FS407", f"a code table goes with 'code', not '{kind}'", line.span)
        if kind == "raw":
            if isinstance(dom, ir.Categorical):
                self.fail("FS407", f"'{f.name}' is categorical: encode it with code or onehot", line.kind.span)
            return ir.ColumnEncoding(f.name, "raw", offset, 1, span=line.span)
        if kind == "code":
            if not isinstance(dom, (ir.Categorical, ir.Boolean)):
                self.fail("FS407", f"'{f.name}' is numeric: 'code' is for categories (use raw)", line.kind.span)
            cats = dom.categories
            if line.codes is None:
                codes = tuple(float(i) for i in range(len(cats)))
            else:
                table, given = {}, {}
                for cat, code in line.codes:
                    if cat.value not in cats:
                        self.fail("FS206", f"'{cat.value}' is not a category of {f.name}", cat.span,
                                  hint=did_you_mean(cat.value, cats, literals.string if quoted(cat.span, cat.value)
                                                    else literals.category))
                    if cat.value in table:  # the later code silently won
                        self.fail("FS304", f"category '{cat.value}' is given twice in the code table of {f.name}",
                                  cat.span, hint="give each category one code")
                    table[cat.value] = float(code)
                    same = given.setdefault(float(code), cat)
                    if same is not cat:
                        self.sink.add("FS438", f"categories '{same.value}' and '{cat.value}' of {f.name} have the same "
                                               f"code {literals.number(float(code))}: the model cannot tell them apart, so a pair differing "
                                               "only there compares one input with itself", cat.span,
                                      related=(Related(same.span, "the same code given here"),))
                missing = [c for c in cats if c not in table]
                if missing:
                    self.fail("FS407", f"the code table of {f.name} misses {', '.join(missing)}", line.span)
                codes = tuple(table[c] for c in cats)
            return ir.ColumnEncoding(f.name, "code", offset, 1, categories=cats, codes=codes, span=line.span)
        if kind == "onehot":
            if not isinstance(dom, (ir.Categorical, ir.Boolean)):
                self.fail("FS407", f"'{f.name}' is numeric: onehot is for categories", line.kind.span)
            cats = dom.categories
            return ir.ColumnEncoding(f.name, "onehot", offset, len(cats), categories=cats, span=line.span)
        if not isinstance(dom, (ir.IntRange, ir.RealRange)):
            self.fail("FS407", f"'{f.name}' is not numeric: '{kind}' scales numbers", line.kind.span)
        nums = {}
        for k, v in params.items():
            if isinstance(v, ast.Neg) and isinstance(v.arg, ast.Num):
                nums[k] = -float(v.arg.value)
            elif isinstance(v, ast.Num):
                nums[k] = float(v.value)
            else:
                self.fail("FS301", f"'{k}' must be a number", v.span)
        need = ("lo", "hi") if kind == "minmax" else ("mean", "std")
        given = [k for k in need if k in nums]
        if given and len(given) != 2:
            self.fail("FS307", f"give both {need[0]} and {need[1]}, or neither to fit them on the data", line.span)
        if not given and fs.data is None:
            self.fail("FS411", f"'{kind}' without parameters is fitted on the data, but {fs.name} has no 'from DATA'",
                      line.span)
        if kind == "minmax":
            if given and nums["hi"] <= nums["lo"]:
                self.fail("FS302", f"minmax needs lo < hi, got lo = {nums['lo']}, hi = {nums['hi']}", line.span)
            return ir.ColumnEncoding(f.name, "minmax", offset, 1, lo=nums.get("lo"), hi=nums.get("hi"),
                                     fitted=not given, span=line.span)
        if given and nums["std"] <= 0:
            self.fail("FS307", "standard needs std > 0", line.span)
        return ir.ColumnEncoding(f.name, "standard", offset, 1, mean=nums.get("mean"), std=nums.get("std"),
                                 fitted=not given, span=line.span)

    def _attach_model_features(self) -> None:
        for name, enc in self.encodings.items():
            self.models[name] = dataclasses.replace(self.models[name], features=enc.features)
        for name, expr in getattr(self, "_rule_exprs", {}).items():
            names = _names_in(expr)
            candidates = [fs for fs in self.feature_sets.values() if all(fs.get(n) for n in names)]
            if not candidates:
                span = expr.span
                unknown = [n for n in names if not any(fs.get(n) for fs in self.feature_sets.values())]
                if unknown and all(n in self.failed_features for n in unknown) or self.lower.imports_failed:
                    continue  # the features' own declaration (or their data, or an import) was reported
                self.sink.add("FS205", f"no feature set declares every feature the rule of '{name}' reads "
                                       f"({', '.join(sorted(names))})", span)
                continue
            fs = candidates[0]
            try:
                rule = self.lower.expect_bool(expr, Scope("features", features=fs))
            except LowerError:
                continue
            self.models[name] = dataclasses.replace(self.models[name], rule=rule, features=fs.name)

    def _group(self, d: Decl) -> None:
        node: ast.GroupDecl = d.node
        shadowed = next(((fs, f) for fs in self.feature_sets.values() for f in fs.features
                         if f.name == node.name.id), None)
        if shadowed is not None:  # `groups sex` would name both: the feature won, silently
            fs, f = shadowed
            self.sink.add("FS202", f"group '{node.name.id}' has the name of a feature of {fs.name}, so "
                                   f"`groups {node.name.id}` would name both", node.name.span,
                          related=((Related(f.span, "the feature is declared here"),) if f.span else ()),
                          hint=f"give the group another name (group {node.name.id}_group = ...)")
            raise LowerError()
        names = _names_in(node.expr)
        if not names:
            self.fail("FS308", f"group '{node.name.id}' reads no feature: a group is a condition over features",
                      node.expr.span)
        candidates = [fs for fs in self.feature_sets.values() if all(fs.get(n) for n in names)]
        if not candidates:
            unknown = sorted(n for n in names if not any(fs.get(n) for fs in self.feature_sets.values()))
            if unknown and all(n in self.failed_features for n in unknown):
                raise LowerError()  # the feature's own declaration was reported
            bad = unknown[0] if unknown else sorted(names)[0]
            span = next((n.span for n in _name_nodes(node.expr) if n.id == bad), node.expr.span)
            known = {f.name for fs in self.feature_sets.values() for f in fs.features}
            self.unknown("FS205", f"unknown feature '{bad}' in group '{node.name.id}'", span,
                      hint=did_you_mean(bad, known) or "a group reads the features of one feature set")
        pred = self.lower.expect_bool(node.expr, Scope("features", features=candidates[0]))
        from fairspec.ir.no_pair import group_one_sided

        if (why := group_one_sided(pred, candidates[0])) is not None:   # FS313: a bound past the declared range
            g = node.name.id
            self.sink.add("FS313", f"group '{g}' splits no population: {why}", node.expr.span,
                          hint=f"every row is outside '{g}': check its bounds against the feature's declaration"
                          if why.startswith("no value") else f"every row is inside '{g}' ('not {g}' is empty): "
                          f"check its bound against the feature's declaration")
        self.group_decls[node.name.id] = node
        self.groups[node.name.id] = ir.GroupAtom(node.name.id, None, pred, (f"not {node.name.id}", node.name.id))


def _name_nodes(e):
    """Every ast.Name inside e, in source order."""
    if isinstance(e, ast.Name):
        yield e
    elif dataclasses.is_dataclass(e):
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            for x in (v if isinstance(v, tuple) else (v,)):
                if isinstance(x, ast.Node):
                    yield from _name_nodes(x)


def _names_in(e) -> set[str]:
    out = set()

    def walk(n):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Call):
            for a in n.args:
                if a.value is not None:
                    walk(a.value)
        elif isinstance(n, ast.Compare):
            walk(n.left)
            # `sex == Male`: Male is a category; `"F" == sex`: sex is the feature read
            if not isinstance(n.right, ast.Name) or not isinstance(n.left, ast.Name):
                walk(n.right)
        elif isinstance(n, ast.InSet):
            walk(n.item)
        elif dataclasses.is_dataclass(n):
            for f in dataclasses.fields(n):
                v = getattr(n, f.name)
                if isinstance(v, ast.Node):
                    walk(v)
                elif isinstance(v, tuple):
                    for x in v:
                        if isinstance(x, ast.Node):
                            walk(x)

    walk(e)
    return out
