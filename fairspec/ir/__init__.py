"""The typed intermediate representation of a checked spec.

Frozen dataclasses only: no Lark, numpy or solver types.  Sema builds a
:class:`Spec`; the planner hands each property to a backend, which lowers it
to its own problem (a MILP, a CNF, a batch of model evaluations, ...).

Terms follow the papers: a *witness* is a pair (x, x') violating an
individual-fairness property; the *positive rate* (passing rate, PPV in
Justicia/FVGM) of a group is Pr[model says 1 | group]; *disparate impact* is
the ratio min/max of positive rates over groups; *statistical parity* their
difference max - min; *equalized odds* the largest TPR or FPR gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Union

from fairspec.diagnostics import Span


# ------------------------------------------------------------------ domains

@dataclass(frozen=True)
class IntRange:
    lo: int
    hi: int
    kind: str = "int"


@dataclass(frozen=True)
class RealRange:
    lo: float
    hi: float
    kind: str = "real"


@dataclass(frozen=True)
class Categorical:
    categories: tuple[str, ...]
    kind: str = "cat"

    def index(self, value: str) -> int:
        return self.categories.index(value)


@dataclass(frozen=True)
class Boolean:
    kind: str = "bool"

    @property
    def categories(self) -> tuple[str, ...]:
        return ("false", "true")


Domain = Union[IntRange, RealRange, Categorical, Boolean]


@dataclass(frozen=True)
class Feature:
    name: str
    domain: Domain
    protected: bool
    column: str  # the data column it is read from (defaults to its name)
    bins: tuple[float, ...] | None = None
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def is_discrete(self) -> bool:
        return self.domain.kind in ("cat", "bool")

    def values(self) -> tuple:
        """The finite value set of a discrete feature (category names / False, True)."""
        if isinstance(self.domain, Categorical):
            return self.domain.categories
        if isinstance(self.domain, Boolean):
            return (False, True)
        if isinstance(self.domain, IntRange):
            return tuple(range(self.domain.lo, self.domain.hi + 1))
        raise ValueError(f"{self.name} is continuous")


def numeric_bands(f: Feature) -> list[tuple[float, float]]:
    """The bands of a numeric feature cut by its right-closed bins, inside its range:
    int [lo, e0], [e0 + 1, e1], ...; real [lo, e0], (e0, e1], ... (a band's left end just above the edge)."""
    lo, hi = float(f.domain.lo), float(f.domain.hi)
    is_int = isinstance(f.domain, IntRange)
    bands, start = [], lo
    for e in list(f.bins) + [math.inf]:
        end = float(min(hi, math.floor(e) if is_int and math.isfinite(e) else e))
        if end >= start:
            bands.append((start, end))
        if e >= hi:
            break
        start = max(start, (math.floor(e) + 1.0) if is_int else math.nextafter(e, math.inf))
    return bands


@dataclass(frozen=True)
class FeatureSet:
    name: str
    features: tuple[Feature, ...]
    data: str | None  # the data set the features are read from
    span: Span | None = field(default=None, compare=False, repr=False)

    def get(self, name: str) -> Feature | None:
        for f in self.features:
            if f.name == name:
                return f
        return None

    @property
    def protected(self) -> tuple[Feature, ...]:
        return tuple(f for f in self.features if f.protected)


# ------------------------------------------------------------------ encoding

@dataclass(frozen=True)
class ColumnEncoding:
    """How one feature becomes model-input columns [offset, offset + width).

    kind: ``raw`` (the number itself; booleans 0/1), ``code`` (a category's
    integer code), ``onehot`` (one column per category, in ``categories``
    order), ``minmax`` ((v - lo) / (hi - lo)), ``standard`` ((v - mean) / std).

    A ``minmax`` column read from a fitted scikit-learn ``MinMaxScaler`` carries its ``scale_`` and
    ``min_`` as ``scale`` / ``shift`` and is computed as the scaler computes it, ``v * scale + shift``
    (up to one rounding away from ``(v - lo) / (hi - lo)``, which can decide a tie).
    """

    feature: str
    kind: str
    offset: int
    width: int
    categories: tuple[str, ...] = ()
    codes: tuple[float, ...] = ()  # code of each category (kind == "code")
    lo: float | None = None
    hi: float | None = None
    mean: float | None = None
    std: float | None = None
    scale: float | None = None   # minmax as a fitted MinMaxScaler computes it: v * scale + shift
    shift: float | None = None
    fitted: bool = False  # scaling parameters were fitted on the data
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Encoding:
    features: str
    model: str
    columns: tuple[ColumnEncoding, ...]
    width: int
    span: Span | None = field(default=None, compare=False, repr=False)

    def column(self, feature: str) -> ColumnEncoding | None:
        for c in self.columns:
            if c.feature == feature:
                return c
        return None


# ------------------------------------------------------------------ models and data

@dataclass(frozen=True)
class Model:
    name: str
    format: str  # onnx | torch | sklearn | rule
    path: str | None
    output: str | int | None = None
    index: int | None = None
    score_kind: str | None = None  # logit | prob | value (value: a regression, ``score = value``)
    trust_pickle: bool = False
    rule: "Expr | None" = None  # for format == "rule": a boolean formula over features
    # format == "predictions": a table of logged decisions, no model file: the data set and
    # its score column (positive where score > threshold) or decision column
    data: str | None = None
    score_column: str | None = None
    decision_column: str | None = None
    threshold: float | None = None
    positive: str | None = None  # a decision column's positive value as text (None: 1/0, yes/no, true/false)
    features: str | None = None  # the feature set its encoding reads
    span: Span | None = field(default=None, compare=False, repr=False)
    # The output kind (issue 25; fairspec.models.readout decides it): "binary" | "multiclass" |
    # "regression", as known at lint time from the file (scikit-learn classes_ / a regressor, an
    # ONNX output of K >= 3 columns) or the declaration (score = value); None when lint cannot tell
    # (a torch file, an ONNX output of unknown shape): the loaded model's readout says it at check.
    task: str | None = None
    n_classes: int | None = None  # K of a classifier when known at lint time
    classes: tuple | None = None  # class labels in column order when the file records them
    # why the classifier has no class probability, the clause after "but" of FS415 (a LinearSVC: no
    # predict_proba, its decision_function a margin, not a log-odds, when the file says so and the
    # declaration says no score = ...; an XGBoost binary:hinge / binary:logitraw model, always)
    no_probability: str | None = None
    # why its binary decision depends on a choice the declaration does not make, the clause after
    # "but" of FS426 (an XGBoost binary:logitraw model declared without output or score: margin > 0
    # or XGBClassifier.predict's > 0.5)
    decision_unstated: str | None = None
    # why logit(m(x)) names two numbers, the clause after "but" of FS415 (a GradientBoostingClassifier
    # with loss = 'exponential': decision_function z, or the log-odds 2 z of its predict_proba)
    two_logits: str | None = None
    rounds: str | None = None  # xgboost: "best" | "all" (which boosting rounds are the model; early stopping)

    @property
    def is_regression(self) -> bool:
        return self.task == "regression" or self.score_kind == "value"


@dataclass(frozen=True)
class Data:
    name: str
    format: str  # csv | parquet
    path: str
    sep: str = ","
    header: bool = True
    columns: tuple[str, ...] | None = None
    missing: tuple[str, ...] = ()
    categories: str = "names"  # "names" or "codes": categorical columns hold category names or codes
    where: "Expr | None" = None
    label: "Expr | None" = None
    span: Span | None = field(default=None, compare=False, repr=False)
    # ((column, markers), ...): missing-value markers of one column, besides ``missing`` (all columns)
    missing_by_column: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the columns the spec reads from this data set (features, label, where, weights, logged
    # decisions); a row is dropped only when one of these is missing. None: every column.
    used: tuple[str, ...] | None = None
    # issue 25: the column of the true class (multiclass metrics: one-vs-rest truth, confusion matrices)
    # or the true value (regression: error metrics); ``label`` stays the binary truth condition
    target: str | None = None
    # where the label, target and where are written (check's FS432 / FS433 about rows lint did not read point at
    # them), and what lint already said from its sample ("FS433", "FS433:target", "FS435:COLUMN"): check
    # does not say it twice
    label_span: Span | None = field(default=None, compare=False, repr=False)
    target_span: Span | None = field(default=None, compare=False, repr=False)
    where_span: Span | None = field(default=None, compare=False, repr=False)
    lint_said: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def markers(self, column: str) -> tuple[str, ...]:
        """The missing-value markers of one column (the data set's and the column's own)."""
        own = next((m for c, m in self.missing_by_column if c == column), ())
        return tuple(dict.fromkeys(self.missing + own))


# ------------------------------------------------------------------ expressions

@dataclass(frozen=True)
class Expr:
    pass


def subexpressions(e: Expr):
    """``e`` and every expression inside it, depth first (a FeatureRef, a ModelOut, a Const are leaves)."""
    yield e
    for name in e.__dataclass_fields__:
        v = getattr(e, name)
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, Expr):
                yield from subexpressions(x)


@dataclass(frozen=True)
class Const(Expr):
    value: object  # float | int | str | bool


@dataclass(frozen=True)
class ColumnRef(Expr):
    column: str  # a raw data column (in data where/label expressions)


@dataclass(frozen=True)
class FeatureRef(Expr):
    feature: str
    var: str | None = None  # pair variable (x or x'), or None for "the row"


@dataclass(frozen=True)
class Cmp(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class InSet(Expr):
    item: Expr
    values: tuple
    negated: bool = False


@dataclass(frozen=True)
class Logic(Expr):
    op: str  # and | or
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class NotE(Expr):
    arg: Expr


@dataclass(frozen=True)
class ArithE(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class AbsE(Expr):
    arg: Expr


@dataclass(frozen=True)
class ModelOut(Expr):
    """One output of a model applied to a pair variable (issue 25 added class/value and ``cls``).

    fn:  ``label`` -- the binary decision (0/1: the readout's score above its threshold);
         ``prob`` / ``logit`` with ``cls`` None -- the binary score (the readout's one column);
         ``prob`` with ``cls`` -- class cls's probability (the probability column, or the softmax
         of the logit columns); ``logit`` with ``cls`` -- logit column cls;
         ``class`` -- the predicted class, the argmax column (the first maximal one on a tie; for a
         one-column binary model, the decision); ``value`` -- a regression's output.
    cls: a class's column (int; a label literal is resolved to its column by sema), or
         :data:`EVERY_CLASS` inside ``ensure forall c: ...`` (each class in turn); None otherwise.
    """

    fn: str  # label | prob | logit | class | value
    model: str
    var: str
    cls: int | str | None = None


EVERY_CLASS = "*"  # ModelOut.cls / IndividualFairness.cls: every class (ensure forall c: ...)


# ------------------------------------------------------------------ groups

@dataclass(frozen=True)
class GroupAtom:
    """One factor of a (compound) group: a discrete feature, or a derived boolean group."""

    name: str
    feature: str | None  # the discrete feature it splits on
    predicate: Expr | None = None  # derived groups: a boolean expression over features
    values: tuple = ()  # value labels, in order


@dataclass(frozen=True)
class Groups:
    atoms: tuple[GroupAtom, ...]

    @property
    def label(self) -> str:
        return " x ".join(a.name for a in self.atoms)


# ------------------------------------------------------------------ options

@dataclass(frozen=True)
class Options:
    """The options a property sets (``name = value``, ``using``, ``search``, ``explain``).

    None means "not set": the backend that runs the property then uses the default in
    its option schema (``fairspec.planning.setting``; ranges and defaults are declared in
    ``fairspec/planning/registry.py`` and listed in the README)."""

    backend: str | None = None
    timeout: float | None = None  # seconds
    seed: int = 0
    confidence: float = 0.95
    bootstrap: int | None = None  # resamples; None: the backend's default (data: 1000; distributions: none)
    min_group_size: int = 30
    mode: str | None = None  # find | maximize | prove
    search: str | None = None
    search_budget: float | None = None
    explain: str | None = None
    partitions: int | None = None
    max_rows: int | None = None
    part_timeout: float | None = None
    refine: float | None = None         # seconds of FairQuant's refinement after the partitions' decisions
    estimate: int | None = None         # individuals sampled from the undecided share (0: no estimate)
    engine: str | None = None
    workers: int | None = None
    points: int | None = None
    chart: str | None = None
    method: str | None = None
    compare: str | None = None          # data group metrics: between_groups | to_overall
    weight: str | None = None           # data group metrics: the sample-weight column
    exclude_below: float | None = None  # data group metrics: leave out groups below this share of rows
    extra: tuple[tuple[str, object], ...] = ()

    def get(self, key: str, default=None):
        v = getattr(self, key, None) if key in self.__dataclass_fields__ and key != "extra" else None
        if v is not None:
            return v
        for k, v in self.extra:
            if k == key:
                return v
        return default


# ------------------------------------------------------------------ properties

@dataclass(frozen=True)
class Property:
    name: str
    kind: str
    options: Options
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class IndividualFairness(Property):
    """Fairify/HyFair: for all x, x' equal except on ``free``, the post-condition holds.

    post (binary models, or a multiclass model's ``index`` class against the rest):
      ``label`` (same decision), ``prob`` (|p - p'| <= eps), ``logit`` (|z - z'| <= eps) on the
      readout's one binary score.
    post (issue 25; every model output read by fairspec.models.readout, never the binary score):
      ``class``       ``class(m(x)) == class(m(x'))``: the same predicted class, the argmax of the
                      output columns with ties to the first maximal column (numpy/onnx/torch argmax,
                      scikit-learn predict); for a one-column binary model, the same decision.
      ``class_prob``  ``|prob(m(x), c) - prob(m(x'), c)| <= eps`` for the class ``cls`` (a column
                      index, int), or for EVERY class when ``cls == EVERY_CLASS`` (written
                      ``ensure forall c: |prob(m(x), c) - prob(m(x'), c)| <= eps``: no class's
                      probability moves by more than eps, i.e. the L-infinity distance of the two
                      probability vectors). A class's probability is its column when the output
                      holds probabilities and the softmax of the logit columns when it holds logits.
      ``class_logit`` ``|logit(m(x), c) - logit(m(x'), c)| <= eps``: logit column ``cls`` (or every
                      column, EVERY_CLASS); an output of logits only.
      ``value``       ``|value(m(x)) - value(m(x'))| <= eps`` for a regression model.
    ``eps``/``eps_op`` as below for every post but ``label`` and ``class``.

    Comparisons keep the operator the spec writes (``<`` is not ``<=``):

    * ``eps_op``: the post-condition's comparison for ``prob`` / ``logit``, ``"<="``
      (``|p - p'| <= eps``: a pair violates when the difference is ``> eps``) or ``"<"``
      (``|p - p'| < eps``: a pair violates when it is ``>= eps``); ``"<="`` for ``label``.
    * ``relaxed`` lists ``(feature, t)``; the features in ``relaxed_strict`` are written
      ``|x.f - x'.f| < t`` (an admissible pair differs by less than t), the others
      ``|x.f - x'.f| <= t``. :meth:`relaxed_op` gives the operator of one feature.
    """

    model: str = ""
    features: str = ""
    var: str = "x"
    var_prime: str = "x'"
    free: tuple[str, ...] = ()  # features allowed to differ (the protected ones)
    relaxed: tuple[tuple[str, float], ...] = ()  # |x.f - x'.f| <= t  (or < t: relaxed_strict)
    pre: tuple[Expr, ...] = ()  # further pre-conditions
    post: str = "label"
    eps: float = 0.0
    eps_op: str = "<="  # "<=" | "<": the post-condition |out(x) - out(x')| op eps
    relaxed_strict: tuple[str, ...] = ()  # relaxed features written |x.f - x'.f| < t
    cls: int | str | None = None  # class_prob / class_logit: the class's column, or EVERY_CLASS

    @property
    def eps_strict(self) -> bool:
        """Is the post-condition written ``|out(x) - out(x')| < eps`` (a difference of exactly
        eps violates it)?"""
        return self.post not in ("label", "class") and self.eps_op == "<"

    @property
    def reads_output_kind(self) -> bool:
        """Does the post read class/prob(c)/logit(c)/value (issue 25), not the binary score?"""
        return self.post in MULTI_POSTS

    def relaxed_op(self, feature: str) -> str:
        """``"<"`` or ``"<="``: how the tolerance of a relaxed feature is written."""
        return "<" if feature in self.relaxed_strict else "<="


BINARY_POSTS = ("label", "prob", "logit")
MULTI_POSTS = ("class", "class_prob", "class_logit", "value")


@dataclass(frozen=True)
class KDiscrimination(Property):
    """HyFair: the K counterfactual outputs of one input fall into k clusters of width eps.

    ``output`` (issue 25): ``"score"`` -- the binary score (logit or probability) in buckets of
    width eps (HyFair); ``"class"`` -- a multiclass model's predicted class: k is the number of
    distinct classes among the K counterfactuals (eps unused); ``"class_prob"`` -- class ``cls``'s
    probability (a column) in buckets of width eps."""

    model: str = ""
    features: str = ""
    over: tuple[str, ...] = ()
    eps: float = 0.05
    op: str = "<"
    k: int = 2
    output: str = "score"
    cls: int | None = None


@dataclass(frozen=True)
class PBA(Property):
    """Ceteris-paribus persistent-bias-aware fairness over delta-neighbourhoods."""

    model: str = ""
    features: str = ""
    flip: tuple[str, ...] = ()
    around: str = ""
    given: Expr | None = None
    delta: tuple[tuple[str, float], ...] = ()
    report_by: Groups | None = None
    op: str | None = None
    threshold: float | None = None


@dataclass(frozen=True)
class GroupMetric(Property):
    """A group metric of a model over a data set or a distribution, compared to a threshold."""

    metric: str = ""  # see fairspec.analyses.group_rates.METRICS
    model: str = ""  # "" when the subject is the data set itself: its labels are the decisions
    features: str = ""
    groups: Groups = Groups(())
    data: str | None = None
    distribution: str | None = None
    mediators: tuple[str, ...] = ()
    op: str = ">="
    threshold: float = 0.0
    # metric == "influence" (FVGM's fairness influence functions): the metric whose change is
    # measured and the feature subsets S made uniform and independent; () = each feature the
    # classifier reads, alone.  The value is max over S of |metric(D) - metric(D_{-S})|.
    influence_metric: str | None = None
    subsets: tuple[tuple[str, ...], ...] = ()
    # what is measured, from the call: alpha (generalised entropy), bins (calibration),
    # rate = selection | scoring (impact_ratio: decision = score above the median score)
    params: tuple[tuple[str, object], ...] = ()

    def param(self, key: str, default=None):
        return next((v for k, v in self.params if k == key), default)


@dataclass(frozen=True)
class Repair(Property):
    """FairRepair: patch a tree/forest so passing-rate ratios reach c within alpha of minimal change."""

    model: str = ""
    features: str = ""
    groups: Groups = Groups(())
    threshold: float = 0.8
    alpha: float = 1.2
    write: str | None = None
    strict: bool = False  # goal ... > c rather than >= c


# ------------------------------------------------------------------ distributions

@dataclass(frozen=True)
class CptRow:
    feature: str
    value: object
    given: tuple[tuple[str, object], ...]
    prob: float


def event_text(feature: str, value) -> str:
    """A CPT event as the spec writes it: `Q`, `not Q`, `race = White`."""
    if value is True:
        return feature
    if value is False:
        return f"not {feature}"
    return f"{feature} = {value}"


@dataclass(frozen=True)
class Distribution:
    name: str
    kind: str  # empirical | independent | conditional | bayes | table
    data: str | None = None
    params: tuple[tuple[str, object], ...] = ()
    table: tuple[CptRow, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)


# ------------------------------------------------------------------ the spec

@dataclass(frozen=True)
class Spec:
    file: str
    models: tuple[Model, ...]
    datasets: tuple[Data, ...]
    feature_sets: tuple[FeatureSet, ...]
    encodings: tuple[Encoding, ...]
    groups: tuple[GroupAtom, ...]
    distributions: tuple[Distribution, ...]
    properties: tuple[Property, ...]
    sources: tuple[str, ...] = ()  # every spec file parsed for it: the imports, then ``file`` itself
    # (file, line, code) of the warnings an ignore comment suppresses, (None, None, code) for --ignore
    # (fairspec.diagnostics.ignores): what check finds once a model is loaded is suppressed alike
    ignored: tuple[tuple[str | None, int | None, str], ...] = ()

    def ignores(self, code: str, span) -> bool:
        """Is warning ``code`` at ``span`` suppressed (an ignore comment there, or --ignore)?"""
        return any(c == code and (f is None or span is not None and f == span.file and n == span.line)
                   for f, n, c in self.ignored)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every file the spec reads (itself, its imports, its model and data files): no file fairspec
        writes (a repair's model, a chart, the HTML report) may replace one of them."""
        files = (self.file, *self.sources, *(m.path for m in self.models), *(d.path for d in self.datasets))
        return tuple(dict.fromkeys(str(f) for f in files if f))

    def model(self, name: str) -> Model:
        return next(m for m in self.models if m.name == name)

    def data(self, name: str) -> Data:
        return next(d for d in self.datasets if d.name == name)

    def feature_set(self, name: str) -> FeatureSet:
        return next(f for f in self.feature_sets if f.name == name)

    def encoding_for(self, model: str) -> Encoding | None:
        return next((e for e in self.encodings if e.model == model), None)
