"""The runner of the repair backend (FairRepair, :mod:`fairspec.backends.repair`): it asks the planner
for the options and passes them in."""

from __future__ import annotations


def run(prop, ctx, progress=None):
    from fairspec.backends.repair.runner import BACKEND, run_repair
    from fairspec.planning import setting

    v = run_repair(prop, ctx, progress, engine=setting(prop, "engine", BACKEND),
                   timeout=ctx.remaining(setting(prop, "timeout", BACKEND)))  # the clock starts here
    return unread_when_met(prop, v)


def unread_when_met(prop, v):
    """A model that already meets the goal on the data rows is not repaired: no flips are chosen, so the
    solver (``engine``) and its time limit (``timeout``) the spec sets are read by nothing -- each said in
    the verdict's notes (lint cannot know: it takes the model's decisions on the rows). The goal ``> c``
    with c >= 1, which nothing reaches, is lint's FS213 (sema.options)."""
    from fairspec.verdict import with_note

    if v.status != "holds" or (v.details or {}).get("repaired", True):
        return v
    for k in ("engine", "timeout"):
        if prop.options.get(k) is not None:
            v = with_note(v, f"`{k}` has no effect here: the model already meets the goal on the data rows, so "
                             "no repair was searched")
    return v
