"""Output kinds in the spec (issue 25): which model outputs and metrics apply to which model.

A model is binary, multiclass with K classes, or a regression (``ir.Model.task``, decided by
fairspec.models.readout from the file and the declaration; None when lint cannot tell, e.g. a
torch file: then the loaded model decides at check time). This module checks, before any
solving, that what a spec reads fits the model:

=======  ==============================================================================
FS414    a binary decision (``label(m(x))``, a binary group metric, k-discrimination, PBA)
         read from a multiclass model without ``index``
FS415    an output the model does not have: ``value(...)`` of a classifier; ``class``,
         ``prob``, ``logit``, ``label`` of a regression; ``logit(m(x), c)`` of probabilities;
         ``logit(m(x))`` of a model with two (GradientBoosting's exponential loss: z or 2 z)
FS416    ``prob(m(x))`` / ``logit(m(x))`` of a multiclass model without a class
FS417    an unknown class: a column out of range, a label the file does not record
FS418    a binary group metric of a regression without a threshold (``threshold = t``)
FS419    a ``class = c`` metric reading the truth from a label of another class (no ``target``;
         FS429, a warning: a label that names no class; in metric_properties.py)
FS426    a decision (``label``, ``class`` of a binary model, a group metric's or PBA's decisions)
         whose rule the declaration leaves open (an XGBoost binary:logitraw model: margin > 0 or
         XGBClassifier.predict's margin > 0.5)
=======  ==============================================================================

Nothing here imports numpy or a model library.
"""

from __future__ import annotations

from fairspec import ir

MULTI_HINT = ("compare classes with class(m(x)) == class(m(x')), name a class with prob(m(x), c), "
              "or add index = i to the model declaration to read 'class i against the rest'")


def describe_kind(model: ir.Model) -> str:
    """'a multiclass model (4 classes)', 'a regression model', 'a binary classifier'."""
    if model.is_regression:
        return "a regression model"
    if model.task == "multiclass":
        k = f" ({model.n_classes} classes)" if model.n_classes else ""
        return f"a multiclass model{k}"
    return "a binary classifier"


def undeclared_value(model: ir.Model) -> bool:
    """An ONNX/torch model read as a regression without ``score = value``: its file cannot say (a
    one-column output is a binary logit by default), so the declaration must."""
    return model.format in ("onnx", "torch") and not model.is_regression and model.task != "multiclass"


def needs_index(model: ir.Model) -> bool:
    """A multiclass model without ``index``: it has no one binary decision."""
    return model.task == "multiclass" and model.index is None


def class_column(model: ir.Model, c):
    """The column of class ``c`` (int column or str label) on ``model``, or raise ReadoutError."""
    from fairspec.models.readout import Readout, ReadoutError

    if model.task is None and isinstance(c, int):
        if c < 0:
            raise ReadoutError(f"class {c} is negative", "classes are columns counted from 0")
        return c
    r = Readout(model.score_kind or "logit", model.index, model.n_classes,
                model.task or "binary", model.classes)
    if model.task is None and isinstance(c, str) and model.classes is None:
        raise ReadoutError(f"fairspec cannot read class labels from the file of model '{model.name}' before "
                           f"it is loaded, so the label {c!r} names no column", "name the class by its column (0 .. K-1)")
    return r.class_index(c)


def class_arg(ck, model: ir.Model, v) -> int:
    """The column that ``class = v`` names on ``model`` (``v`` resolved: a whole number, a column, or
    a label in quotes); FS301 for another value, FS417 for an unknown class."""
    from fairspec.models.readout import ReadoutError
    from fairspec.syntax import ast

    if isinstance(v, ast.Num) and v.is_int:
        c = int(v.value)
    elif isinstance(v, ast.Str):
        c = v.value
    else:
        ck.fail("FS301", "class = a column (a whole number) or a label in quotes", v.span)
    try:
        return class_column(model, c)
    except ReadoutError as e:
        ck.fail("FS417", e.message, v.span, hint=e.hint)


def no_probability_hint(model: ir.Model) -> str:
    name = model.name
    if model.task == "multiclass" and "multi:softmax" in (model.no_probability or ""):
        return (f"compare classes with class({name}(x)) == class({name}(x')), or a class's margin with "
                f"logit({name}(x), c); train with objective multi:softprob to read its probabilities")
    if model.format in ("xgboost", "lightgbm"):
        rule = (' (once its declaration states their rule: output = "predict" or "margin")'
                if model.decision_unstated else "")
        return (f"compare decisions with label({name}(x)) == label({name}(x')){rule}, or its margin with "
                f"logit({name}(x)); group metrics read its decisions")
    if model.format == "sklearn" and "is an XGBoost " in (model.no_probability or ""):
        # an XGBClassifier, or a pipeline's final one (sema.check_models._final_probability)
        return (f"compare decisions with label({name}(x)) == label({name}(x')) (its own predict); "
                f"group metrics read its decisions")
    if "is read by its decision_function" in (model.no_probability or "") and "a margin" not in model.no_probability:
        return (f"declare '{name}' by its probability (output = \"predict_proba\", score = prob) to read "
                f"prob({name}(x)) as its predict_proba, or compare logit({name}(x)) or label({name}(x))")
    return (f"calibrate it (CalibratedClassifierCV) and check that, compare decisions with label({name}(x)), "
            f"or declare score = logit if its decision_function is a log-odds")


def decision_problem(model: ir.Model, what: str) -> tuple[str, str, str] | None:
    """(code, message, hint) when ``what`` reads the binary decisions of ``model`` and its
    declaration leaves their rule open (``ir.Model.decision_unstated``, FS426); None otherwise."""
    if not model.decision_unstated or model.task == "multiclass":
        return None
    name = model.name
    return ("FS426", f"{what} reads the decisions of '{name}', but {model.decision_unstated}",
            f"state the rule in the declaration of '{name}': output = \"predict\" for XGBClassifier.predict's "
            f"(class 1 iff the margin is > 0.5), or output = \"margin\" for class 1 iff the margin is > 0; "
            f"logit({name}(x)) reads the margin itself")


def check_model_out(lw, mo: ir.ModelOut, model: ir.Model, span, cls_span) -> ir.ModelOut:
    """Check one model output against the model's kind; resolve a class label to its column.
    Reports FS414-FS417 through the lowerer (``lw.fail`` raises LowerError after reporting)."""
    fn, name = mo.fn, model.name
    reg = model.is_regression
    if fn == "value" and not reg and model.task is not None:
        lw.fail("FS415", f"value({name}(...)) reads a regression's output, but '{name}' is {describe_kind(model)}",
                span, hint=f"read a classifier with class({name}(x)) or prob({name}(x), c); a one-column ONNX or "
                           f"torch regression says score = value in its declaration")
    if fn == "value" and model.task is None and not reg and (model.score_kind is not None or undeclared_value(model)):
        lw.fail("FS415", f"value({name}(...)) reads a regression's output, but '{name}' " +
                (f"declares score = {model.score_kind}" if model.score_kind else
                 f"is a {model.format} model whose one-column output is a binary logit unless declared otherwise"),
                span, hint="declare the regression with score = value in the model declaration")
    if fn != "value" and reg:
        lw.fail("FS415", f"{fn}({name}(...)) reads a classifier's output, but '{name}' is a regression model",
                span, hint=f"read it with value({name}(x)); compare |value({name}(x)) - value({name}(x'))| <= eps")
    if fn == "label" and needs_index(model):
        lw.fail("FS414", f"label({name}(...)) reads a binary decision, but '{name}' is {describe_kind(model)} "
                         f"and its declaration has no index", span, hint=MULTI_HINT)
    if fn in ("prob", "logit") and mo.cls is None and needs_index(model):
        lw.fail("FS416", f"{fn}({name}(...)) names no class, and '{name}' is {describe_kind(model)}", span,
                hint=f"name the class: {fn}({name}(x), c) with c a column (0 .. {(model.n_classes or 3) - 1}) "
                     f"or a label in quotes; or add index = i to the declaration")
    if fn == "prob" and mo.cls is None and model.task == "multiclass" and model.index is not None:
        # its index reads predict == class i (a margin between columns); no probability without a class
        lw.fail("FS416", f"prob({name}(...)) names no class, and '{name}' is {describe_kind(model)} whose index = "
                         f"{model.index} reads the decision 'predict is class {model.index}', not a probability", span,
                hint=f"name the class: prob({name}(x), {model.index}), or compare label({name}(x))")
    if fn in ("label", "class") and not reg:
        problem = decision_problem(model, f"{fn}({name}(...))")
        if problem is not None:
            lw.fail(problem[0], problem[1], span, hint=problem[2])
    if fn == "prob" and model.no_probability:
        lw.fail("FS415", f"prob({name}(...)) reads a class probability, but {model.no_probability}", span,
                hint=no_probability_hint(model))
    if fn == "logit" and model.two_logits:
        lw.fail("FS415", f"logit({name}(...)) reads the model's logit, but {model.two_logits}", span,
                hint=f"compare prob({name}(x)) (its predict_proba) or label({name}(x)); or declare " + (
                    f"output = \"margin\" for '{name}' to read logit({name}(x)) as its raw score r"
                    if model.format == "lightgbm" else
                    f"output = \"decision_function\" for '{name}' to read logit({name}(x)) as z"))
    if fn == "logit" and mo.cls is not None and model.score_kind == "prob":
        lw.fail("FS415", f"logit({name}(...), c) reads an output of logits, but '{name}' declares score = prob",
                span, hint=f"use prob({name}(x), c)")
    if mo.cls is None or mo.cls == ir.EVERY_CLASS:
        return mo
    from fairspec.models.readout import ReadoutError

    try:
        col = class_column(model, mo.cls)
    except ReadoutError as e:
        lw.fail("FS417", e.message, cls_span, hint=e.hint)
    return ir.ModelOut(mo.fn, mo.model, mo.var, col)


def binary_decision_problem(model: ir.Model, what: str) -> tuple[str, str, str] | None:
    """(code, message, hint) when ``what`` (a kind of property or metric that reads one binary
    decision) cannot read ``model``; None when it can (or lint cannot tell)."""
    if model.is_regression:
        return ("FS418", f"{what} reads a binary decision, but '{model.name}' is a regression model",
                f"threshold its value: add threshold = t to the metric (positive where value({model.name}(x)) "
                f">= t), or use a regression metric (mean_prediction_difference, bounded_group_loss, ...)")
    if needs_index(model):
        return ("FS414", f"{what} reads a binary decision, but '{model.name}' is {describe_kind(model)} and its "
                         f"declaration has no index",
                "name a class: add class = c to the metric (that class against the rest), or index = i to the "
                "model declaration")
    return None


def label_class(model: ir.Model, label) -> tuple[str, str, int | None] | None:
    """The class a data set's ``label`` condition is the truth of, when it reads ``COLUMN == v``:
    (column, v as written, v's class column on ``model`` -- matched as the target column is, a
    recorded label as text, else a whole number as a column -- or None when v is no class of it).
    None when the label has another form (a Boolean column, a range, a conjunction, ...)."""
    if not (isinstance(label, ir.Cmp) and label.op == "=="):
        return None
    col, lit = label.left, label.right
    if isinstance(col, ir.Const):
        col, lit = lit, col
    if not (isinstance(col, ir.ColumnRef) and isinstance(lit, ir.Const)) or isinstance(lit.value, bool):
        return None
    v = lit.value
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    shown = f'"{v}"' if isinstance(v, str) else str(v)
    if model.classes is not None:          # a number label by value (1.0 of a float column is v = 1), else as text
        k = next((i for i, lab in enumerate(model.classes) if str(lab) == str(v) or (
            isinstance(v, (int, float)) and isinstance(lab, (int, float)) and not isinstance(lab, bool)
            and float(lab) == float(v))), None)
    elif isinstance(v, int) and v >= 0 and (model.n_classes is None or v < model.n_classes):
        k = v
    else:
        k = None
    return col.column, shown, k


def class_shown(model: ir.Model, c: int) -> str:
    """Class column ``c`` as a spec names it: its recorded label in quotes, else the column."""
    if model.classes is not None and 0 <= c < len(model.classes):
        return f'"{model.classes[c]}"'
    return str(c)
