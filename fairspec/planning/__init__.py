"""Planning: the backend registry and the one function that picks a backend for a property.

    from fairspec.planning import plan, BACKENDS
    p = plan(prop, spec)        # -> Plan(backend, runner, needs, why, error, ...)

See registry.py (what each backend decides, needs and takes) and plan.py.
"""

from fairspec.planning.plan import FORM_WORDS, PREFERENCE, Plan, over_of, plan
from fairspec.planning.registry import (BACKENDS, NEEDS, OPTIONS, Backend, Capability, Option, backends_for,
                                        register, supports, supports_metric)

__all__ = ["plan", "Plan", "PREFERENCE", "FORM_WORDS", "over_of", "BACKENDS", "NEEDS", "OPTIONS", "Backend",
           "Capability", "Option", "backends_for", "register", "supports", "supports_metric", "setting",
           "settings"]


def setting(prop, name: str, backend: str | None = None):
    """The value of option ``name`` for ``prop``: the spec's, else the default in the schema of the
    backend that runs it (``backend``, or the one the spec chose with ``using``)."""
    value = prop.options.get(name)      # a field of the options or one of the spec's extras
    if value is not None:
        return value
    b = BACKENDS.get(backend or prop.options.backend or "")
    cap = None
    if b is not None:
        cap = next((c for c in b.capabilities if c.kind == prop.kind), None)
    else:
        p = plan(prop)
        cap = p.capability()
    o = cap.option(name) if cap is not None else None
    if o is None:
        o = OPTIONS.get(name)
    return None if o is None else o.default


def settings(prop, spec=None, backend: str | None = None) -> dict:
    """Every option the backend that decided ``prop`` takes (``backend``: the verdict's, when it names
    one; else the planned one), with the value it ran with: the spec's, else the backend's default
    (None: not set and no default, as a data backend's timeout). The report records them beside the
    verdict (``options`` in JSON, the HTML section), so that an auditor can replay the run."""
    b = BACKENDS.get(backend or "")
    cap = b.capability(prop.kind, over_of(prop, spec)) if b is not None else None
    if cap is None:
        cap = plan(prop, spec).capability()
    if cap is None:
        return {}
    out = {}
    for o in cap.options:
        value = prop.options.get(o.name)
        out[o.name] = o.default if value is None else value
    if prop.options.search_budget is not None:  # `search annealing for 60s`
        out["search_budget"] = prop.options.search_budget
    return out
