"""Semantic analysis, the model declarations (part of fairspec.sema.check's Checker): a model file's
format, options and input width (peeked, fairspec.models.peek: no machine-learning library is
imported), scikit-learn pipelines, logged predictions, the readout, and what the chosen backend
cannot encode of the file (FS506)."""

from __future__ import annotations

from fairspec import ir
from fairspec.diagnostics import Related
from fairspec.sema.decl import Decl
from fairspec.sema.exprs import LowerError, closest, did_you_mean
from fairspec.syntax import ast, literals

MODEL_FORMATS = ("onnx", "torch", "sklearn", "xgboost", "lightgbm", "rule", "predictions")
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
_FILE_CODES = ("FS428",)     # a ModelLoadError.code about the file itself: reported at its path


class ModelChecks:
    """The Checker's models part: `model` declarations and the backend checks on their files."""

    def _model(self, d: Decl) -> None:
        node: ast.ModelDecl = d.node
        fmt = node.fmt.id
        if fmt not in MODEL_FORMATS:
            self.fail("FS409", f"unknown model format '{fmt}'", node.fmt.span, hint=did_you_mean(fmt, MODEL_FORMATS))
        pos = [a for a in node.args if a.kind == "pos"]
        if fmt == "rule":
            if len(pos) != 1:
                self.fail("FS305", "rule(...) takes one condition over features", node.span)
            # the rule's features are bound once encodings are known (_attach_model_features)
            self.models[node.name.id] = ir.Model(node.name.id, "rule", None, span=node.span)
            self._rule_exprs = getattr(self, "_rule_exprs", {})
            self._rule_exprs[node.name.id] = pos[0].value
            return
        if fmt == "predictions":
            self._predictions(node, pos)
            return
        if len(pos) != 1 or not isinstance(pos[0].value, ast.Str):
            self.fail("FS305", f"{fmt}(...) takes the model file path as its one positional argument", node.span)
        path_arg = pos[0].value
        output = index = score = rounds = None
        trust = False
        for a in node.args:
            if a.kind == "pos":
                continue
            if a.kind == "trust":
                if a.name.id != "pickle":
                    self.fail("FS208", f"only 'trust pickle' is known, not 'trust {a.name.id}'", a.span)
                trust = True
                continue
            k, v = a.name.id, a.value
            if k == "output":
                if isinstance(v, ast.Str):
                    output = v.value
                elif isinstance(v, ast.Num) and v.is_int:
                    output = int(v.value)
                else:
                    self.fail("FS301", "output = \"name\" or a position", v.span)
            elif k == "index":
                if not (isinstance(v, ast.Num) and v.is_int):
                    self.fail("FS301", "index = a whole number (the column of a 2-D output)", v.span)
                index = int(v.value)
            elif k == "score":
                if not (isinstance(v, ast.Name) and v.id in ("logit", "prob", "value")):
                    self.fail("FS307", "score = logit | prob | value (what the chosen output is; value: a "
                                       "regression's output)", v.span)
                score = v.id
            elif k == "rounds":
                if fmt != "xgboost":
                    self.fail("FS208", f"rounds is an option of xgboost(...) models (early stopping), not of {fmt}(...)",
                              a.name.span)
                if not (isinstance(v, ast.Name) and v.id in ("best", "all")):
                    self.fail("FS307", "rounds = best | all (best: the rounds XGBClassifier.predict uses, 0 .. "
                                       "best_iteration; all: every round, as Booster.predict)", v.span)
                rounds = v.id
            else:
                self.fail("FS208", f"unknown model option '{k}'", a.name.span,
                          hint=did_you_mean(k, ["output", "index", "score", "rounds"])
                          or "options are output, index, score, rounds (xgboost) and trust pickle")
        trust = trust or bool(self.substitutes.get(("trusted", node.name.id)))   # the API's pickle of an object
        refused = self.substitutes.get(("refused", node.name.id))
        if refused:  # a file of the --models folder whose link leads out of the project: never opened
            self.fail("FS212", refused, path_arg.span, hint="remove the link, or pass --allow-path DIR")
        path = self.substitutes.get(("model", node.name.id)) or self.user_path(path_arg, d.base, "model file")
        from fairspec.files import PathError, file_kind

        try:
            kind = file_kind(path)
        except PathError as e:
            self.fail("FS401", str(e), path_arg.span)
        # a file given in place of the declared one (check --models) is the one named
        shown = path if self.substitutes.get(("model", node.name.id)) else path_arg.value
        if kind == "missing":
            self.fail("FS401", f"model file {shown} does not exist (looked for {path})", path_arg.span)
        if kind != "file":
            what = "a folder" if kind == "folder" else "not a regular file (a device, pipe or socket)"
            self.fail("FS401", f"model file {shown} is {what}", path_arg.span)
        if path.suffix.lower() in PICKLE_SUFFIXES and not trust:
            self.fail("FS408", f"{path.name} is a pickle file, which runs code when loaded", path_arg.span)
        if fmt == "torch" and not trust and self.peek_models:
            self._torch_pickle(path, shown, path_arg)
        if self.peek_models and fmt == "sklearn" and path.suffix.lower() == ".skops":
            from fairspec.models.peek_sklearn import not_fitted, skops_unfitted

            unfitted = skops_unfitted(path)
            if unfitted:                                # one sentence, and no follow-on error about its inputs
                self.fail("FS401", not_fitted(path, unfitted), path_arg.span)
        model = ir.Model(node.name.id, fmt, str(path), output, index, score, trust, span=node.span, rounds=rounds)
        self.models[node.name.id] = model
        if self.peek_models:
            from fairspec.models import ModelLoadError, peek_input_width

            try:
                self.model_widths[node.name.id] = peek_input_width(fmt, path, trust_pickle=trust)
            except ModelLoadError as e:
                self._load_failed(e, node, path_arg)
            from fairspec.models.peek import peek_input_categories, peek_input_names

            self.model_names[node.name.id] = peek_input_names(fmt, path)
            self.model_categories[node.name.id] = peek_input_categories(fmt, path)
            if fmt == "xgboost" and rounds is None:
                self._rounds(node, path, path_arg)
            from fairspec.models.base import normalize_format

            if normalize_format(fmt, path) == "sklearn":    # FS440: a forest adding its trees in thread order
                from fairspec.models.forest_threads import lint_sentence, peek_threaded_forest

                if (found := peek_threaded_forest(path)) is not None:
                    self.sink.add("FS440", lint_sentence(node.name.id, found), node.span)
            self._pipeline(node, fmt, path, output, index, score, trust, path_arg)
            self._readout(node, fmt, path, output, index, score)

    def _torch_pickle(self, path, shown, path_arg) -> None:
        """FS408: a torch.save file (zip or legacy, whatever its suffix) is a pickle, which check's loader
        refuses without `trust pickle`; lint said nothing (it keys FS408 on .pkl / .joblib)."""
        from fairspec.models import ModelLoadError
        from fairspec.models.peek_torch import torch_file_kind, untrusted_pickle

        try:
            kind = torch_file_kind(path)
        except ModelLoadError:                          # not a torch file: peek_input_width says so (FS401)
            return
        if kind == "pickle":
            self.fail("FS408", untrusted_pickle(shown), path_arg.span,
                      hint="write `trust pickle` in the model declaration only for a file you trust")

    def _rounds(self, node, path, path_arg) -> None:
        """FS425: an XGBoost file recording a best iteration that leaves rounds out (early stopping)
        is two models (XGBClassifier.predict's rounds, Booster.predict's); the declaration says which."""
        from fairspec.models.treefile import ROUNDS_HINT, rounds_ambiguous, rounds_message, xgboost_rounds

        best, total = xgboost_rounds(path)
        if rounds_ambiguous(best, total):
            # a file the Python API wrote for an object: its path, which the API names as the object
            shown = path if self.substitutes.get(("model", node.name.id)) else path_arg.value
            self.sink.add("FS425", rounds_message(f"model file {shown}", best, total), path_arg.span,
                          hint=ROUNDS_HINT)

    def _pipeline(self, node, fmt, path, output, index, score, trust, path_arg, force: bool = False) -> None:
        """A scikit-learn Pipeline file: loaded now (its fitted preprocessing is the encoding,
        fairspec.sema.pipelines), its width the final estimator's."""
        from fairspec.models import ModelLoadError
        from fairspec.models.base import normalize_format
        from fairspec.models.peek_sklearn import sklearn_pickle_estimator, skops_top_class

        if normalize_format(fmt, path) == "onnx" and self.model_names.get(node.name.id):
            from types import SimpleNamespace

            # one graph input per column (skl2onnx): without an encode block, one column per input by name
            from fairspec.models.peek_onnx import read_onnx_signature

            try:
                sig = read_onnx_signature(path)
                used = {i for n in sig.nodes for i in n.inputs} | {o.name for o in sig.outputs}
            except ModelLoadError:
                used = set(self.model_names[node.name.id])
            unused = tuple(n for n in self.model_names[node.name.id] if n not in used)   # fed a filler value
            self.frame_inputs[node.name.id] = SimpleNamespace(inputs=self.model_names[node.name.id], dropped=unused)
            if unused:                                  # an encode block lists the inputs the graph reads
                self.model_names[node.name.id] = tuple(n for n in self.model_names[node.name.id] if n not in unused)
                self.model_widths[node.name.id] = len(self.model_names[node.name.id])
            self.model_spans[node.name.id] = node.span
            return
        if normalize_format(fmt, path) != "sklearn":
            return
        if path.suffix.lower() == ".skops":
            cls = skops_top_class(path)
        else:
            est = sklearn_pickle_estimator(path) if trust else None
            cls = "Pipeline" if force else (est[0] if est else None)
            if trust and est is None and not force:                   # e.g. joblib's own format: the inert peek cannot tell;
                self.deferred_pickles[node.name.id] = (node, fmt, path, output, index, score, trust, path_arg)
                return                                  # loaded only if no encode block writes its inputs
        if cls not in ("Pipeline", "XGBClassifier"):
            return
        from fairspec.models import ModelLoadError
        from fairspec.sema.pipelines import load_pipeline

        try:
            folded, final = load_pipeline(fmt, path, output, index, score, trust)
        except ModelLoadError as e:
            if cls != "Pipeline":                       # a trusted XGBClassifier pickle: check reports it
                return
            self.encoded_models.add(node.name.id)       # reported here: no second "has no encode block"
            self._load_failed(e, node, path_arg)
        self._final_probability(node.name.id, final, alone=cls != "Pipeline")
        if cls != "Pipeline":
            return
        if folded is None:                              # no ColumnTransformer: an encode block writes its inputs
            return
        self.pipelines[node.name.id] = folded
        self.model_widths[node.name.id] = None if folded.unfoldable else folded.width
        self.model_names[node.name.id] = None
        self.model_spans[node.name.id] = node.span
        if folded.clipped is not None:      # MinMaxScaler(clip=True): decided on the domain (settle_pipeline)
            self.pipeline_paths[node.name.id] = path_arg.span
        elif folded.unfoldable:
            self._unfoldable(node.name.id, folded, path_arg.span)

    def _final_probability(self, name: str, final, alone: bool = False) -> None:
        """A scikit-learn model file (a pipeline, or ``alone`` a trusted pickle of an XGBClassifier) whose final
        XGBClassifier has no class probability (binary:hinge / binary:logitraw, pipeline_boosters.no_probability:
        what check's model reads as its prob_problem): FS415 for prob, k-discrimination and calibration_gap
        (sema.outputs), as for the same booster saved alone."""
        import dataclasses

        from fairspec.models.pipeline_boosters import no_probability

        why = no_probability(final, f"'{name}'" if alone else f"the final XGBClassifier of '{name}'")
        m = self.models.get(name)
        if why is not None and m is not None and m.no_probability is None:
            self.models[name] = dataclasses.replace(m, no_probability=why)

    def _unfoldable(self, name, folded, span) -> None:
        self.sink.add("FS423", f"the pipeline of model '{name}' has preprocessing fairspec cannot fold "
                               f"into an encoding: {'; '.join(folded.unfoldable)}; properties on data run "
                               f"through its own predict_proba, and the solvers cannot read it", span)

    def settle_pipeline(self, name: str, fs):
        """The pipeline of model ``name`` against feature set ``fs`` (None: no single one), which its
        encoding encodes: one with MinMaxScaler(clip=True) folds when the clip never acts on the
        declared domains (sklearn_pipeline.settle; the loaded model decides the same on binding),
        else it stays evaluated whole (FS423, saying where the domain reaches past)."""
        from fairspec.models.sklearn_pipeline import settle

        folded = self.pipelines[name]
        if folded.clipped is None:
            return folded
        folded = self.pipelines[name] = settle(folded, fs)
        self.model_widths[name] = None if folded.unfoldable else folded.width
        if folded.unfoldable:
            self._unfoldable(name, folded, self.pipeline_paths.get(name) or self.model_spans.get(name))
        return folded

    def _load_failed(self, e, node, path_arg) -> None:
        """A model file lint could not read: reported once (its uses stay silent); an error the
        declaration causes (ModelLoadError.code, FS413) at the declaration with its hint, one the file
        causes with its own code (FS428: a torch forward() taking several tensors) at the path, else FS401
        at the path."""
        self.failed_models.add(node.name.id)
        if e.code:
            self.fail(e.code, e.message, path_arg.span if e.code in _FILE_CODES else node.span, hint=e.hint)
        self.fail("FS401", e.message if e.hint else str(e), path_arg.span, hint=e.hint)

    def _guard_pipeline(self, args) -> None:
        from fairspec.diagnostics import DiagnosticError

        try:
            self._pipeline(*args[:-1], args[-1], force=True)
        except (LowerError, DiagnosticError):
            pass                                         # reported in the sink

    def _pipeline_encodings(self) -> None:
        """The encoding of each pipeline model that has no encode block, read from the pipeline."""
        from fairspec.sema.pipelines import candidate, derive, frame_encoding

        for name, args in self.deferred_pickles.items():
            if name not in self.encodings and name not in self.encoded_models:
                self._guard_pipeline(args)
        for name, folded in self.pipelines.items():
            if name in self.encodings or name in self.encoded_models:
                continue
            if folded.clipped is not None:
                fs = candidate(folded.clipped, list(self.feature_sets.values()))
                folded = self.settle_pipeline(name, fs) if fs is not None else folded.clipped  # derive: FS422
            make = frame_encoding if folded.unfoldable else derive
            enc = make(folded, list(self.feature_sets.values()), name, self.sink, self.model_spans.get(name),
                       failed=self.failed_features)
            if enc is None:
                self.encoded_models.add(name)       # reported: no second "has no encode block"
            else:
                self.encodings[name] = enc
        for name, inputs in self.frame_inputs.items():
            if name in self.encodings or name in self.encoded_models:
                continue
            enc = frame_encoding(inputs, list(self.feature_sets.values()), name, self.sink, self.model_spans.get(name),
                                 failed=self.failed_features)
            if enc is None:
                self.encoded_models.add(name)
            else:
                self.encodings[name] = enc

    def _readout(self, node, fmt, path, output, index, score) -> None:
        """FS413: the output column and decision rule must be fixed by the declaration
        (fairspec.models.readout decides; the loaders and every backend read the same)."""
        import dataclasses

        from fairspec.models.peek import (peek_no_probability, peek_output_columns, peek_output_kind,
                                          peek_output_problem, peek_score_problem, peek_two_logits,
                                          peek_unstated_decision)
        from fairspec.models.readout import ReadoutError, positive_class_problem, resolve_readout

        what = f"the output of model '{node.name.id}'" if output is None else f"output {output!r} of model '{node.name.id}'"
        problem = peek_output_problem(fmt, path, output)
        if problem is not None:
            self.sink.add("FS413", f"model '{node.name.id}': {problem[0]}", node.span, hint=problem[1])
            return
        columns = peek_output_columns(fmt, path, output)
        task, n_classes, classes = peek_output_kind(fmt, path, output, score)
        given = self.substitutes.get(("classes", node.name.id))    # an LGBMClassifier object's labels (the API)
        if classes is None and given is not None and task == "binary" and len(given) == 2:
            problem = positive_class_problem(given, index)
            if problem is not None:
                a, b = given
                self.sink.add("FS413", f"model '{node.name.id}': the classifier given has the classes {a!r} and {b!r} "
                                       f"(its LightGBM model file records none and calls {b!r} class 1), and the "
                                       f"declaration does not say which is the positive class (the decision that "
                                       f"properties and group metrics count as positive)", node.span, hint=problem.hint)
                return
        problem = peek_score_problem(fmt, path, output, score, node.name.id) if task == "binary" else None
        if problem is not None:             # score = logit on a probability, score = prob on a margin
            self.sink.add("FS413", problem[0], node.span, hint=problem[1])
            return
        try:
            r = resolve_readout(columns, index, score, what, task=task)
        except ReadoutError as e:
            self.sink.add("FS413", e.message, node.span, hint=e.hint)
            return
        problem = positive_class_problem(classes, index) if task == "binary" else None
        if problem is not None:             # "approve" / "deny": which one is positive is the spec's to say
            self.sink.add("FS413", f"model '{node.name.id}': {problem.message}", node.span, hint=problem.hint)
            return
        # the output kind (issue 25), as far as the file tells before loading: sema.outputs checks it
        m = self.models[node.name.id]
        self.models[node.name.id] = dataclasses.replace(
            m, task=task, n_classes=n_classes if n_classes is not None else (r.columns if task == "multiclass" else None),
            classes=classes, no_probability=peek_no_probability(fmt, path, output, score, node.name.id) or
            m.no_probability,           # a pipeline's final XGBClassifier (_final_probability)
            decision_unstated=(peek_unstated_decision(fmt, path, output, score, node.name.id)
                               if task == "binary" else None),
            two_logits=peek_two_logits(fmt, path, output) if task == "binary" else None)

    def _predictions(self, node: ast.ModelDecl, pos) -> None:
        """model m = predictions(DATA, score = "col", threshold = 0.5) | predictions(DATA, decision = "col"):
        the logged decisions of a data set, audited with no model file."""
        hint = 'predictions(DATA, score = "column", threshold = 0.5) or predictions(DATA, decision = "column")'
        if len(pos) != 1 or not isinstance(pos[0].value, ast.Name):
            self.fail("FS305", "predictions(...) takes the data set that holds the decisions", node.span, hint=hint)
        data = self._lookup(pos[0].value, ast.DataDecl, "a data set", self.datasets)
        cols = self.data_columns.get(data.name, {})
        kw = {}
        for a in node.args:
            if a.kind == "pos":
                continue
            if a.kind == "trust" or a.name.id not in ("score", "decision", "threshold", "positive"):
                self.fail("FS208", f"predictions(...) has no option '{a.name.id}'", a.name.span,
                          hint="options are score, decision, threshold and positive")
            kw[a.name.id] = a
        if ("score" in kw) == ("decision" in kw):
            self.fail("FS305", "predictions(...) reads exactly one column: score = \"col\" or decision = \"col\"",
                      node.span, hint=hint)
        which = "score" if "score" in kw else "decision"
        v = kw[which].value
        if not isinstance(v, (ast.Str, ast.Name)):
            self.fail("FS301", f"{which} names a column of '{data.name}'", v.span)
        col = v.value if isinstance(v, ast.Str) else v.id
        if col not in cols:
            self.fail("FS207", f"data set '{data.name}' has no column '{col}'", kw[which].value.span,
                      hint=did_you_mean(col, cols, literals.string if isinstance(v, ast.Str) else literals.name_or_string))
        threshold = None
        if which == "score":
            if cols[col] != "num":
                self.fail("FS306", f"the score column '{col}' of '{data.name}' does not hold numbers",
                          kw[which].value.span)
            if "threshold" not in kw:
                self.fail("FS305", "a score column needs the decision threshold: threshold = 0.5 (positive where "
                                   "score > threshold)", node.span)
            threshold = self._const(kw["threshold"], float, None)
        elif "threshold" in kw:
            self.fail("FS208", "threshold applies to a score column, not to logged decisions", kw["threshold"].span)
        positive = self._positive_decision(kw, data.name, col) if which == "decision" else None
        if positive is not None and "" in self.data_values.get(data.name, {}).get(col, ()):
            self._empty_decisions(node, data, col, positive)
        if which == "score" and "positive" in kw:
            self.fail("FS208", "positive names the positive value of a decision column, not of a score column",
                      kw["positive"].span)
        fss = [f for f in self.feature_sets.values() if f.data == data.name]
        if len(fss) != 1:
            names = ", ".join(f.name for f in fss)
            self.fail("FS501", f"the groups of predictions over '{data.name}' come from the feature set declared "
                               f"'from {data.name}', and " + (f"there are {len(fss)}: {names}" if fss else "there is none"),
                      node.span, hint=f"declare exactly one: features F from {data.name} {{ ... }}")
        self.models[node.name.id] = ir.Model(
            node.name.id, "predictions", None, span=node.span, data=data.name, features=fss[0].name,
            score_column=col if which == "score" else None, decision_column=col if which == "decision" else None,
            threshold=threshold, positive=positive)

    def _empty_decisions(self, node, data: ir.Data, col: str, positive: str) -> None:
        """FS435 (warning): ``positive = v`` names the positive decision of a text column with empty cells
        in the rows lint read, which no missing marker names: each is read as the text "", a negative
        decision, where an unlogged decision is missing (check says it of rows lint did not read,
        fairspec.runtime.label_text)."""
        import dataclasses

        self.sink.add("FS435", f"the decision column '{col}' of '{data.name}' has empty cells in the rows lint "
                               f"read, and positive = {literals.string(positive)} counts each as a negative "
                               f"decision, not as a missing one", node.span,
                      hint=f"list it as missing to drop those rows: missing = {{{literals.name_or_string(col)}: "
                           f"[\"\"]}} in the data declaration; or, if an empty cell is a negative decision, say so "
                           f"with # fairspec: ignore[FS435]")
        self.datasets[data.name] = dataclasses.replace(data, lint_said=(*data.lint_said, f"FS435:{col}"))

    def _positive_decision(self, kw: dict, data: str, col: str) -> str | None:
        """The positive value of a logged decision column: ``positive = "approve"`` (a string or a number),
        or None when the column holds only values that say it (1/0, yes/no, true/false in any case): FS431
        for any other value the sampled rows hold, never a silent pick (check's reader says the same of
        the whole column, fairspec.runtime.context.Rows.truthy)."""
        from fairspec.runtime.data import decision_word, is_number, unstated_decision

        seen = self.data_values.get(data, {}).get(col, set())
        if "positive" in kw:
            v = kw["positive"].value
            if isinstance(v, (ast.Str, ast.Num)):
                pos = v.value.strip() if isinstance(v, ast.Str) else (str(int(v.value)) if v.is_int else repr(float(v.value)))
                num = is_number(pos) and all(is_number(x) for x in seen)
                held = {float(x) for x in seen} if num else seen
                # a typo, or another column; from the first rows of a larger file only a near miss of a value
                # they hold ("pendng"): a rare positive may lie past them (check then reads every row, and a
                # positive no row holds makes the metrics unknown, fairspec.backends.data.constant)
                rows = self.data_rows.get(data, 0)
                never = len(seen) >= 2 and (float(pos) if num else pos) not in held
                near = [] if not never or num or rows < 200 else [x for x in seen if x.lower() == pos.lower()] or \
                    [x for x in (closest(pos, sorted(seen)),) if x is not None]
                if never and (rows < 200 or near):
                    shown = ", ".join(literals.string(x) for x in sorted(seen)[:4])
                    where = "the rows lint read" if rows < 200 else f"the first {rows} rows lint read"
                    self.fail("FS431", f"the decision column '{col}' of '{data}' holds {shown} in {where}, never "
                                       f"the positive value {literals.string(pos)}", v.span,
                              hint=f"did you mean {literals.string(near[0])}?" if near else
                              "positive is one of the column's values, as written in the file")
                return pos
            self.fail("FS301", "positive is the value of the decision column that is the positive decision, a "
                               "string or a number (positive = \"approve\")", v.span)
        bad = {v for v in seen if decision_word(v) is None}
        if bad:
            shown = next(iter(sorted(b for b in bad if b)), None)
            example = literals.string(shown) if shown is not None else '"yes"'
            hint = (f"name the positive decision: predictions({data}, decision = {literals.string(col)}, "
                    f"positive = {example})")
            if "" in bad:
                hint += f"; an empty cell is read as written: list it as missing with missing = {{{col}: [\"\"]}}"
            self.fail("FS431", str(unstated_decision(self.datasets[data].path, col, bad)), kw["decision"].value.span,
                      hint=hint)
        return None

    def _network_backends(self, spec: ir.Spec) -> None:
        """FS506: a property whose backend encodes the model as a ReLU network, over a model file that
        certainly is not one (read cheaply from the file: ONNX operators, the skops estimator).
        An error when the spec chose the backend with `using`; a warning when it is the default (the
        property is then falsified on data where it can be, and otherwise reported unknown)."""
        from fairspec.models.peek import is_tree_file, piecewise_linear_obstacle
        from fairspec.planning import plan

        seen: dict[str, str | None] = {}
        for prop in self.properties:
            p = plan(prop, spec)
            if "relu_network" not in p.needs:
                continue
            backend = p.backend
            m = self.models.get(getattr(prop, "model", ""))
            if m is None:
                continue
            if m.name not in seen:
                if m.format != "rule" and is_tree_file(m.format, m.path):   # skops or pickle, read inertly
                    seen[m.name] = None                  # tree ensembles have their own exact encodings
                else:
                    seen[m.name] = ("a rule model is not a network" if m.format == "rule" else
                                    piecewise_linear_obstacle(m.format, m.path, m.output))
            why = seen[m.name]
            if why is None:
                continue
            chosen = prop.options.backend is not None
            self.sink.add("FS506", f"the {backend} backend encodes model '{m.name}' as a ReLU network, but {why}",
                          prop.span, severity="error" if chosen else "warning",
                          hint="a rule model's pairs are enumerated in exact rationals: drop the `using`, or write "
                               "`using enumerate`" if m.format == "rule" else
                               "pick a backend that runs the model as it is (using data), or export the model "
                               "as a ReLU network",
                          related=(Related(m.span, f"model '{m.name}' declared here"),) if m.span else ())

    def _tree_models(self, spec: ir.Spec) -> None:
        """FS506 for what a tree model cannot do, known from the file before any solving: a logit
        bound on a tree or forest (its output averages probabilities: not linear in its leaves).
        Every other property kind runs on tree models (individual fairness and PBA by the exact
        tree encodings, k-discrimination by leaf combinations, group metrics over a distribution
        through the compiled decision tree, unknown at run time when that is too large)."""
        from pathlib import Path

        from fairspec.models.peek import AVERAGING_TREES, tree_file_class
        from fairspec.models.base import category_domains
        from fairspec.models.peek_trees import categorical_split
        from fairspec.planning import plan

        categorical: dict = {}

        for prop in self.properties:
            m = self.models.get(getattr(prop, "model", ""))
            if m is None:
                continue
            chosen = prop.options.backend is not None
            related = (Related(m.span, f"model '{m.name}' declared here"),) if m.span else ()
            if prop.kind != "individual_fairness" or m.format == "rule":
                continue
            backend = plan(prop, spec).backend
            if backend not in ("milp", "smt"):
                continue
            if m.format in ("xgboost", "lightgbm"):
                if m.name not in categorical:
                    enc = spec.encoding_for(m.name)      # check rewrites splits on these inputs (models.boosted)
                    fs = next((f for f in spec.feature_sets if enc is not None and f.name == enc.features), None)
                    categorical[m.name] = categorical_split(m.format, Path(m.path), category_domains(enc, fs))
                if categorical[m.name] is not None:      # check: unknown, in this sentence (models.boosted)
                    self.sink.add("FS506", f"the {backend} backend cannot encode model '{m.name}': "
                                           + categorical[m.name],
                                  prop.span, severity="warning", related=related,
                                  hint="a small domain is still decided by enumerating it through the library; "
                                       "else check the property on data (using data)")
            if getattr(prop, "post", None) != "logit":
                continue
            cls = tree_file_class(m.format, m.path)
            if cls in AVERAGING_TREES:
                self.sink.add("FS506", f"the {backend} backend cannot decide a logit bound on model '{m.name}': a "
                                       f"{cls}'s output averages probabilities over its leaves, and its logit is not "
                                       "linear in them (check reports it unknown)",
                              prop.span, severity="error" if chosen else "warning",
                              hint="state the bound on prob(...) instead", related=related)
