"""plan(property, spec): what a property needs and which registered backend decides it.

Sema (FS502, FS504, FS506, the option schema), lint, check, the report and the
editor all ask this one function; no other code chooses a backend.

Over a distribution the backend depends on facts known only once the problem
is built (the classifier's Boolean form, the network's edges): without them
the plan names the candidates and the runner they share; the runner calls
``plan(prop, spec, facts)`` again with the facts, and that picks.
"""

from __future__ import annotations

from dataclasses import dataclass

from fairspec.planning.registry import BACKENDS, DISTRIBUTION_ONLY_METRICS, NEEDS, Capability, backends_for

FORM_WORDS = {"tree": "decision tree", "cnf": "CNF rule", "linear": "linear rule"}
_PLURAL = {"tree": "decision trees", "cnf": "CNF rules", "linear": "linear classifiers"}
# what a property kind runs on when the spec does not say `using` (first that applies)
PREFERENCE: dict[str, tuple[str, ...]] = {
    "individual_fairness": ("milp", "data"),
    "k_discrimination": ("search",),
    "pba": ("milp",),
    "group_metric": ("data", "dp", "ssat", "elimination"),
    "repair": ("repair",),
}


@dataclass(frozen=True)
class Plan:
    kind: str
    backend: str | None                    # the backend that decides it (None: see candidates / why)
    candidates: tuple[str, ...] = ()       # still in play until the run-time facts are known
    runner: str | None = None              # "module:function" that runs it
    needs: tuple[str, ...] = ()            # what the property needs (keys of registry.NEEDS)
    why: str | None = None                 # no backend decides it: the reason (FS504, unknown)
    error: str | None = None               # `using B` names a backend that cannot decide it (FS502; also why)
    hint: str | None = None
    note: str | None = None                # anything the reader should know about the choice

    @property
    def runs(self) -> bool:
        return self.runner is not None

    def capability(self) -> Capability | None:
        name = self.backend or (self.candidates[0] if self.candidates else None)
        return BACKENDS[name].capability(self.kind, _over_of_needs(self.needs)) if name else None

    def describe(self) -> str:
        """One line for people (hover, reports)."""
        if self.error:
            return self.error
        if not self.runs:
            return f"no backend: {self.why}"
        what = ", ".join(NEEDS[n] for n in self.needs)
        who = self.backend or (", ".join(self.candidates[:-1]) + " or " + self.candidates[-1]
                               + " (chosen from the classifier's Boolean form once it is built)")
        return f"{who}; needs {what}" + (f"; {self.note}" if self.note else "")


def _over_of_needs(needs) -> str | None:
    return "distribution" if "distribution" in needs else ("data" if "data" in needs else None)


def _distribution(prop, spec):
    name = getattr(prop, "distribution", None)
    if not name or spec is None:
        return None
    return next((d for d in spec.distributions if d.name == name), None)


def over_of(prop, spec) -> str | None:
    """Group metrics: measured on data rows ("data") or over a distribution ("distribution");
    the empirical distribution of a data set is its rows."""
    if prop.kind != "group_metric":
        return None
    if getattr(prop, "distribution", None) is None:
        return "data"
    d = _distribution(prop, spec)
    return "data" if d is not None and d.kind == "empirical" else "distribution"


def _needs(prop, backend: str, over: str | None) -> tuple[str, ...]:
    if over == "distribution":
        return ("distribution", "boolean_form")
    return BACKENDS[backend].needs


def _kind_words(kind: str) -> str:
    return kind.replace("_", " ")


def plan(prop, spec=None, facts: dict | None = None) -> Plan:
    """The plan of ``prop`` (an ``ir.Property``).  ``spec`` is anything with ``distributions``
    (an ``ir.Spec``); ``facts`` over a distribution: ``form`` (tree | cnf | linear) and
    ``feature_edges`` (the network has an edge between features the classifier reads)."""
    kind = prop.kind
    over = over_of(prop, spec)
    metric = getattr(prop, "metric", None)
    if metric in DISTRIBUTION_ONLY_METRICS:
        over = "distribution"
    names = backends_for(kind, over)
    wanted = prop.options.backend
    empirical = kind == "group_metric" and over == "data" and getattr(prop, "distribution", None) is not None
    rule = _rule_model(prop, spec)
    if rule is not None:         # a rule model's pairs: enumerated (the solvers read networks and trees)
        if wanted is None:
            return _chosen(kind, "enumerate", over)
    elif wanted == "enumerate" and _rule_model(prop, spec, False) is not None:
        msg = (f"the enumerate backend decides rule models (`rule(...)`) only, and '{prop.model}' is a model file "
               f"(milp and smt enumerate its small domains on its runtime)")
        return Plan(kind, None, why=msg, error=msg, hint=_others(kind, metric, over))
    if wanted is not None:
        if wanted not in BACKENDS:
            msg = f"unknown backend '{wanted}'"
            return Plan(kind, None, why=msg, error=msg, hint=f"backends: {', '.join(BACKENDS)}")
        if empirical and BACKENDS[wanted].capability(kind, "distribution") is not None:
            # distribution = DATA is the data rows themselves: measured by the data backend
            return _chosen(kind, "data", "data", note=f"the empirical distribution is the data rows, so the data "
                                                         f"backend measures it (not {wanted})")
        if wanted not in names:
            msg = _cannot(wanted, kind, metric, over)
            return Plan(kind, None, why=msg, error=msg, hint=_others(kind, metric, over))
        if over == "distribution":
            return _over_distribution(prop, (wanted,), facts, forced=True)
        return _chosen(kind, wanted, over)
    if over == "distribution":
        return _over_distribution(prop, tuple(b for b in PREFERENCE[kind] if b in names), facts)
    for b in PREFERENCE.get(kind, ()):
        if b in names:
            return _chosen(kind, b, over)
    return Plan(kind, None, why=f"no backend decides {_kind_words(kind)} properties yet")


def _rule_model(prop, spec, rule: bool = True):
    """An individual-fairness property's model when it is (``rule``) or is not a rule model, as the spec
    declares it; None otherwise, or when ``spec`` declares no models (plan(prop) without one)."""
    name = getattr(prop, "model", None)
    if prop.kind != "individual_fairness" or not name:
        return None
    m = next((m for m in getattr(spec, "models", None) or () if m.name == name), None)
    return m if m is not None and (m.format == "rule") == rule else None


def _chosen(kind, backend, over, note=None) -> Plan:
    cap = BACKENDS[backend].capability(kind, over)
    return Plan(kind, backend, runner=cap.runner, needs=_needs(None, backend, over), note=note)


def _cannot(backend, kind, metric, over) -> str:
    if metric in DISTRIBUTION_ONLY_METRICS and BACKENDS[backend].capability(kind) is not None:
        ok = " or ".join(backends_for(kind, "distribution"))
        return (f"the {backend} backend measures group metrics on data rows; fairness influence needs a "
                f"distribution ({ok})")
    if over is not None and BACKENDS[backend].capability(kind) is not None:
        where = "on data rows" if over == "data" else "over a distribution"
        return f"the {backend} backend cannot measure a group metric {where}"
    return f"the {backend} backend cannot evaluate a {_kind_words(kind)} property"


def _others(kind, metric, over) -> str:
    names = backends_for(kind, over)
    what = "influence(...)" if metric in DISTRIBUTION_ONLY_METRICS else "this property"
    return f"backends for {what}: {', '.join(names)}" if names else f"no backend decides {_kind_words(kind)} yet"


def _over_distribution(prop, candidates: tuple[str, ...], facts, forced: bool = False) -> Plan:
    kind = prop.kind
    runner = BACKENDS[candidates[0]].capability(kind, "distribution").runner
    needs = ("distribution", "boolean_form")
    if facts is None:
        if len(candidates) == 1:
            return Plan(kind, candidates[0], runner=runner, needs=needs)
        return Plan(kind, None, candidates, runner=runner, needs=needs)
    form = facts["form"]
    if forced:
        b = candidates[0]
        cap = BACKENDS[b].capability(kind, "distribution")
        if form not in cap.forms:
            decides = " and ".join(_PLURAL[f] for f in cap.forms)
            others = [x for x in backends_for(kind, "distribution")
                      if form in BACKENDS[x].capability(kind, "distribution").forms]
            return Plan(kind, None, runner=None, needs=needs,
                        why=f"the {b} backend handles {decides} only, and {prop.model} is a "
                            f"{FORM_WORDS[form]}; use {' or '.join(others)}")
        return Plan(kind, b, runner=runner, needs=needs)
    # linear rules: FVGM's DP; a tree over a network whose features depend on each other: exact
    # elimination over the tree's paths (the SSAT search over order-encoded bins does not scale
    # there); anything else: SSAT
    if form == "linear" and "dp" in candidates:
        b = "dp"
    elif form == "tree" and facts.get("feature_edges") and "elimination" in candidates:
        b = "elimination"
    else:
        b = next(x for x in candidates if form in BACKENDS[x].capability(kind, "distribution").forms)
    return Plan(kind, b, runner=runner, needs=needs)
