"""Rendering check reports: a terminal table (rich) or one JSON object."""

from __future__ import annotations

import json

from fairspec.diagnostics import render_full


def to_json(report) -> str:
    return json.dumps(report.to_json(), indent=2, default=_default)


def _default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


_KIND = {"group_metric": "group", "individual_fairness": "individual", "k_discrimination": "k-discr.",
         "pba": "pba", "repair": "repair"}
_STYLE = {"holds": "green", "violated": "bold red", "unknown": "yellow"}


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def print_text(report, console) -> None:
    from rich.table import Table

    for d in report.diagnostics:
        console.print(render_full(d), markup=False, highlight=False)
    if report.error:
        console.print(f"error: {report.error}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return
    if not report.verdicts:
        return
    table = Table(title=f"fairspec check {report.spec}", title_justify="left")
    # a property name is never broken across lines (the other columns wrap first)
    longest = max(len(v.name) for v in report.verdicts)
    for col, kw in (("property", {"no_wrap": True, "min_width": longest}), ("kind", {}), ("verdict", {"no_wrap": True}),
                    ("value", {"justify": "right", "no_wrap": True}), ("interval", {"justify": "right", "no_wrap": True}),
                    ("backend", {}), ("time", {"justify": "right", "no_wrap": True})):
        table.add_column(col, **kw)
    for v in report.verdicts:
        bound = f"[{v.bound[0]:.4g}, {v.bound[1]:.4g}]" if v.bound else ""
        table.add_row(v.name, _KIND.get(v.kind, v.kind), f"[{_STYLE[v.status]}]{v.label}[/]", _fmt(v.value), bound,
                      v.backend or "", f"{v.seconds:.2f}s")
    console.print(table)
    for v in report.verdicts:
        lines = []
        if v.reason:
            lines.append(v.reason)
        wp = v.details.get("worst_pair") if v.details else None
        if wp and v.status == "unknown" and "lowest" not in (v.reason or ""):
            lines.append(f"(lowest {wp['low']} {wp['low_rate']:.4f}; highest {wp['high']} {wp['high_rate']:.4f})")
        if lines or v.witness:
            console.print(f"[bold]{v.name}[/]: " + " ".join(lines), highlight=False)
        if v.witness:
            _print_witness(v.witness, console)
        if v.kind == "group_metric" and v.details and v.details.get("groups"):
            _print_groups(v, console)
        if v.kind == "repair" and v.details and v.details.get("pairs_before"):
            _print_repair(v, console)
        if v.kind == "pba" and v.details and v.details.get("table"):
            try:
                from fairspec.backends.pba import render_table

                render_table(v.details["table"], console)
            except Exception as e:  # noqa: BLE001 - a table is a courtesy; the verdict stands
                console.print(f"(pba table not shown: {e})", markup=False)
        if v.details and v.details.get("explanation"):
            console.print(v.details["explanation"], markup=False, highlight=False)
            if v.details.get("guardrail"):
                console.print("guardrail pre-condition:\n" + v.details["guardrail"], markup=False, highlight=False)
    for w in report.warnings:
        console.print(f"warning: {w}", style="yellow", markup=False, highlight=False)
    if report.loads:
        parts = ", ".join(f"{x['what']} {x['name']} {x['seconds']:.2f}s" for x in report.loads)
        console.print(f"loaded (not counted in the properties' times): {parts}", style="dim", markup=False,
                      highlight=False)


# the per-group table's columns, in order: key -> title
GROUP_COLUMNS = {"rows": "rows", "weight": "weight", "positives": "positives", "label_positives": "label = 1",
                 "positive_rate": "positive rate", "base_rate": "base rate", "tpr": "TPR", "fpr": "FPR",
                 "fnr": "FNR", "tnr": "TNR", "ppv": "PPV", "fdr": "FDR", "npv": "NPV", "for": "FOR",
                 "error_rate": "error rate", "accuracy": "accuracy", "benefit": "mean benefit", "ece": "ECE",
                 "impact_ratio": "impact ratio"}


def group_columns(v) -> list[tuple[str, str]]:
    """(key, title) of the per-group table of a group-metric verdict: the counts, then the rates used."""
    rows = v.details["groups"]
    used = v.details.get("rates")  # the data backend names the rates its metric compares
    keep = None if used is None else {"rows", "weight", "positives", "positive_rate", *used}
    cols = [(k, t) for k, t in GROUP_COLUMNS.items() if any(k in r for r in rows) and (keep is None or k in keep)]
    rate = v.details.get("rate")  # impact_ratio (NYC LL 144): a selection or a scoring rate
    if rate:
        words = {"rows": "applicants", "positives": "selected" if rate == "selection" else "scored above median",
                 "positive_rate": f"{rate} rate"}
        cols = [(k, words.get(k, t)) for k, t in cols]
    if v.backend != "data":  # over a distribution, Justicia's PPV is the positive rate Pr[decision = 1 | group]
        cols = [(k, "positive rate" if k == "ppv" else t) for k, t in cols]
    return cols


def cell_text(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.4f}" if abs(x) < 1000 else f"{x:,.0f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _print_repair(v, console) -> None:
    """A repair's numbers: every pair's ratio before and after, then the change it made."""
    from rich.table import Table

    d = v.details
    after = {tuple(p["groups"]): p["ratio"] for p in d.get("pairs_after", [])}
    t = Table(title=f"{v.name}: passing-rate ratio per pair ({d.get('groups_label', 'groups')}, c = {d['c']:g})",
              title_justify="left")
    for col in ("pair", "before", "after"):
        t.add_column(col, justify="left" if col == "pair" else "right", overflow="fold")
    for p in d["pairs_before"]:
        t.add_row(" / ".join(p["groups"]), cell_text(p["ratio"]), cell_text(after.get(tuple(p["groups"]))))
    console.print(t)
    facts = [f"minimal (LP) {cell_text(d.get('minimal'))}"]
    if d.get("repaired"):
        facts += [f"achieved {cell_text(d.get('achieved'))} (<= {d['alpha']:g} x minimal)",
                  f"rows changed {cell_text(d.get('rows_changed'))} of {cell_text(d.get('rows'))}",
                  f"paths flipped {d.get('paths_flipped')}, refined {d.get('paths_refined')}",
                  f"accuracy {cell_text(d.get('accuracy_before'))} -> {cell_text(d.get('accuracy_after'))}",
                  f"written {d.get('written') or '(not written)'}"]
    facts.append(f"solver {d.get('solver')} {cell_text(d.get('solver_seconds'))}s")
    console.print("  " + "; ".join(facts), markup=False, highlight=False)


def _print_groups(v, console) -> None:
    from rich.table import Table

    d = v.details
    cols = group_columns(v)
    title = f"{v.name}: per group ({d.get('groups_label', 'groups')}"
    if d.get("weight"):
        title += f", weighted by {d['weight']}"
    t = Table(title=title + ")", title_justify="left")
    t.add_column("group", overflow="fold")
    for _, title in cols:
        t.add_column(title, justify="right")
    counted = any("counted" in r for r in d["groups"])
    if counted:
        t.add_column("counted")
    for r in d["groups"]:
        extra = [("excluded" if r.get("excluded") else cell_text(r["counted"]))] if counted else []
        t.add_row(str(r["group"]), *(cell_text(r.get(k)) for k, _ in cols), *extra)
    if d.get("overall"):
        t.add_row("all rows", *(cell_text(d["overall"].get(k)) for k, _ in cols), *([""] if counted else []),
                  style="dim")
    console.print(t)
    if d.get("excluded_groups"):
        listed = ", ".join(f"{g['group']} ({g['rows']} rows, {g['share']:.2%})" for g in d["excluded_groups"])
        console.print(f"excluded (under {v.details.get('exclude_below', 0):.0%} of the rows): {listed}",
                      markup=False, highlight=False)


def _print_witness(w, console) -> None:
    from rich.table import Table

    t = Table(title="witness (replayed by " + (w.replayed_by or "the model") + ")", title_justify="left")
    t.add_column("feature")
    t.add_column("x")
    t.add_column("x'")
    for k in w.features:
        a, b = w.features[k], w.features_prime.get(k)
        style = "bold" if a != b else ""
        t.add_row(k, str(a), str(b), style=style)
    if w.outputs:
        t.add_row("model output", f"{w.outputs[0]:.6g}", f"{w.outputs[1]:.6g}", style="cyan")
    console.print(t)
