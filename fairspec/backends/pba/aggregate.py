"""Aggregation as in paper 004 (Sec. 3.4-3.6): per-subgroup PBA shares beside SP, TPR, CFA, RB.

For every group g (the flipped attribute's values, or ``report by ...``):

* ``pba_observed``: the share of the group's eligible points (both predictions equal
  the true class at the centre) that are PBA-verified: the model is persistently more
  confident in the true class for x than for its counterfactual x' over the whole
  neighbourhood (``min f > 0``);
* ``pba_flipped``: the share of the eligible points *presented as* g after the flip
  (x' in g) whose flipped input x' is persistently more confident than the original x
  (Sec. 3.5: "flipped" setting). A point counts in at most one of its two settings;
  observed(g) + flipped(other group) of the same points is at most 100%;
* ``desirable`` / ``undesirable``: the part of each share contributed by points of the
  positive (label true) and negative class (Figs. 2-3), so they add up to the share;
* ``sp``: positive-prediction rate (statistical parity, group-wise, not enforced);
* ``tpr``: true-positive rate (the TPR part of equalized odds);
* ``cfa``: counterfactual fairness accuracy, the share whose decision does not change
  under the flip (Kusner et al.);
* ``sp_range`` / ``tpr_range`` / ``cfa_range`` (on a runtime that rounds by batch, a group holding decisions
  within its rounding of the threshold): the share over every way another batch may decide those, printed
  in place of the share;
* ``rb_observed`` / ``rb_flipped``: robustness accuracy by formal verification (Nanda
  et al.): correct and provably constant decision over the same neighbourhood, for x
  (group of x) and for x' (group of x').

Shares of proved points are lower bounds when some points are unknown; the counts
are kept beside every share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["Aggregate", "aggregate", "render_table", "write_chart"]


def _share(num, den):
    return None if den == 0 else float(num) / float(den)


def _put(r: dict, key: str, num, den) -> None:
    """``r[key]``: the share num / den (a float, None when den is 0), and ``r["exact"][key]`` the exact ratio
    as text ("1/3"), which the text table rounds from (a float's shortest decimal 0.3333333333333333 is below
    1/3: a range's upper end printed from it may leave 1/3 out, a share beside ``<= 0.3333333333333333`` read
    on the threshold)."""
    r[key] = _share(num, den)
    if int(den):
        r.setdefault("exact", {})[key] = str(Fraction(int(num), int(den)))


@dataclass
class Aggregate:
    groups: list[str]
    rows: list[dict]
    overall: dict

    def to_json(self) -> dict:
        return {"groups": self.groups, "rows": self.rows, "overall": self.overall}


def aggregate(groups: list[str], *, row_group, row_label, row_pred, case_row, case_group_x, case_group_p,
              case_class, case_eligible, case_same, obs_status, flip_status, rb_x=None, rb_p=None,
              row_tied=None, case_tied=None) -> Aggregate:
    """Per-group table.

    Row-level arrays (selected rows): ``row_group`` (group index of x), ``row_label``
    (bool), ``row_pred`` (decision on x), ``rb_x`` (robust-accuracy status of x or None).
    Case-level arrays (one per row and flip target): ``case_row``, ``case_group_x``,
    ``case_group_p`` (group of x'), ``case_class`` (true class 0/1), ``case_eligible``,
    ``case_same`` (decision unchanged by the flip), ``obs_status`` / ``flip_status``
    (proved | refuted | unknown | excluded), ``rb_p`` (robust-accuracy status of x').
    ``row_tied`` / ``case_tied`` (a runtime that rounds by batch): the rows whose centre decision, and the cases
    whose x or x' decision, lies within its rounding of the threshold -- another batch may decide them otherwise,
    so a group holding some gets ``sp_range`` / ``tpr_range`` / ``cfa_range``, the share over every way they may
    be decided (its ``sp`` / ``tpr`` / ``cfa`` is this batch's), and the table prints the range.
    """
    rows = []
    for gi, name in enumerate(groups):
        in_g = row_group == gi
        pos = in_g & row_label
        r = {"group": name, "n": int(in_g.sum())}
        _put(r, "sp", row_pred[in_g].sum(), in_g.sum())
        _put(r, "tpr", row_pred[pos].sum(), pos.sum())
        cx = case_group_x == gi
        _put(r, "cfa", case_same[cx].sum(), cx.sum())
        if row_tied is not None:
            _range(r, "sp", row_pred.astype(bool), row_tied, in_g)
            _range(r, "tpr", row_pred.astype(bool), row_tied, pos)
        if case_tied is not None:
            _range(r, "cfa", np.asarray(case_same, dtype=bool), case_tied, cx)
        if rb_x is not None:
            _put(r, "rb_observed", (rb_x[in_g] == "proved").sum(), in_g.sum())
            r["rb_observed_unknown"] = int((rb_x[in_g] == "unknown").sum())
        if rb_p is not None:
            cp = case_group_p == gi
            _put(r, "rb_flipped", (rb_p[cp] == "proved").sum(), cp.sum())
            r["rb_flipped_unknown"] = int((rb_p[cp] == "unknown").sum())
        for setting, grp, st in (("observed", case_group_x, obs_status), ("flipped", case_group_p, flip_status)):
            sel = (grp == gi) & case_eligible
            den = int(sel.sum())
            proved = sel & (st == "proved")
            _put(r, f"pba_{setting}", proved.sum(), den)
            _put(r, f"pba_{setting}_desirable", (proved & (case_class == 1)).sum(), den)
            _put(r, f"pba_{setting}_undesirable", (proved & (case_class == 0)).sum(), den)
            r[f"{setting}_counts"] = {"eligible": den, "proved": int(proved.sum()),
                                      "refuted": int((sel & (st == "refuted")).sum()),
                                      "unknown": int((sel & (st == "unknown")).sum()),
                                      "eligible_desirable": int((sel & (case_class == 1)).sum()),
                                      "eligible_undesirable": int((sel & (case_class == 0)).sum())}
        rows.append(r)
    el = case_eligible
    overall = {"rows": int(len(row_group)), "cases": int(len(case_row)), "eligible": int(el.sum()),
               "observed": {s: int((el & (obs_status == s)).sum()) for s in ("proved", "refuted", "unknown")},
               "flipped": {s: int((el & (flip_status == s)).sum()) for s in ("proved", "refuted", "unknown")}}
    overall["pba_observed"] = _share(overall["observed"]["proved"], overall["eligible"])
    overall["pba_flipped"] = _share(overall["flipped"]["proved"], overall["eligible"])
    return Aggregate(list(groups), rows, overall)


def _range(r: dict, key: str, yes, tied, sel) -> None:
    """``r[key + "_range"]``: the share of ``yes`` among ``sel`` over every decision of its ``tied`` members (the
    rows another batch may decide otherwise), when it holds some."""
    sel = np.asarray(sel, dtype=bool)
    tied = np.asarray(tied, dtype=bool) & sel
    if tied.any():
        yes = np.asarray(yes, dtype=bool) & sel
        ends = ((yes & ~tied).sum(), (yes | tied).sum())
        r[f"{key}_range"] = [_share(k, sel.sum()) for k in ends]
        r.setdefault("exact", {})[f"{key}_range"] = [str(Fraction(int(k), int(sel.sum()))) for k in ends]


def _pct(v, ts=(), end: str | None = None, exact=None) -> str:
    """A share as a percentage, one decimal, more where one would put it on another side of one of the claim's
    thresholds ``ts`` (shares in [0, 1], as the spec writes them) than it is, or on one it is not on
    (literals.shown, on 100 x the share): 0.89996 against ``>= 0.9`` read 90.0%. ``exact``: the share's exact
    ratio ("1/3", the table's ``exact``), else the share is read as its shortest decimal; ``end`` "low" / "high":
    a range's end, rounded down / up from it (never inward: the printed range contains the exact one)."""
    if v is None:
        return "-"
    from fairspec.syntax.literals import shown

    if not isinstance(v, float) or v != v or abs(v) == float("inf"):
        return f"{100 * v:.1f}%"
    scaled = []
    for t in ts or ():
        try:
            scaled.append(100 * (Fraction(repr(float(t))) if isinstance(t, float) else Fraction(t)))
        except (TypeError, ValueError, OverflowError):
            continue
    q = 100 * (Fraction(exact) if exact is not None else Fraction(repr(v)))   # (0.9 read as 9 / 10)
    return shown(float(q), tuple(scaled), digits=1, style="f", end=end, exact=q) + "%"


def _pct_of(r: dict, key: str, ts=()) -> str:
    """A group metric's cell: its range where one batch decides it (``key + "_range"``, its ends rounded
    outward), else its share."""
    got = r.get(f"{key}_range")
    if not got:
        return _pct(r[key], ts, exact=_exact(r, key))
    ex = _exact(r, f"{key}_range") or (None, None)
    return f"{_pct(got[0], ts, 'low', ex[0])[:-1]}-{_pct(got[1], ts, 'high', ex[1])}"


def _exact(r: dict, key: str):
    """The exact ratio the table recorded for ``key`` (``r["exact"]``), None when it has none."""
    got = r.get("exact")
    return got.get(key) if isinstance(got, dict) else None


_METRICS = ("n", "SP", "TPR", "CFA", "RB obs", "RB flip")
_SHARES = ("PBA obs", "(des./undes.)", "PBA flip", "(des./undes.)", "undecided")


def _cells(r: dict, cols, ts=()) -> list[str]:
    oc, fc = r["observed_counts"], r["flipped_counts"]
    cells = {"n": str(r["n"]), "SP": _pct_of(r, "sp", ts), "TPR": _pct_of(r, "tpr", ts), "CFA": _pct_of(r, "cfa", ts),
             "RB obs": _pct(r.get("rb_observed"), ts, exact=_exact(r, "rb_observed")),
             "RB flip": _pct(r.get("rb_flipped"), ts, exact=_exact(r, "rb_flipped")),
             "undecided": str(oc["unknown"] + fc["unknown"])}
    row = []
    for i, col in enumerate(cols):
        if col in ("PBA obs", "PBA flip"):
            key = f"pba_{'observed' if col == 'PBA obs' else 'flipped'}"
            row.append(_pct(r[key], ts, exact=_exact(r, key)))
        elif col == "(des./undes.)":
            s = "observed" if cols[i - 1] == "PBA obs" else "flipped"
            des, und = f"pba_{s}_desirable", f"pba_{s}_undesirable"
            row.append(f"{_pct(r[des], ts, exact=_exact(r, des))}/{_pct(r[und], ts, exact=_exact(r, und))}")
        else:
            row.append(cells[col])
    return row


def render_table(agg: Aggregate | dict, console=None, title: str = "PBA fairness", thresholds=()):
    """Rich table(s) of the aggregate (printed when a console is given; returned either way).

    One table on a wide terminal; below 130 columns the group metrics and the PBA shares are
    two tables, each fitting 80 columns.  On a console, no value is cut with an ellipsis: every
    number column is as wide as its header and its longest value, the group column takes the
    rest and folds a long name; a console too narrow for that gets one block per group. ``thresholds``: the
    claim's (the verdict's), which no printed share is rounded onto or across (:func:`_pct`)."""
    from rich.table import Table
    from rich.text import Text

    from fairspec.diagnostics import cell_len
    from fairspec.diagnostics.visible import visible_value

    d = agg.to_json() if isinstance(agg, Aggregate) else agg
    split = console is not None and console.width < 130
    layouts = [(title + " (group metrics)", _METRICS), (title + " (PBA-verified shares)", _SHARES)] if split \
        else [(title, _METRICS + _SHARES)]
    names = [visible_value(r["group"]) for r in d["rows"]]
    out = []
    for name, cols in layouts:
        rows = [_cells(r, cols, thresholds) for r in d["rows"]]
        widths = [max([cell_len(col)] + [cell_len(row[i]) for row in rows]) for i, col in enumerate(cols)]
        group = max([5] + [cell_len(n) for n in names])
        if console is not None:  # the group column gets what the numbers leave (3 cells a column for rules)
            group = min(group, console.width - sum(widths) - 3 * (len(cols) + 1) - 1)
            if group < 5:  # too narrow for the numbers: one block per group, nothing cut
                blocks = _blocks(Text(visible_value(name)), names, rows, cols)
                for b, whole in blocks:  # a name's line is never wrapped (the terminal wraps it), so a
                    console.print(b, soft_wrap=whole)  # name never starts a line: it follows "group "
                out.extend(b for b, _ in blocks)
                continue
        t = Table(title=Text(visible_value(name)), title_justify="left")
        t.add_column("group", overflow="fold", **({"width": group} if console is not None else {}))
        for col, w in zip(cols, widths):
            t.add_column(col, justify="right", no_wrap=True, overflow="fold",
                         **({"width": w} if console is not None else {}))
        for n, row in zip(names, rows):
            t.add_row(Text(n), *row)
        out.append(t)
        if console is not None:
            console.print(t)
    return out[0] if len(out) == 1 else out


def _blocks(title, names, rows, cols) -> list[tuple]:
    """(text, printed whole) of a console too narrow for the table: the title, then per group its name
    and its numbers (fairspec's own words, wrapped at the width)."""
    from rich.text import Text

    blocks = [(title, True)]
    for n, row in zip(names, rows):
        blocks.append((Text.assemble("group ", Text(n, style="bold")), True))
        blocks.append((Text("  " + " · ".join(f"{c} {v}" for c, v in zip(cols, row))), False))
    return blocks


def write_chart(agg: Aggregate | dict, path, title: str = "PBA fairness", fmt: str | None = None) -> str:
    """Bar chart of the verified shares per group, observed (left) and flipped (right), each bar
    split into desirable (positive class) and undesirable outcomes (paper 004, Figs. 2-3).

    Drawn with mathtext off (``text.parse_math``, as the HTML report's charts): a group ``"$25k-$50k"``
    or ``"$\\frac{$"`` is drawn as written, never parsed as TeX (drawn in math italics, or failing
    the chart); group names and the title on one line with control characters shown as escapes."""
    import matplotlib

    matplotlib.use("Agg", force=False)

    with matplotlib.rc_context({"text.parse_math": False}):
        return _draw(agg, path, title, fmt)


def _draw(agg, path, title: str, fmt: str | None) -> str:
    import matplotlib.pyplot as plt

    from fairspec.diagnostics.visible import visible_value

    d = agg.to_json() if isinstance(agg, Aggregate) else agg
    names = [visible_value(r["group"]) for r in d["rows"]]
    title = visible_value(title)
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 2, figsize=(max(6.0, 1.4 * len(names) + 3), 3.8), sharey=True)
    for ax, setting in zip(axes, ("observed", "flipped")):
        des = np.array([100 * (r[f"pba_{setting}_desirable"] or 0.0) for r in d["rows"]])
        und = np.array([100 * (r[f"pba_{setting}_undesirable"] or 0.0) for r in d["rows"]])
        ax.bar(x, des, color="#4c72b0", label="desirable (positive class)")
        ax.bar(x, und, bottom=des, color="#dd8452", label="undesirable (negative class)")
        for xi, tot in zip(x, des + und):
            ax.text(xi, tot + 1, f"{tot:.1f}%", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
        ax.set_title(setting)
        ax.set_ylim(0, 105)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("PBA-verified points (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=2, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path if hasattr(path, "write") else str(path), dpi=120, format=fmt)  # a file or a path
    plt.close(fig)
    return str(path)


def dumps(agg: Aggregate | dict) -> str:
    d = agg.to_json() if isinstance(agg, Aggregate) else agg
    return json.dumps(d, indent=2)
