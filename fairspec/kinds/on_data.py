"""The runner of the data backend: fairness measured on the declared data rows with the real model --
group metrics (:func:`fairspec.backends.data.metrics.run_group_metric`) and counterfactual flips
(:func:`fairspec.backends.data.flips.run_flips`). It asks the planner for their options and passes
them in: no backend imports the planner."""

from __future__ import annotations

RUNNER = "fairspec.kinds.on_data:run"


def run(prop, ctx, progress=None):
    from fairspec.planning import plan, setting

    if prop.kind == "group_metric":
        from fairspec.backends.data.metrics import run_group_metric

        return run_group_metric(prop, ctx, resamples=setting(prop, "bootstrap", "data"),
                                timeout=setting(prop, "timeout", "data"),
                                why=plan(prop, ctx.spec).why if prop.data is None else None)
    from fairspec.kinds.forest_margin import decide as by_margin      # a forest adding its trees in thread order

    # its flips found on one thread (the trees' order) are kept where no order can undo them: a label pair
    # decided by more than E, a difference past eps + 2E (kinds/forest_margin); else unknown
    return by_margin(prop, ctx, lambda p: _flips(p, ctx, progress)) or _flips(prop, ctx, progress)


def _flips(prop, ctx, progress):
    from fairspec import ir
    from fairspec.backends.data.flips import run_flips
    from fairspec.planning import setting
    from fairspec.verdict import unknown

    if prop.kind == "individual_fairness" and prop.post in ir.MULTI_POSTS:  # issue 25: flips compare the binary decision only, for now
        return unknown(prop, f"the post-condition '{prop.post}' (issue 25: multiclass and regression "
                             f"outputs) is not yet decided by the data backend", backend="data", seconds=0.0)
    v = run_flips(prop, ctx, progress, timeout=setting(prop, "timeout", "data"))
    if v.status == "violated" and v.witness is not None:
        from fairspec.kinds.pre_relax import with_categories
        from fairspec.kinds.shared_codes import shared_columns

        if shared_columns(ctx.encoding(prop.model)):       # categories sharing a code: the pair as the property's
            v = with_categories(prop, ctx, v)
    return v
