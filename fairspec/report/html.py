"""`fairspec check spec.fair --html report.html`: one self-contained HTML report.

Plots are inlined as SVG: a group metric's charts (one a property) written by hand
(fairspec.report.svg_charts: ~3 KB each and no layout engine, so 1,000 properties stay a few
seconds and megabytes), the rarer ones (influence, repair, shares, PBA) drawn by matplotlib.
Chosen over Vega-Lite (altair) because a static SVG needs no script at view time: the file opens
offline, with JavaScript off, in a mail client or an archive, prints as vectors at any size, and
cannot fail with a console error; Vega-Lite would need ~1 MB of JavaScript inlined into every
report and renders only once that script runs.  matplotlib is imported in fairspec.report.charts only (the `report` extra).

The page: a summary of the verdicts, then one ``<section class="property"
data-property=NAME>`` per property with the picture that fits its kind:

* group metrics on data: the per-group rates the metric compares as bars with their
  bootstrap intervals and the threshold drawn in, beside the metric's own interval against
  the threshold; calibration: each group's reliability curve; the entropy indices: each
  group's mean benefit; then the per-group table (rows, positives, rates);
* group metrics over a distribution: the positive rate per group; fairness influence:
  |FIF| per feature subset as sorted bars with the threshold;
* PBA: the verified shares, observed and flipped (the PBA backend's own chart);
* k-discrimination: the explanation tree and the guardrail pre-condition;
* individual fairness: the witness pair as a table, the features that differ first; with
  partitions, the certified / falsified / undecided shares of the domain (a stacked bar and
  the exact fractions);
* repair: the passing-rate ratio of every pair of groups before and after, with the goal.

No script, no external resource (fonts, styles and images are all inline), a print
stylesheet (black on white, sections not split across pages).
"""

from __future__ import annotations

import datetime as _dt
import html
from dataclasses import replace
from pathlib import Path

from fairspec.diagnostics.visible import visible, visible_value
from fairspec.report import (bound_texts, cell_text, charts, excluded_texts, group_columns, output_row, pair_texts,
                             pba_tables, rounds_note, svg_charts, value_text, verdict_notes, worst_pair_text)
from fairspec.syntax import literals
from fairspec.report.target import ReportWriteError, check_path, html_roots  # noqa: F401 (the command line's names)

def _e(x) -> str:
    """Text fairspec did not write (a name, a reason, a path, an error) as HTML: control characters and
    the bidirectional controls shown as escapes (``\\u202e``), as the text report shows them
    (fairspec.diagnostics.visible), so a category ``"\\u202eevil"`` reads as written and cannot
    reverse the line it is on; then HTML-escaped.  Line breaks kept (a ``<pre>`` shows them)."""
    return html.escape(visible("" if x is None else x))


def _v(x) -> str:
    """A value (a group, a category, a witness's feature value) as HTML on one line: :func:`_e` with
    line breaks shown as ``\\n`` too."""
    return html.escape(visible_value("" if x is None else x))


# ------------------------------------------------------------------ writing
# where the report may go (ReportWriteError, check_path: fairspec.report.target)

def write(report, path, *, keep: tuple = ()) -> Path:
    """Render the report and write it to ``path`` atomically (a temporary file in the same folder,
    then renamed).  Refuses to write over the spec or any file in ``keep`` or ``report.reads``
    (its imports, models and data)."""
    return _write(lambda: render(report), path, (report.spec, *keep, *getattr(report, "reads", ())))


def write_models(reports, path, *, keep: tuple = ()) -> Path:
    """``check --models``: one HTML file for all the model files (see :func:`render_models`)."""
    files = tuple(f for f, _ in reports if f)
    specs = tuple(r.spec for _, r in reports)
    reads = tuple(x for _, r in reports for x in getattr(r, "reads", ()))
    return _write(lambda: render_models(reports), path, (*specs, *files, *keep, *reads))


def _write(render_text, path, keep: tuple) -> Path:
    """Through the one writer (fairspec.files.safe_write): atomic, never onto a folder, a device or a
    pipe (``--html /dev/null`` is refused, not replaced), never onto a symbolic link, never over a
    file the spec reads, no temporary file left behind.  ``--html FILE`` is the user's own choice on
    the command line, so the roots are the file's own folder (the spec's confinement is for paths a
    spec names; fairspec.report.target)."""
    from fairspec.files import PathError, safe_write

    check_path(path, keep)
    try:
        text = render_text()
        return safe_write(path, text.encode("utf-8", "backslashreplace"), html_roots(path), protect=keep,
                          what="HTML report")
    except PathError as e:
        raise ReportWriteError(f"cannot write the HTML report: {e}") from None


def render(report) -> str:
    e = _e
    parts = [_HEAD.format(title=e(f"fairspec report: {Path(report.spec).name}"), css=_CSS + svg_charts.CSS)]
    when = _when([report])
    parts.append(f"<header><h1>fairspec check <code>{e(str(report.spec))}</code></h1>"
                 f"<p class=meta>{when} &middot; exit code {report.exit_code} ({e(_EXIT.get(report.exit_code, 'interrupted'))}) "
                 f"&middot; {report.seconds:.1f} s</p></header>")
    parts.append(_summary(report))
    parts.append(_ll144(report))
    parts += _body(report)
    parts.append("</main></body></html>\n")
    return "".join(parts)


def _when(reports) -> str:
    """The header's time: when the check ran (the report's ``started``, the provenance's ``checked_at``),
    and when this page was rendered if that is another minute (``Result.to_html()`` called later; it
    showed only the render time, which an auditor read as the check's). Without ``started``: the render time."""
    def fmt(t):
        return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    now = fmt(_dt.datetime.now(_dt.timezone.utc))
    started = sorted({fmt(r.started) for r in reports if isinstance(getattr(r, "started", None), _dt.datetime)})
    if not started:
        return f"rendered {now}"
    ran = started[0] if len(started) == 1 else f"{started[0]} to {started[-1]}"
    return f"checked {ran}" + ("" if started[-1] == now and len(started) == 1 else f" &middot; rendered {now}")


def render_models(reports) -> str:
    """``check --models``: one page for several model files: a table of every property's verdict
    per model file (the comparison of candidate models), then each file's report in file order."""
    e = _e
    spec = reports[0][1].spec if reports else ""
    parts = [_HEAD.format(title=e(f"fairspec report: {Path(spec).name}, {len(reports)} model files"),
                          css=_CSS + svg_charts.CSS)]
    when = _when([r for _, r in reports])
    codes = [r.exit_code for _, r in reports]
    code = next((c for c in (130, 143, 2, 4, 1, 3) if c in codes), 0)
    parts.append(f"<header><h1>fairspec check <code>{e(str(spec))}</code> over {len(reports)} model files</h1>"
                 f"<p class=meta>{when} &middot; exit code {code} ({e(_EXIT.get(code, 'interrupted'))})</p></header>")
    names = []
    for _, r in reports:
        for v in r.verdicts:
            if v.name not in names:
                names.append(v.name)
    head = "".join(f"<th>{_v(n)}</th>" for n in names)
    rows = []
    for k, (f, r) in enumerate(reports):
        by = {v.name: (i, v) for i, v in enumerate(r.verdicts)}
        cells = []
        for n in names:
            if n not in by:
                cells.append("<td></td>")
                continue
            i, v = by[n]
            value = "" if v.value is None else f" {_v(value_text(v))}"
            cells.append(f"<td class='{v.status}'><a href='#m{k}p{i}'>{e(v.label)}</a>{value}</td>")
        err = f"<td class=error>{e(r.error)}</td>" if r.error else ""
        rows.append(f"<tr><td><a href='#m{k}'><code>{e(Path(f).name if f else str(spec))}</code></a></td>"
                    + "".join(cells) + err + "</tr>")
    parts.append("<main><section id=summary><h2>Model files</h2><table><thead><tr><th>model file</th>"
                 f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></section>")
    for k, (f, r) in enumerate(reports):
        parts.append(f"<section class=model id='m{k}' data-model-file='{e(str(f))}'><h2>model file "
                     f"<code>{e(str(f))}</code> &middot; exit code {r.exit_code}</h2>")
        parts += _body(r, prefix=f"m{k}")
        parts.append("</section>")
    parts.append("</main></body></html>\n")
    return "".join(parts)


def _body(report, prefix: str = "") -> list[str]:
    """The sections of one report after its summary: error, diagnostics, properties, warnings, loads."""
    e = _e
    parts = []
    if report.error:
        parts.append(f"<section id={prefix}error><h2>Error</h2><p class=error>{e(report.error)}</p></section>")
    if report.diagnostics:
        items = "".join(f"<li><code>{e(d.code)}</code> {e(d.severity)}: {e(d.message)}"
                        f"{' (' + e(d.span.file) + ':' + str(d.span.line) + ')' if d.span else ''}</li>"
                        for d in report.diagnostics)
        parts.append(f"<section id={prefix}diagnostics><h2>Diagnostics</h2><ul>{items}</ul></section>")
    claims = getattr(report, "claims", {})
    for i, v in enumerate(report.verdicts):
        op, t = claims.get(v.name, (None, None))
        if t is not None:  # the claim's threshold, for the pictures
            v = replace(v, details={**(v.details or {}), "threshold": t, "op": op})
        parts.append(_property(v, i, prefix, getattr(report, "options", {}).get(v.name)))
    if report.warnings:
        items = "".join(f"<li>{e(w)}</li>" for w in report.warnings)
        parts.append(f"<section id={prefix}warnings><h2>Warnings</h2><ul>{items}</ul></section>")
    if getattr(report, "n_suppressed", 0):
        parts.append(_suppressed(report, prefix))
    if report.loads:
        items = "".join(f"<li>{e(x['what'])} {e(x['name'])}: {x['seconds']:.2f} s{e(rounds_note(x))}</li>"
                        for x in report.loads)
        parts.append(f"<section id={prefix}loads><h2>Loaded</h2><p>Model files and data tables, loaded once and "
                     f"not counted in the properties' times:</p><ul>{items}</ul></section>")
    parts.append(_provenance(report, prefix))
    return parts


def _suppressed(report, prefix: str = "") -> str:
    """The warnings an ignore comment or --ignore acknowledged: counted, as the text and JSON reports
    do, and listed folded (each with what acknowledged it)."""
    e, n = _e, report.n_suppressed
    how = {"inSource": "ignore comment", "external": "--ignore"}
    items = [f"<li><code>{e(d.code)}</code> {e(d.message)}"
             f"{' (' + e(d.span.file) + ':' + str(d.span.line) + ')' if d.span else ''}: {how.get(kind, kind)}</li>"
             for d, kind in report.suppressed]
    items += [f"<li>{e(w)}</li>" for w in report.suppressed_warnings]
    return (f"<section id={prefix}suppressed><h2>Suppressed</h2><details><summary>{n} warning{'s' * (n != 1)} "
            f"suppressed (# fairspec: ignore[...] comments, --ignore)</summary><ul>{''.join(items)}</ul>"
            f"</details></section>")


_EXIT = {0: "everything holds", 1: "a property is violated", 2: "bad spec, model, data or usage",
         3: "nothing violated, something unknown", 4: "internal error",
         130: "interrupted by Ctrl-C (SIGINT); the verdicts decided before it",
         143: "interrupted by SIGTERM; the verdicts decided before it"}


def _summary(report) -> str:
    e = _e
    counts = {s: sum(v.status == s for v in report.verdicts) for s in ("holds", "violated", "unknown")}
    head = " &middot; ".join(f"<span class='badge {s}'>{n} {s}</span>" for s, n in counts.items())
    rows = []
    for i, v in enumerate(report.verdicts):
        bound = "[{}, {}]".format(*map(_v, bound_texts(v))) if v.bound else ""
        value = _v(value_text(v))
        rows.append(f"<tr><td><a href='#p{i}'>{e(v.name)}</a></td><td>{e(v.kind.replace('_', ' '))}</td>"
                    f"<td class='{v.status}'>{e(v.label)}</td><td class=num>{value}</td>"
                    f"<td class=claim>{_claim(report, v.name)}</td><td class=num>{bound}</td>"
                    f"<td>{e(v.backend or '')}</td><td class=num>{v.seconds:.2f} s</td></tr>")
    table = ("<table><thead><tr><th>property</th><th>kind</th><th>verdict</th><th>value</th><th>claim</th>"
             "<th>interval</th><th>backend</th><th>time</th></tr></thead><tbody>" + "".join(rows) +
             "</tbody></table>") if rows else "<p>No property was checked.</p>"
    return f"<main><section id=summary><h2>Summary</h2><p>{head}</p>{table}</section>"


def _property(v, i: int, prefix: str = "", options: dict | None = None) -> str:
    e = _e
    out = [f"<section class=property id='{prefix}p{i}' data-property='{e(v.name)}'>",
           f"<h2>{e(v.name)} <span class='badge {v.status}'>{e(v.label)}</span></h2>",
           f"<p class=kind>{e(v.kind.replace('_', ' '))}"
           f"{' &middot; backend ' + e(v.backend) if v.backend else ''}"
           f"{' &middot; value ' + _v(value_text(v)) if v.value is not None else ''}"
           f"{_claim_of(v)}"
           f"{' &middot; interval [{}, {}]'.format(*map(_v, bound_texts(v))) if v.bound else ''}</p>"]
    if v.reason:
        pair = worst_pair_text(v)
        out.append(f"<p class=reason>{e(v.reason)}{' (' + e(pair) + ')' if pair else ''}</p>")
    out += [f"<p class=note>Note: {e(n)}</p>" for n in verdict_notes(v)]
    if options:  # what the backend ran with (the spec's values, else its defaults): the run can be replayed
        listed = " &middot; ".join(f"{e(k)} {e('not set' if x is None else str(x))}"
                                   for k, x in options.items())
        out.append(f"<p class=options>options: {listed}</p>")
    try:
        out.append(_picture(v, i))
    except Exception as ex:  # noqa: BLE001 - a picture is a courtesy: the verdict and its tables stand
        out.append(f"<p class=note>(no picture: {e(type(ex).__name__)}: {e(str(ex))})</p>")
    out.append("</section>")
    return "".join(out)


def _with_interval(row: dict, key: str, thresholds=(), shown: str | None = None) -> str:
    """A rate with its interval when the backend gave one: 0.4234 [0.3996, 0.4464]; each number on its side of
    the claim's ``thresholds`` (cell_text, literals.shown); ``shown``: the rate's text when it is one of the
    failing pair's (pair_texts)."""
    text, iv = _cell_texts(row, key, thresholds, shown)
    return _e(text) + (f" <span class=interval>{_e(iv)}</span>" if iv else "")


def _cell_texts(row: dict, key: str, thresholds=(), shown: str | None = None) -> tuple[str, str | None]:
    """The rate's text and its interval's ("[0.3996, 0.4464]", outward-rounded), or None: the table's cell and
    the chart's tooltip for that bar."""
    text = shown if shown is not None else cell_text(row.get(key), thresholds)
    iv = row.get(f"{key}_interval")
    if isinstance(iv, (list, tuple)) and len(iv) == 2 and all(isinstance(x, (int, float)) for x in iv):
        return text, f"[{literals.shown(iv[0], thresholds, end='low')}, {literals.shown(iv[1], thresholds, end='high')}]"
    return text, None


_LL144 = {"nyc_ll144": "selection", "nyc_ll144_scoring": "scoring"}
_LL144_PARTS = (("sex", "Sex"), ("race_ethnicity", "Race/ethnicity"), ("intersectional", "Intersectional"))


def _ll144(report) -> str:
    """The table a NYC Local Law 144 bias audit publishes, for every application of the shipped
    nyc_ll144 / nyc_ll144_scoring policy: per category of sex, race/ethnicity and their
    intersection, the number of applicants, the number selected (or scoring above the sample's
    median), the rate and the impact ratio; the excluded categories with their counts."""
    e = _e
    sites = getattr(report, "policy_sites", {}) or {}
    by_name = {v.name: v for v in report.verdicts}
    applications: dict = {}
    for name, (_, policy, prop) in sites.items():
        if policy in _LL144 and name in by_name:
            applications.setdefault(name.rsplit(".", 1)[0], (policy, {}))[1][prop] = by_name[name]
    out = []
    for prefix, (policy, props) in applications.items():
        kind = _LL144[policy]
        verb = "selected" if kind == "selection" else "scoring above the median"
        rows, excluded = [], []
        for key, title in _LL144_PARTS:
            v = props.get(key)
            if v is None or not (v.details or {}).get("groups"):
                continue
            for g in v.details["groups"]:
                ratio = g.get("impact_ratio")
                low = v.status == "violated" and ratio is not None and ratio == v.value
                rows.append(f"<tr{' class=failing' if low else ''}><td>{e(title)}</td><td>{_v(str(g['group']))}</td>"
                            f"<td class=num>{e(cell_text(g.get('rows')))}</td>"
                            f"<td class=num>{e(cell_text(g.get('positives')))}</td>"
                            f"<td class=num>{e(cell_text(g.get('positive_rate'), v.thresholds))}</td>"
                            f"<td class=num>{'excluded' if g.get('excluded') else e(cell_text(ratio, v.thresholds))}"
                            f"</td></tr>")
            if v.details.get("excluded_groups"):
                excluded += [f"{title}: {x}" for x in excluded_texts(v.details, "applicants")[1]]
        if not rows:
            continue
        note = ("<p class=note>Excluded from the impact ratios (under "
                f"{e(cell_text(next(iter(props.values())).details.get('exclude_below', 0)))} of the data): "
                f"{_v('; '.join(excluded))}.</p>") if excluded else ""
        out.append(f"<section class=ll144 id='ll144-{e(prefix)}'><h2>Bias audit: NYC Local Law 144 "
                   f"(<code>{e(prefix)}</code>, {kind} rates)</h2><table><thead><tr><th>grouping</th><th>category"
                   f"</th><th>applicants</th><th>{e(verb)}</th><th>{kind} rate</th><th>impact ratio</th></tr>"
                   f"</thead><tbody>{''.join(rows)}</tbody></table>{note}<p class=note>The law sets no pass mark; "
                   f"the policy's threshold decides which lowest impact ratio is reported as violated.</p></section>")
    return "".join(out)


def _explanation_tree(paths) -> str:
    """HyFair's explanation paths drawn as the tree they come from: paths sharing their first
    conditions share the branch; each leaf says the mean k on it and off it, and its share of the
    domain. Nested lists with CSS branch lines (no script)."""
    if not paths:
        return ""
    e = _e
    root: dict = {}
    for p in paths:
        node = root
        for c in p["conditions"] or ["true"]:
            node = node.setdefault(c, {})
        node.setdefault(None, []).append(p)

    def draw(node) -> str:
        items = []
        for cond, child in node.items():
            if cond is None:
                for p in child:
                    items.append(f"<li class=leaf>high k here: mean k {p['mean_k']:.2f} (vs {p['mean_k_negated']:.2f} "
                                 f"elsewhere), {p['support']:,} samples, {p['volume']:.3g} of the domain</li>")
                continue
            items.append(f"<li><code>{e(cond)}</code>{draw(child)}</li>")
        return f"<ul class=tree>{''.join(items)}</ul>"

    return f"<div class=explanation>{draw(root)}</div>"


def _claim_of(v) -> str:
    """' · claim ≥ 0.8' beside the value (the claim's operator and threshold, as the spec writes them)."""
    d = v.details or {}
    if d.get("op") is None or d.get("threshold") is None:
        return ""
    return f" &middot; claim {_e({'<=': '≤', '>=': '≥'}.get(d['op'], d['op']))} {_threshold(d['threshold'])}"


def _claim(report, name: str) -> str:
    op, t = (getattr(report, "claims", {}) or {}).get(name, (None, None))
    if op is None or t is None:
        return ""
    return f"{_e({'<=': '≤', '>=': '≥'}.get(op, op))} {_threshold(t)}"


def _threshold(t) -> str:
    """A claim's threshold as the spec writes it (0.12345, not 0.1235: 4 digits moved it)."""
    return _v(literals.number(t)) if isinstance(t, (int, float)) and not isinstance(t, bool) else _num(t)


def _provenance(report, prefix: str = "") -> str:
    """What was checked, with what, and when: SHA-256 of every file, versions, time."""
    prov = report.provenance() if hasattr(report, "provenance") and getattr(report, "started", None) else None
    if not prov:
        return ""
    e = _e
    rows = []
    for f in prov["files"]:
        size = "" if f["bytes"] is None else f"{f['bytes']:,}"
        rows.append(f"<tr><td>{e(f['role'])}</td><td><code>{e(f['file'])}</code></td><td class=num>{size}</td>"
                    f"<td><code class=hash>{e(f['sha256'] or 'unreadable')}</code></td></tr>")
    files = "".join(rows)
    libs = ", ".join(f"{e(k)} {e(v)}" for k, v in prov["libraries"].items())
    return (f"<section id={prefix}provenance class=provenance><h2>Provenance</h2><p>Checked at <time>{e(prov['checked_at'])}</time> by "
            f"fairspec {e(prov['fairspec'])} on Python {e(prov['python'])} ({e(prov['platform'])}).</p>"
            f"<table><thead><tr><th>role</th><th>file</th><th>bytes</th><th>SHA-256</th></tr></thead>"
            f"<tbody>{files}</tbody></table><p class=note>Libraries: {libs}.</p></section>")


def _num(x) -> str:
    return f"{x:.4g}" if isinstance(x, float) else _v(str(x))


def _picture(v, i: int) -> str:
    """The picture of the property's kind, then its witness pair (PBA has both)."""
    main = _kind_picture(v)
    if v.witness is not None:
        return (main or "") + _witness(v.witness, output_row(v))
    return main or "<p class=note>No picture for this verdict: the reason above says what was (not) decided.</p>"


def _kind_picture(v) -> str | None:
    d = v.details or {}
    if v.kind == "group_metric" and d.get("influence"):
        return _figure(lambda: charts.influence_fig(v),
                       f"Fairness influence of each feature subset ({d.get('influence_metric')})")
    if v.kind == "group_metric" and d.get("groups"):
        return _group_metric(v)
    if v.kind == "pba" and d.get("table"):
        return _pba(v)
    if v.kind == "k_discrimination" and d.get("explanation"):
        body = f"<h3>Explanation tree</h3>{_explanation_tree(d.get('explanation_tree'))}" \
               f"<pre>{_e(d['explanation'])}</pre>"
        if d.get("guardrail"):
            body += f"<h3>Guardrail pre-condition</h3><pre>{_e(d['guardrail'])}</pre>"
        return body
    if v.kind == "repair" and d.get("pairs_before"):
        return _figure(lambda: charts.repair_fig(v), "Passing-rate ratio of each pair of groups (lower rate over "
                                                     "higher) before and after the repair, with the goal")
    if v.kind == "individual_fairness" and d.get("coverage"):
        c = {k: x for k, x in d["coverage"].items() if k != "shares"}
        out = "<table><tr>" + "".join(f"<th>{_e(str(k))}</th>" for k in c) + "</tr><tr>" + \
            "".join(f"<td class=num>{_v(str(x))}</td>" for x in c.values()) + "</tr></table>"
        if d["coverage"].get("shares"):
            out = _shares(d["coverage"]["shares"]) + out
        return out
    return None


def _count(n, one: str, many: str | None = None) -> str:
    n = int(n or 0)
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _percent(sh: dict, key: str) -> str:
    """A share's percentage as the text report prints it (quantify.fmt_percent, from the exact fraction): a share
    below 1 is never "100%" (``:.6g`` printed one falsified point in 10^7 beside a "100%" certified share)."""
    from fractions import Fraction

    from fairspec.backends.quantify import fmt_percent

    try:
        return fmt_percent(Fraction(str(sh[key])))
    except (KeyError, ValueError, ZeroDivisionError, TypeError):
        return f"{float(sh.get(f'{key}_percent', 0.0)):.6g}%"


def _shares(sh: dict) -> str:
    """FairQuant's shares of the domain: a stacked bar and a table with the exact fractions; with an
    estimate of the undecided share's split (sampled), a second bar and a table of its own, labelled
    estimated -- never a row of the proved shares."""
    e = _e
    est = sh.get("estimate") if isinstance(sh.get("estimate"), dict) and sh["estimate"].get("estimated") else None
    rows = "".join(f"<tr><td>{e(word)}</td><td class=num>{e(str(sh.get(key)))}</td>"
                   f"<td class=num>{e(_percent(sh, key))}</td></tr>" for key, word, _, _ in charts.SHARE_WORDS)
    what = "integer points" if sh.get("measure") == "integer points" else "volume"
    note = (f"Domain: {e(str(sh.get('domain')))} ({e(what)}); "
            f"{_count(sh.get('unfair_boxes'), 'box', 'boxes')} proved unfair, "
            f"{_count(sh.get('counterexample_points'), 'counterexample point')}.")
    out = (_figure(lambda: charts.shares_fig(sh, est),
                   "Shares of the domain of individuals (FairQuant): certified fair, falsified, undecided"
                   + ("; below, the undecided share split by an estimate from sampled individuals" if est else ""))
           + f"<table><tr><th>share</th><th>exact</th><th>percent</th></tr>{rows}</table>"
           + f"<p class=note>{note}</p>")
    if est:
        conf = f"{literals.number(round(100 * float(est.get('confidence', 0.95)), 10))}%"

        def row(word, key):
            t = est[key]
            lo, hi = t["interval_percent"]
            return (f"<tr class=estimate><td>{e(word)} (estimated, not proved)</td>"
                    f"<td class=num>{t['estimate_percent']:.4g}%</td><td class=num>[{lo:.4g}%, {hi:.4g}%]</td></tr>")

        out += (f"<table class=estimate><tr><th>estimate (sampled)</th><th>estimated</th><th>{e(conf)} interval "
                f"({e(str(est.get('method')))})</th></tr>"
                + row("unfair share of the undecided part", "estimated_unfair_of_undecided")
                + row("undecided and unfair, of the domain", "estimated_unfair_in_undecided")
                + row("undecided and fair, of the domain", "estimated_fair_in_undecided")
                + row("unfair, of the domain (falsified + undecided)", "estimated_unfair_of_domain")
                + row("fair, of the domain (certified + undecided)", "estimated_fair_of_domain")
                + "</table>"
                + f"<p class=note>Estimated, not proved: {int(est.get('samples', 0)):,} sampled individuals drawn "
                  f"uniformly from the undecided part (seed {e(str(est.get('seed')))}), each decided on the model's "
                  f"runtime; the proved shares above do not include it.</p>")
    elif isinstance(sh.get("estimate"), dict):
        out += f"<p class=note>No estimate of the undecided share: {e(str(sh['estimate'].get('reason')))}.</p>"
    return out


# ------------------------------------------------------------------ figures

def _figure(build, caption: str) -> str:
    """The chart ``build()`` makes (fairspec.report.charts), as inline SVG with its caption; a chart
    that fails is a note in its place: the tables beside it stand."""
    return _safe_svg(lambda: charts.svg(build), caption)


def _safe_svg(make, caption: str) -> str:
    try:
        svg = make()
    except Exception as ex:  # noqa: BLE001 - a picture is a courtesy: the verdict and its tables stand
        return f"<p class=note>(no picture: {_e(type(ex).__name__)}: {_e(ex)})</p>"
    return f"<figure>{svg}<figcaption>{_e(caption)}</figcaption></figure>"


def _group_metric(v) -> str:
    d = v.details
    e = _e
    parts = []
    cols = group_columns(v)
    head = "".join(f"<th>{e(t)}</th>" for _, t in cols)
    counted = any("counted" in r for r in d["groups"])
    worst = d.get("worst_pair") or {}
    failing = {worst.get("low"): "lowest", worst.get("high"): "highest"} if v.status == "violated" else {}
    # the failing pair's two rates as the text report prints a worst pair (pair_texts, literals.shown_pair):
    # their printed difference or ratio on the claim's side that theirs is (0.2 and 0.30004 against <= 0.1
    # printed 0.2000 and 0.3000 in their cells, a difference of exactly 0.1)
    pair = dict(zip(("lowest", "highest"), pair_texts(v, worst))) if failing else {}
    keys = charts.compared_keys(v) if d.get("metric") != "calibration_gap" else []
    texts: dict = {}
    rate_of = {"lowest": worst.get("low_rate"), "highest": worst.get("high_rate")}
    rows = []
    for r in d["groups"]:
        flag = ("excluded" if r.get("excluded") else cell_text(r["counted"])) if counted else None
        mark = failing.get(str(r["group"]))
        cls = " class=failing" if mark else ""
        name = _v(str(r["group"])) + (f" <span class=fails>&#x2717; {mark}, fails the claim</span>" if mark else "")
        own = (lambda k, m=mark: pair[m] if m in pair and isinstance(r.get(k), float) and r.get(k) == rate_of[m]
               else None)
        for k in keys:  # the chart's tooltips: the table's own cells
            texts[(len(rows), k)] = " ".join(x for x in _cell_texts(r, k, v.thresholds, own(k)) if x)
        rows.append(f"<tr{cls}><td>{name}</td>" + "".join(f"<td class=num>{_with_interval(r, k, v.thresholds, own(k))}"
                                                         "</td>" for k, _ in cols)
                    + (f"<td>{e(flag)}</td>" if counted else "") + "</tr>")
    if d.get("overall"):
        rows.append("<tr class=overall><td>all rows</td>" + "".join(
            f"<td class=num>{e(cell_text(d['overall'].get(k), v.thresholds))}</td>" for k, _ in cols) + ("<td></td>" if counted
                                                                                          else "") + "</tr>")
    title = f"Per group ({e(d.get('groups_label') or 'groups')}" + (f", weighted by {e(d['weight'])}"
                                                                    if d.get("weight") else "") + ")"
    if v.backend == "data" and any(k.endswith("_interval") for r in d["groups"] for k in r):
        title += f"; [ ]: {e(_rate_interval_words(d))}"
    if d.get("metric") == "calibration_gap":
        parts.append(_safe_svg(lambda: svg_charts.reliability_svg(v),
                               "Reliability per group: observed share of label = 1 against the mean score in each "
                               "score bin; the diagonal is perfect calibration"))
    elif keys:  # drawn by hand (svg_charts): a matplotlib chart per property cost ~0.2 s and ~22 KB
        parts.append(_safe_svg(lambda: svg_charts.rates_svg(v, texts), _rates_caption(v)))
    else:   # a multiclass or regression metric (class shares, mean prediction, KS): no rate to draw as bars
        parts.append("<p class=note>No chart: this metric compares no per-group rate; the table below gives "
                     "each group's numbers.</p>")
    parts.append(f"<h3>{title}</h3><table><thead><tr><th>group</th>{head}"
                 f"{'<th>counted</th>' if counted else ''}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    if d.get("excluded_groups"):
        below, listed = excluded_texts(d)
        parts.append(f"<p class=note>Excluded (under {_v(below)} of the rows): {_v(', '.join(listed))}</p>")
    if d.get("rows_missing"):
        parts.append(f"<p class=note>{d['rows_missing']:,} rows with a missing value in a column the spec reads were "
                     f"dropped (in no group and no rate).</p>")
    if d.get("rows_outside"):
        parts.append(f"<p class=note>{d['rows_outside']:,} rows outside a declared domain of the features were "
                     f"dropped (in no group and no rate; FS410).</p>")
    return "".join(parts)


def _rate_interval_words(d: dict) -> str:
    """What the per-group rates' intervals are (details["rate_intervals"], the data backend's): each rate's own
    exact Clopper-Pearson interval, or a bootstrap percentile interval, an approximation."""
    ri = d.get("rate_intervals") or {}
    conf = literals.percent(ri.get('confidence', d.get('confidence', 0.95)))
    if str(ri.get("method", "")).startswith("clopper_pearson"):
        return f"each rate's own {conf} Clopper-Pearson interval (not simultaneous)"
    return f"{conf} bootstrap intervals (approximate)"


def _rates_caption(v) -> str:
    d = v.details
    words = " and ".join(charts.RATE_WORDS.get(k, k) if v.backend == "data" else "positive rate"
                         for k in charts.compared_keys(v))
    cmp = "each group against the whole population" if d.get("compare") == "to_overall" else \
        "the highest group against the lowest"
    ci = f"; bars show {_rate_interval_words(d)}" if v.backend == "data" else ""
    return f"{words} per group ({cmp}){ci}. Right: {d.get('metric', 'the metric')} with its interval and the " \
           f"threshold {v.details.get('threshold', '')}".rstrip() + "."


def _pba(v) -> str:
    """Per flipped feature: the PBA backend's chart, then the numbers the text report prints (the group metrics and
    the PBA-verified shares, each share on its side of the claim's thresholds: aggregate's own cells); the page
    had only the chart's verified shares."""
    from fairspec.backends.pba.aggregate import _METRICS, _SHARES, _cells

    out = []
    for flip, t in pba_tables(v.details["table"]):
        out.append(_safe_svg(lambda t=t, flip=flip: charts.pba_svg(
            t, f"{v.name}: PBA-verified points" + (f" (flip {flip})" if flip else "")),
            "Share of eligible points whose decision is verified persistent under the flip, observed (left) and "
            "flipped (right) setting, per group (percent of the group's eligible points)"))
        cols = _METRICS + _SHARES
        try:
            rows = "".join(f"<tr><td>{_v(r['group'])}</td>" + "".join(f"<td class=num>{_e(c)}</td>"
                                                                     for c in _cells(r, cols, v.thresholds))
                           + "</tr>" for r in t["rows"])
        except (KeyError, TypeError, ValueError) as ex:
            out.append(f"<p class=note>(no table: {_e(type(ex).__name__)}: {_e(ex)})</p>")
            continue
        title = "PBA fairness" + (f" (flip {_v(flip)})" if flip else "")
        out.append(f"<h3>{title}</h3><table class=pba><thead><tr><th>group</th>"
                   + "".join(f"<th>{_e(c)}</th>" for c in cols) + f"</tr></thead><tbody>{rows}</tbody></table>")
    return "".join(out)


def _witness(w, row: str = "model output") -> str:
    e = _e
    keys = list(w.features)
    differ = [k for k in keys if w.features[k] != w.features_prime.get(k)]
    same = [k for k in keys if k not in differ]
    s = literals.value  # a value as the spec writes it (true, "Never-married"), as the text report's table
    rows = "".join(f"<tr class=differs><td>{_v(k)}</td><td>{_v(s(w.features[k]))}</td>"
                   f"<td>{_v(s(w.features_prime.get(k)))}</td></tr>" for k in differ)
    rows += "".join(f"<tr><td>{_v(k)}</td><td>{_v(s(w.features[k]))}</td><td>{_v(s(w.features_prime.get(k)))}</td>"
                    f"</tr>" for k in same)
    if w.outputs:
        a, b = w.output_texts()
        rows += f"<tr class=output><td>{_v(row)}</td><td>{_v(a)}</td><td>{_v(b)}</td></tr>"
    return (f"<h3>Witness pair (replayed by {e(w.replayed_by or 'the model')})</h3>"
            f"<p>{len(differ)} feature{'s' * (len(differ) != 1)} {'differs' if len(differ) == 1 else 'differ'}: {e(', '.join(differ) or 'none')}</p>"
            f"<table class=witness><thead><tr><th>feature</th><th>x</th><th>x'</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


_HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="fairspec">
<link rel="icon" href="data:,">
<title>{title}</title>
<style>{css}</style></head><body>
"""

_CSS = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 75em;
       padding: 0 1em; color: #111; background: #fff; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 0; } h3 { font-size: 1em; }
code, pre { font-family: "DejaVu Sans Mono", Menlo, monospace; font-size: 0.9em; }
pre { background: #f4f4f4; padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
.meta, .kind, .note { color: #444; font-size: 0.9em; }
section { border-top: 1px solid #ccc; padding: 1em 0; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; }
th { background: #eee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
ul.tree { list-style: none; margin: 0; padding-left: 1.2em; border-left: 1px solid #999; }
ul.tree li { margin: 0.2em 0; position: relative; } ul.tree li::before { content: "\2500 "; color: #999; }
ul.tree li.leaf { color: #b3261e; }
tr.failing td { background: #fbe9e7; } .fails { color: #b3261e; font-weight: bold; }
.interval { color: #555; font-size: 0.9em; } code.hash { font-size: 0.8em; word-break: break-all; }
tr.overall td { font-style: italic; } tr.differs td { font-weight: bold; } tr.output td { color: #0b4f8a; }
.badge { border: 1px solid currentColor; border-radius: 0.3em; padding: 0 0.4em; font-size: 0.85em; }
.holds { color: #1b7f3b; } .violated { color: #b3261e; font-weight: bold; } .unknown { color: #8a6d00; }
.error { color: #b3261e; }
figure { margin: 0.5em 0; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.85em; color: #333; }
@media print {
  body { margin: 0; max-width: none; font-size: 10pt; }
  section { break-inside: avoid; page-break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
  pre { background: none; border: 1px solid #999; }
}
"""
