"""The runner of the repair backend (FairRepair, :mod:`fairspec.backends.repair`): it asks the planner
for the options and passes them in."""

from __future__ import annotations


def run(prop, ctx, progress=None):
    from fairspec.backends.repair.runner import BACKEND, run_repair
    from fairspec.planning import setting

    return run_repair(prop, ctx, progress, engine=setting(prop, "engine", BACKEND),
                      timeout=ctx.remaining(setting(prop, "timeout", BACKEND)))  # the clock starts here
