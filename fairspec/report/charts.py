"""The HTML report's charts (matplotlib, drawn as SVG): matplotlib is imported here only.

Every text a chart draws that fairspec did not write itself (a group's name, a category, a feature
subset, a property name) goes through :func:`label`: control characters and bidirectional controls
shown as escapes (``\\u202e``), as the text report and the page's tables show them, so a category
``"\\u202eevil"`` cannot draw as ``live``.  Every chart is built and drawn with mathtext off
(``text.parse_math``): a category ``"$25k-$50k"`` or ``"$\\frac{$"`` is drawn as written, never
parsed as TeX (a label with a pair of ``$`` was drawn in math italics, or failed the whole chart).
"""

from __future__ import annotations

import io
import itertools

from fairspec.diagnostics.visible import visible_value
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

# colour-blind-safe (Okabe-Ito), distinguishable in grey print by the hatches used with them
_BLUE, _ORANGE, _GREEN, _GREY, _RED = "#0072B2", "#E69F00", "#009E73", "#999999", "#D55E00"
STATUS_COLOUR = {"holds": "#1b7f3b", "violated": "#b3261e", "unknown": "#8a6d00"}
RATE_WORDS = {"positive_rate": "positive rate", "base_rate": "base rate", "tpr": "true-positive rate",
               "fpr": "false-positive rate", "fnr": "false-negative rate", "tnr": "true-negative rate",
               "ppv": "positive predictive value", "fdr": "false discovery rate", "npv": "negative predictive value",
               "for": "false omission rate", "error_rate": "error rate", "accuracy": "accuracy",
               "benefit": "mean benefit (decision - label + 1)"}

SHARE_WORDS = (("certified", "certified (boxes proved fair)", _GREEN, ""),
               ("falsified", "falsified (boxes proved unfair, counterexample points)", _RED, "//"),
               ("undecided", "undecided", _GREY, ".."))
_FIGURES = itertools.count()


def label(x) -> str:
    """A text for a chart: one line, control characters (bidi controls too) shown as escapes."""
    return visible_value("" if x is None else x)


def _context():
    """How every chart is built and drawn: text kept as SVG text, clip-path ids unique on the page
    (every figure gets its own salt), and no mathtext: a label with ``$`` is drawn as written."""
    import matplotlib

    return matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"fairspec-{next(_FIGURES)}",
                                  "font.family": "DejaVu Sans", "text.parse_math": False})


def svg(build) -> str:
    """The SVG of the figure ``build()`` makes; built and drawn in :func:`_context`."""
    with _context():
        fig = build()
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def pba_svg(table: dict, title: str) -> str:
    """The PBA backend's own chart of one table as SVG, its group names through :func:`label`."""
    from fairspec.backends.pba.aggregate import write_chart

    shown = {**table, "rows": [{**r, "group": label(r["group"])} for r in table["rows"]]}
    buf = io.BytesIO()
    with _context():
        write_chart(shown, buf, title=label(title), fmt="svg")
    text = buf.getvalue().decode("utf-8")
    return text[text.index("<svg"):]


def _new_figure(w: float, h: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), layout="constrained")


def compared_keys(v) -> list[str]:
    d = v.details
    keys = [k for k in d.get("rates", []) if k in RATE_WORDS]
    if not keys:  # over a distribution: Justicia's PPV is the positive rate
        keys = [k for k in ("positive_rate", "ppv") if any(k in g for g in d["groups"])][:1]
    return keys


def influence_fig(v):
    d = v.details
    items = sorted(d["influence"], key=lambda it: abs(it["fif"]))
    labels = [label("{" + ", ".join(map(str, it["subset"])) + "}") for it in items]
    vals = [it["fif"] for it in items]
    fig = _new_figure(7.0, max(2.2, 0.35 * len(items) + 1.2))
    ax = fig.subplots()
    ax.barh(range(len(items)), vals, color=[_BLUE if x >= 0 else _ORANGE for x in vals], edgecolor="black",
            linewidth=0.5)
    ax.set_yticks(range(len(items)))
    ax.set_yticklabels(labels, fontsize=8)
    t = d.get("threshold")
    if t is not None:
        for s in (t, -t):
            ax.axvline(s, color=_RED, linestyle="--", linewidth=1.2)
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_xlabel(label(f"FIF(S) = {d.get('influence_metric')}(D) - {d.get('influence_metric')}(D_-S)"))
    ax.set_title(label(f"{v.name}: fairness influence, sorted by |FIF|"), fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return fig


def repair_fig(v):
    import numpy as np

    d = v.details
    before = {label(" / ".join(map(str, p["groups"]))): p["ratio"] for p in d["pairs_before"]}
    after = {label(" / ".join(map(str, p["groups"]))): p["ratio"] for p in d.get("pairs_after", [])}
    names = list(before)
    x = np.arange(len(names))
    fig = _new_figure(7.5, max(2.4, 0.32 * len(names) + 1.3))  # one row per pair: readable however many
    ax = fig.subplots()
    ax.barh(x + 0.2, [before[n] or 0.0 for n in names], 0.4, color=_GREY, edgecolor="black", label="before")
    if after:
        ax.barh(x - 0.2, [after.get(n) or 0.0 for n in names], 0.4, color=_BLUE, edgecolor="black", hatch="//",
                label="after")
    t = d.get("c", d.get("threshold"))
    if t is not None:
        ax.axvline(t, color=_RED, linestyle="--", label=f"goal {_spec_number(t)}")
    ax.set_yticks(x)
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("passing-rate ratio (lower / higher, 0-1)")
    ax.set_title(label(f"{v.name}: before and after the repair"), fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    return fig


def shares_fig(sh: dict, est: dict | None):
    """FairQuant's shares of the domain as a stacked bar; with an estimate of the undecided share's
    split, a second bar below it.  The legend sits above the bar, in rows of at most three entries,
    inside the figure's width (five in one row ran past its right edge)."""
    fig = _new_figure(6.5, 2.1 if est else 1.5)
    ax = fig.add_subplot()
    left = 0.0
    for key, _, colour, hatch in SHARE_WORDS:
        w = float(sh.get(f"{key}_percent", 0.0))
        ax.barh([1 if est else 0], [w], left=left, color=colour, hatch=hatch, edgecolor="black", label=key)
        left += w
    if est:
        # the estimate: the proved shares again, the undecided part split by the sampled proportions
        c, f = float(sh.get("certified_percent", 0.0)), float(sh.get("falsified_percent", 0.0))
        eu = est["estimated_unfair_in_undecided"]["estimate_percent"]
        ef = est["estimated_fair_in_undecided"]["estimate_percent"]
        left = 0.0
        for w, colour, hatch, name in ((c, _GREEN, "", None), (f, _RED, "//", None),
                                       (eu, _RED, "xx", "estimated unfair"), (ef, _GREEN, "xx", "estimated fair")):
            ax.barh([0], [w], left=left, color=colour, alpha=0.45 if name else 1.0, hatch=hatch, edgecolor="black",
                    label=name)
            left += w
        ax.set_yticks([0, 1], ["estimated (sampled)", "shares (exact)"])
    else:
        ax.set_yticks([])
    ax.set_xlim(0, 100)
    ax.set_xlabel(label(f"% of the domain ({sh.get('measure')})"))
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False, fontsize=8)
    return fig
