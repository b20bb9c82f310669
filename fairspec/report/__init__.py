"""Rendering check reports: a terminal table (rich) or one JSON object.

The text report prints every value from data, models or specs as text, never as markup: each
one is a rich ``Text`` made by :func:`value` (one line) or :func:`prose` (a reason), through
the one sanitiser :func:`fairspec.diagnostics.visible.visible`, so a category
``[bold green]holds (proved)[/]`` prints as written and an ESC sequence shows as ``\\x1b``.
:func:`console` is the Console every command prints with: markup off, and every string it is
given made visible too (a writer that forgets still cannot pass a control character through).
"""

from __future__ import annotations

import json

from fairspec.diagnostics import render_full
from fairspec.diagnostics.visible import json_text, visible, visible_value
from fairspec.syntax import literals as _literals  # a witness's values as the spec writes them
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


def value(x, style: str = ""):
    """A value (a name, a category, a number) as rich Text on one line: no markup, no control character."""
    from rich.text import Text

    return Text(visible_value("" if x is None else x), style=style)


def prose(x, style: str = ""):
    """A reason, a warning, an explanation as rich Text: no markup, control characters visible, lines kept."""
    from rich.text import Text

    return Text(visible("" if x is None else x), style=style)


def say(console, text, style: str = "") -> None:
    """Print a sentence that may quote a user's value (a reason, an error, a warning) as one line:
    its line breaks shown as ``\\n`` (:func:`value`) and never wrapped at the console's width (the
    terminal wraps it), so a category ``"a\\n::error file=x::..."`` or ``"b ::error::..."`` cannot
    start a line of its own, which a CI log reads as a workflow command (GitHub's runner strips
    leading whitespace before it looks for ``::``, so an indented line would not be safe)."""
    console.print(text if not isinstance(text, str) else value(text, style), soft_wrap=True)


def console(stderr: bool = False, **kw):
    """The Console fairspec prints with: markup and highlighting off, every string made visible."""
    from rich.console import Console

    class _VisibleConsole(Console):
        def render_str(self, text, **kwargs):  # every str printed or put in a table passes here
            kwargs["markup"] = False
            return super().render_str(visible(text), **kwargs)

    kw.setdefault("markup", False)
    kw.setdefault("highlight", False)
    return _VisibleConsole(stderr=stderr, **kw)


def to_json(report) -> str:
    return dumps(report.to_json())


def dumps(doc) -> str:
    """``doc`` as strict JSON (RFC 8259; jq, JSON.parse, serde read it): every value through :func:`plain`,
    so no ``NaN`` or ``Infinity`` token is ever written; a value's ``##[`` is written ``##\\u005b``
    (fairspec.diagnostics.visible.json_text: a CI log reads no legacy workflow command in it)."""
    return json_text(json.dumps(plain(doc), indent=2, allow_nan=False))


def plain(x):
    """A value as strict JSON holds it: a NaN or an infinity is null (as a rate with no rows is; a typed
    reader takes number-or-null, not a string in a number's place), numpy scalars and arrays are
    numbers and lists, tuples and sets lists, keys JSON can not hold strings; anything else its text."""
    import math

    if x is None or isinstance(x, (str, bool, int)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k if isinstance(k, (str, int, bool)) or k is None or (isinstance(k, float) and math.isfinite(k))
                else str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [plain(v) for v in x]
    if type(x).__module__ == "numpy":  # without importing numpy: a report may hold none of it
        return plain(x.tolist() if hasattr(x, "tolist") else x.item())
    return str(x)


_KIND = {"group_metric": "group", "individual_fairness": "individual", "k_discrimination": "k-discr.",
         "pba": "pba", "repair": "repair"}
_STYLE = {"holds": "green", "violated": "bold red", "unknown": "yellow"}


def value_text(v, style: str = "g") -> str:
    """A verdict's value as every report prints it: 4 significant digits ("g") or decimals ("f"), more
    where fewer would move it onto or across a threshold of its claim (``literals.shown``: a violated
    ``>= 0.8`` at 0.79996 is never "0.8"); "" for none."""
    if v.value is None:
        return ""
    return _literals.shown(v.value, v.thresholds, style=style, exact=(v.details or {}).get("exact_value"))


def bound_texts(v, style: str = "g") -> tuple[str, str] | None:
    """A verdict's interval's ends as every report prints them: rounded outward (the lower end down,
    the upper up) and kept on their side of each threshold of the claim (``literals.shown``)."""
    if v.bound is None:
        return None
    d = v.details or {}
    ends = d.get("exact_bound")     # the ends' exact values (a PBA share's "1/3"), else the value's for either
    ends = ends if isinstance(ends, (list, tuple)) and len(ends) == 2 else (d.get("exact_value"),) * 2
    return tuple(_literals.shown(x, v.thresholds, end=end, style=style, exact=e)
                 for x, end, e in zip(v.bound, ("low", "high"), ends))


def print_text(report, console) -> None:
    from rich.text import Text

    for d in report.diagnostics:  # whole lines: a hint's spec fragment is never broken (soft_wrap)
        console.print(render_full(d), markup=False, highlight=False, soft_wrap=True)
    if report.error:
        say(console, f"error: {report.error}", "bold red")
        return
    if not report.verdicts:  # (a spec that states no property is report.error: fairspec.pipeline.nothing_to_check)
        return
    _print_summary(report, console)
    for v in report.verdicts:
        lines = []
        if v.reason:
            lines.append(v.reason)
        pair = worst_pair_text(v)
        if pair:
            lines.append(f"({pair})")
        shares = ((v.details or {}).get("coverage") or {}).get("shares")
        if shares and shares.get("summary"):
            if lines and not lines[-1].rstrip().endswith((".", "!", "?")):
                lines[-1] = lines[-1].rstrip() + "."
            lines.append(f"Shares: {shares['summary']}.")
            est = shares.get("estimate")
            if isinstance(est, dict) and est.get("summary"):
                lines.append(f"Estimate: {est['summary']}.")
        notes = verdict_notes(v)
        if lines or v.witness or notes:
            say(console, Text.assemble(value(v.name, "bold"), ":", value(" " + " ".join(lines) if lines else "")))
        for n in notes:  # one line each, under the verdict: what the run did not read or could not decide
            say(console, Text.assemble("  note: ", value(n)))
        if v.witness:
            _print_witness(v.witness, console, output_row(v))
        if v.kind == "group_metric" and v.details and v.details.get("groups"):
            _print_groups(v, console)
        if v.kind == "repair" and v.details and v.details.get("pairs_before"):
            _print_repair(v, console)
        if v.kind == "pba" and v.details and v.details.get("table"):
            try:
                from fairspec.backends.pba import render_table

                for flip, table in pba_tables(v.details["table"]):  # one per flipped feature (kinds/pba)
                    render_table(table, console, thresholds=v.thresholds,
                                 **({"title": f"PBA fairness (flip {flip})"} if flip else {}))
            except Exception as e:  # noqa: BLE001 - a table is a courtesy; the verdict stands
                say(console, f"(pba table not shown: {e})")
        if v.details and v.details.get("explanation"):  # spec text (paths, the guardrail): printed whole,
            console.print(prose(v.details["explanation"]), soft_wrap=True)  # never wrapped at the width
            if v.details.get("guardrail"):
                console.print(prose("guardrail pre-condition:\n" + v.details["guardrail"]), soft_wrap=True)
    for w in report.warnings:
        say(console, f"warning: {w}", "yellow")
    n = getattr(report, "n_suppressed", 0)
    if n:  # acknowledged, not hidden: say how many
        say(console, f"{n} warning{'s' * (n != 1)} suppressed (# fairspec: ignore[...] comments, --ignore)", "dim")
    if report.loads:
        parts = ", ".join(f"{x['what']} {x['name']} {x['seconds']:.2f}s{rounds_note(x)}" for x in report.loads)
        say(console, f"loaded (not counted in the properties' times): {parts}", "dim")


def worst_pair_text(v) -> str | None:
    """An unknown group metric's lowest and highest groups (``lowest A 0.49; highest B 0.56``) when its reason does
    not name them: the text report printed them, SARIF, GitHub and the HTML did not."""
    wp = (v.details or {}).get("worst_pair")
    if not wp or v.status != "unknown" or "lowest" in (v.reason or ""):
        return None
    lo_text, hi_text = pair_texts(v, wp)
    return f"lowest {wp['low']} {lo_text}; highest {wp['high']} {hi_text}"


def pba_tables(table) -> list[tuple[str | None, dict]]:
    """A PBA verdict's ``details["table"]``: one aggregate, or one per flipped feature ``{flip: aggregate}``
    (kinds/pba, several flips), as (flip, aggregate) pairs.  The text report read the second as one aggregate and
    printed "(pba table not shown: 'rows')"."""
    if isinstance(table, dict) and "rows" not in table:
        return [(str(k), t) for k, t in table.items() if isinstance(t, dict)]
    return [(None, table)]


def excluded_texts(d: dict, unit: str = "rows") -> tuple[str, list[str]]:
    """The groups ``exclude_below`` left out, as every report prints them: the option as a percentage as the spec
    writes it (0.005: "0.5%", 0.025: "2.5%"; ``:.0%`` printed "0%" and "2%") and each group's share on its side of
    it (a group of 19,999 rows in 10^6 under 0.02 is "1.9999%", never "2.00%")."""
    from fractions import Fraction

    try:
        t = Fraction(repr(float(d.get("exclude_below") or 0))) * 100
    except (TypeError, ValueError, OverflowError):
        t = None
    n = d.get("rows")

    def share(g) -> str:
        exact = Fraction(int(g["rows"]), int(n)) * 100 if isinstance(n, int) and n > 0 else None
        return _literals.shown(100 * float(g["share"]), [t] if t is not None else (), digits=2, style="f",
                               exact=exact) + "%"

    below = f"{_literals.number(float(t))}%" if t is not None else str(d.get("exclude_below"))
    return below, [f"{g['group']} ({g['rows']:,} {unit}, {share(g)})" for g in d["excluded_groups"]]


def verdict_notes(v) -> list[str]:
    """The notes a backend left on a verdict (``details.notes``: an option with no effect here, points
    left unknown; ``details.distribution.notes``: a table row the network does not use), in order,
    for the text and HTML reports (JSON carries them in ``details`` as they are)."""
    d = v.details or {}
    dist = d.get("distribution")
    found = [*(d.get("notes") or ()), *((dist.get("notes") or ()) if isinstance(dist, dict) else ())]
    return [str(n) for n in found if n]


def rounds_note(load: dict) -> str:
    """' (rounds 0 .. 2 of the 6 recorded: rounds = best)' for a load entry of a model evaluated on
    fewer boosting rounds than it records (early stopping); '' otherwise."""
    r = load.get("rounds")
    if not isinstance(r, dict):
        return ""
    return f" (rounds 0 .. {r['used'] - 1} of the {r['recorded']} recorded: {r['chosen_by']})"


_SUMMARY = ("property", "kind", "verdict", "value", "interval", "backend", "time")


def _print_summary(report, console) -> None:
    """The table of verdicts, fitted to the console without hiding a column or cutting a value (rich
    squeezed the kind and the backend to nothing and cut the rest with an ellipsis): every column at
    least as wide as its header and its longest word (a name, a value and a time never broken), the
    rest of the width to the verdict, the interval, the kind and the backend, which wrap at their
    spaces.  On a console too narrow for that, one block per property."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    from fairspec.diagnostics import cell_len

    rows = [(v, [visible_value(x) for x in (v.name, _KIND.get(v.kind, v.kind), v.label, value_text(v),
                                            "[{}, {}]".format(*bound_texts(v)) if v.bound else "",
                                            v.backend or "", f"{v.seconds:.2f}s")])
            for v in report.verdicts]
    whole = {0, 3, 6}  # property, value, time: never broken
    longest = [max(cell_len(r[i]) for _, r in rows) for i in range(7)]
    word = [max((cell_len(w) for _, r in rows for w in r[i].split()), default=0) for i in range(7)]
    least = [max(cell_len(h), longest[i] if i in whole else word[i]) for i, h in enumerate(_SUMMARY)]
    widths, spare = list(least), console.width - sum(least) - 3 * len(least) - 1  # padding and rules
    # the title names the spec's path, which may hold a user's text: one line, never wrapped (say)
    say(console, f"fairspec check {report.spec}")
    if spare < 0:
        for v, r in rows:
            facts = " · ".join(x for x in (r[1], f"value {r[3]}" if r[3] else "", f"interval {r[4]}" if r[4] else "",
                                           r[5], r[6]) if x)
            console.print(Text.assemble(Text(r[0], style="bold"), ": ", Text(r[2], style=_STYLE[v.status])),
                          soft_wrap=True)
            console.print(Padding(Text(facts), (0, 0, 0, 2)))
        return
    for i in (2, 4, 1, 5):  # while there is room: the verdict, the interval, the kind, the backend on one line
        grow = max(0, min(spare, longest[i] - widths[i]))
        widths[i], spare = widths[i] + grow, spare - grow
    table = Table()
    for i, col in enumerate(_SUMMARY):
        table.add_column(col, width=widths[i], overflow="fold", no_wrap=i in whole,
                         justify="right" if col in ("value", "interval", "time") else "left")
    for v, r in rows:
        table.add_row(*(Text(x, style=_STYLE[v.status] if i == 2 else "") for i, x in enumerate(r)))
    console.print(table)


# the per-group table's columns, in order: key -> title
GROUP_COLUMNS = {"rows": "rows", "weight": "weight", "positives": "positives", "label_positives": "label = 1",
                 "positive_rate": "positive rate", "base_rate": "base rate", "tpr": "TPR", "fpr": "FPR",
                 "fnr": "FNR", "tnr": "TNR", "ppv": "PPV", "fdr": "FDR", "npv": "NPV", "for": "FOR",
                 "error_rate": "error rate", "accuracy": "accuracy", "benefit": "mean benefit", "ece": "ECE",
                 "impact_ratio": "impact ratio",
                 # issue 25: multiclass (predicted class shares, confusion matrix true x predicted) and
                 # regression (per-group means of the prediction and of its errors) metrics
                 "class_shares": "predicted class shares", "class_tprs": "TPR per class",
                 "class_fprs": "FPR per class", "confusion_matrix": "confusion (true x predicted)",
                 "mean_prediction": "mean prediction", "mean_error": "mean error", "mae": "MAE", "rmse": "RMSE",
                 "loss": "mean loss"}


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
    decision, truth = v.details.get("decision"), v.details.get("truth")
    if decision:            # class = c / threshold = t: what the counts are ('predicted "C"', 'grade is "C"')
        words = {"positives": decision, **({"label_positives": truth} if truth and truth != "label" else {})}
        cols = [(k, words.get(k, t)) for k, t in cols]
    return cols


def cell_text(x, thresholds=()) -> str:
    """A table cell: a float with 4 decimals, and more where 4 would put it on another side of one of
    ``thresholds`` (the claim's, ``Verdict.thresholds``; a repair's goal) than it is, or on one it is not
    on (``literals.shown``): a ratio of 0.79996 against ``>= 0.8`` prints 0.79996, never 0.8000."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if x != x or abs(x) >= 1000:
            return f"{x:,.0f}" if x == x and abs(x) != float("inf") else f"{x:.4f}"
        return _literals.shown(x, thresholds, style="f", exact=repr(float(x)))  # a rate: its shortest decimal
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def repair_thresholds(v) -> tuple:
    """What a repair's ratios are printed against: its goal ``c`` and the claim's thresholds."""
    c = (v.details or {}).get("c")
    return (*v.thresholds, *(() if c is None else (c,)))


def pair_texts(v, wp: dict) -> tuple[str, str]:
    """The worst pair's rates (lowest, highest) as the reports print them (``literals.shown_pair``): each on
    its side of the claim's thresholds, and their printed difference and ratio on the side of each that the
    rates' own are on (rates 0.30004 and 0.2 against ``<= 0.1`` never print as 0.3000 and 0.2000)."""
    lo, hi = wp.get("low_rate"), wp.get("high_rate")
    if not all(isinstance(x, float) and abs(x) < 1000 for x in (lo, hi)):
        return cell_text(lo, v.thresholds), cell_text(hi, v.thresholds)
    return _literals.shown_pair(lo, hi, v.thresholds)


def _minimal_achieved(d: dict) -> tuple[str, str]:
    """A repair's ``minimal`` and ``achieved`` semantic differences as printed beside "(<= alpha x minimal)":
    4 decimals, or as many more as it takes for the printed pair to meet (or miss) that bound as the
    numbers do (``literals.shown_scaled``)."""
    m, a = d.get("minimal"), d.get("achieved")
    if not all(isinstance(x, float) and abs(x) < 1000 for x in (m, a)):
        return cell_text(m), cell_text(a)
    return _literals.shown_scaled(m, a, d.get("alpha"))


def _print_repair(v, console) -> None:
    """A repair's numbers: every pair's ratio before and after, then the change it made."""
    from rich.table import Table

    d = v.details
    after = {tuple(p["groups"]): p["ratio"] for p in d.get("pairs_after", [])}
    t = Table(title=value(f"{v.name}: passing-rate ratio per pair ({d.get('groups_label', 'groups')}, c = {_spec_number(d['c'])})"),
              title_justify="left")
    for col in ("pair", "before", "after"):
        t.add_column(col, justify="left" if col == "pair" else "right", overflow="fold")
    goal = repair_thresholds(v)
    for p in d["pairs_before"]:
        t.add_row(value(" / ".join(map(str, p["groups"]))), value(cell_text(p["ratio"], goal)),
                  value(cell_text(after.get(tuple(p["groups"])), goal)))
    console.print(t)
    minimal, achieved = _minimal_achieved(d)
    facts = [f"minimal (LP) {minimal}"]
    if d.get("repaired"):
        facts += [f"achieved {achieved} (<= {_spec_number(d['alpha'])} x minimal)",
                  f"rows changed {cell_text(d.get('rows_changed'))} of {cell_text(d.get('rows'))}",
                  f"paths flipped {d.get('paths_flipped')}, refined {d.get('paths_refined')}",
                  f"accuracy {cell_text(d.get('accuracy_before'))} -> {cell_text(d.get('accuracy_after'))}",
                  f"written {d.get('written') or '(not written)'}"]
    facts.append(f"solver {d.get('solver')} {cell_text(d.get('solver_seconds'))}s")
    say(console, "  " + "; ".join(facts))


def _print_groups(v, console) -> None:
    from rich.table import Table

    d = v.details
    cols = group_columns(v)
    title = f"{v.name}: per group ({d.get('groups_label', 'groups')}"
    if d.get("weight"):
        title += f", weighted by {d['weight']}"
    t = Table(title=value(title + ")"), title_justify="left")
    t.add_column("group", overflow="fold")
    for _, title in cols:
        t.add_column(value(title), justify="right", overflow="fold")  # a narrow terminal folds, never cuts
    counted = any("counted" in r for r in d["groups"])
    if counted:
        t.add_column("counted", overflow="fold")
    for r in d["groups"]:
        extra = [("excluded" if r.get("excluded") else cell_text(r["counted"]))] if counted else []
        t.add_row(value(r["group"]), *(value(cell_text(r.get(k), v.thresholds)) for k, _ in cols), *map(value, extra))
    if d.get("overall"):
        t.add_row(value("all rows"), *(value(cell_text(d["overall"].get(k), v.thresholds)) for k, _ in cols),
                  *([value("")] if counted else []), style="dim")
    console.print(t)
    if d.get("excluded_groups"):
        below, listed = excluded_texts(d)
        say(console, f"excluded (under {below} of the rows): {', '.join(listed)}")
    if d.get("rows_missing"):
        say(console, f"{d['rows_missing']:,} rows with a missing value in a column the spec reads were dropped "
                     f"(in no group and no rate)")
    if d.get("rows_outside"):
        say(console, f"{d['rows_outside']:,} rows outside a declared domain of the features were dropped "
                     f"(in no group and no rate; FS410)")


def output_row(v) -> str:
    """The witness table's output row: "model output", with the class it shows where a `forall c`
    verdict names one (``details.class``: the class whose probabilities the outputs are)."""
    c = (v.details or {}).get("class")
    return "model output" if isinstance(c, bool) or not isinstance(c, int) or v.witness.output_labels is not None \
        else f"model output (class {c})"


def witness_text(features: dict, x=()) -> str:
    """One side of a witness as spec text (a line of SARIF, an annotation, a pytest failure): the
    spec's map literal ``{age: 69, sex: M}`` (booleans ``true``, categories quoted where the grammar
    needs it), or the model-input vector as a list literal when the pair has no spec-level reading."""
    return _literals.point(features) if features else _literals.vector(x)


def _print_witness(w, console, row: str = "model output") -> None:
    from rich.table import Table

    t = Table(title=value("witness (replayed by " + (w.replayed_by or "the model") + ")"), title_justify="left")
    for col in ("feature", "x", "x'"):  # a narrow terminal folds a long value, never cuts it
        t.add_column(col, overflow="fold")
    for k in w.features:
        a, b = w.features[k], w.features_prime.get(k)
        style = "bold" if a != b else ""
        t.add_row(value(k), value(_literals.value(a)), value(_literals.value(b)), style=style)
    if w.outputs:
        a, b = w.output_texts()
        t.add_row(value(row), value(a), value(b), style="cyan")
    console.print(t)
