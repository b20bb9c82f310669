"""The HTML report's per-group rate and reliability charts, written as SVG by hand (no matplotlib).

A group metric's chart is the report's most frequent picture: one per property.  Through matplotlib it
cost ~0.2 s of CPU and ~22 KB of SVG (its layout engine, every glyph's clip path, hatches drawn as
paths), so a spec of 1,000 properties took minutes and a 22 MB page (bench/html_report.py,
bench/results/html_report.md).  Written here as a few rectangles, paths and text elements, styled by
the page's stylesheet (:data:`CSS`), it costs about a millisecond and ~2.5 KB, and draws the same: the
rates the metric compares per group as bars (hatched, so grey print tells them apart), each rate's
interval as an error bar, the groups not counted hatched white, the claim's threshold in the rates' own
units (highest - t, t x highest, overall +- t, t), and beside them the metric's value with its interval
against the threshold, titled with the verdict; a calibration gap's reliability curves likewise.  Each
bar carries the numbers the per-group table prints (``texts``: the text report's, on their side of the
claim's thresholds) as its tooltip.

Every text fairspec did not write (a group's name, the metric's, the property's) goes through
:func:`fairspec.report.charts.label` (control and bidi characters as escapes) and is XML-escaped:
a category ``"</svg><b>"`` or ``"$\\frac{$"`` is drawn as written.
"""

from __future__ import annotations

import html
import itertools
import math

from fairspec.report.charts import (RATE_WORDS, STATUS_COLOUR, _BLUE, _GREEN, _GREY, _ORANGE, _RED, compared_keys,
                                    label)
from fairspec.syntax.literals import number as _spec_number

_CHARTS = itertools.count()  # every chart's pattern ids are its own on the page
_COLOURS = (_BLUE, _ORANGE, _GREEN, _RED)
_HATCHES = ("", "//", "..", "xx")

# the charts' styles, in the page's stylesheet once (fairspec.report.html) rather than as attributes on every
# element of every chart: a chart is ~3 KB, not ~6 KB
CSS = f"""
svg.fc {{ font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; font-size: 9px; }}
svg.fc .t {{ font-size: 12px; text-anchor: middle; }} svg.fc .m {{ text-anchor: middle; }}
svg.fc .y {{ font-size: 10px; text-anchor: end; }} svg.fc .x {{ font-size: 10px; text-anchor: middle; }}
svg.fc .s {{ text-anchor: end; }}
svg.fc .g {{ stroke: #000; stroke-opacity: 0.15; fill: none; }} svg.fc .k {{ stroke: #000; fill: none; }}
svg.fc .r {{ stroke: {_RED}; stroke-width: 1.4; stroke-dasharray: 6 3; fill: none; }}
svg.fc .b {{ stroke: #000; stroke-width: 0.6; }} svg.fc .u {{ fill: #fff; stroke: {_GREY}; stroke-width: 0.6; }}
svg.fc .d {{ stroke: {_GREY}; stroke-dasharray: 2 2; fill: none; }} svg.fc .c {{ fill: none; stroke-width: 1.2; }}
"""


def _x(s) -> str:
    """A text for the SVG: one line (:func:`label`), XML-escaped."""
    return html.escape(label(s), quote=True)


def _f(x: float) -> str:
    return str(round(x))  # whole pixels: the chart is ~700 wide


def _ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """Round tick values covering [lo, hi] (about ``n`` of them)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, k = [], 0
    while first + k * step <= hi + step * 1e-9:
        out.append(round(first + k * step, 12))
        k += 1
    return out


def _tick_text(t: float) -> str:
    return f"{t:.6g}" if t else "0"


def _text_width(s: str, size: float) -> float:
    return 0.6 * size * len(s)


def _open(w: float, h: float, defs: str = "") -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class=fc width={_f(w)} height={_f(h)} '
            f'viewBox="0 0 {_f(w)} {_f(h)}" role="img">{defs}')


class _Axes:
    """A panel: data y in [lo, hi] drawn in the box (x0, y0, w, h), y up."""

    def __init__(self, x0, y0, w, h, lo, hi):
        self.x0, self.y0, self.w, self.h, self.lo, self.hi = x0, y0, w, h, lo, hi

    def y(self, v: float) -> float:
        return self.y0 + self.h - (v - self.lo) / (self.hi - self.lo) * self.h

    def frame(self, out: list, ylabel: str | None = None) -> None:
        x0, y0, w, h = self.x0, self.y0, self.w, self.h
        ticks = [(t, _f(self.y(t))) for t in _ticks(self.lo, self.hi)]
        out.append(f'<path class=g d="{"".join(f"M{_f(x0)} {y}h{_f(w)}" for _, y in ticks)}"/>'
                   f'<path class=k d="{"".join(f"M{_f(x0 - 4)} {y}h4" for _, y in ticks)}'
                   f'M{_f(x0)} {_f(y0)}h{_f(w)}v{_f(h)}h{_f(-w)}Z"/><g class=y>'
                   + "".join(f'<text x={_f(x0 - 6)} y={_f(float(y) + 3.5)}>{_tick_text(t)}</text>'
                             for t, y in ticks) + "</g>")
        if ylabel:
            cx, cy = _f(x0 - 40), _f(y0 + h / 2)
            out.append(f'<text class=x x={cx} y={cy} transform="rotate(-90 {cx} {cy})">{_x(ylabel)}</text>')

    def hline(self, out: list, v: float, title: str) -> None:
        out.append(f'<path class=r d="M{_f(self.x0)} {_f(self.y(v))}h{_f(self.w)}"><title>{_x(title)}</title></path>')

    def errorbar(self, x: float, lo: float, hi: float, cap: float = 4) -> str:
        a, b, c = _f(self.y(lo)), _f(self.y(hi)), _f(2 * cap)
        return f"M{_f(x)} {a}V{b}M{_f(x - cap)} {a}h{c}M{_f(x - cap)} {b}h{c}"


_PATTERN = {"//": '<path class=k d="M0 8L8 0M-2 2L2-2M6 10L10 6" stroke-width=".7"/>',
            "..": '<circle cx="2" cy="2" r=".9"/><circle cx="6" cy="6" r=".9"/>',
            "xx": '<path class=k d="M0 8L8 0M0 0L8 8" stroke-width=".7"/>',
            "\\\\": f'<path d="M0 0L8 8M-2 6L2 10M6-2L10 2" stroke="{_GREY}" stroke-width=".7"/>'}


def _patterns(n: int, used) -> tuple[str, dict]:
    """The hatches this chart uses (``//``, ``..``, ``xx``, and ``\\\\`` for the groups not counted) as
    patterns with ids of its own; none when it uses none (one compared rate, every group counted)."""
    ids = {h: f"fs{n}h{i}" for i, h in enumerate(_PATTERN) if h in used}
    if not ids:
        return "", ids
    return ("<defs>" + "".join(f'<pattern id="{i}" patternUnits="userSpaceOnUse" width="8" height="8">{_PATTERN[h]}'
                               f'</pattern>' for h, i in ids.items()) + "</defs>"), ids


def _num(x) -> float:
    return float("nan") if x is None or isinstance(x, bool) else float(x)


def rates_svg(v, texts: dict | None = None) -> str:
    """The per-group rates of a group metric (``compared_keys``) as bars with their intervals and the
    threshold, beside the metric's value and interval; ``texts[(i, key)]``: the tooltip of group ``i``'s
    bar of ``key`` (the table's cell), else the rate as drawn."""
    d = v.details
    keys = compared_keys(v)
    groups = d["groups"]
    names = [label(g["group"]) for g in groups]
    rotate = len(names) > 3
    longest = max((len(s) for s in names), default=0)
    below = 44 + (min(longest, 40) * 6.0 * 0.42 if rotate else 0)   # room for the tick labels
    W = max(720.0, 86.0 * len(names) + 430)
    H = 300 + below
    # a slanted first name reaches left of its bar by ~0.9 of its width: room for it (it ran off the picture)
    left, gap = (max(60.0, 0.906 * 5.4 * min(longest, 40) - 30) if rotate else 60.0), 70.0
    W += left - 60
    ax = _Axes(left, 30, (W - left - gap - 20) * 3.2 / 4.2, H - 30 - below, 0, 1)
    # the y range as before (matplotlib's): up to 1.05 for rates, above 1 for a mean benefit
    vals = [_num(g.get(k)) for g in groups for k in keys]
    his = [_num((g.get(f"{k}_interval") or [None, None])[1]) for g in groups for k in keys]
    fin = [x for x in vals + his if math.isfinite(x)]
    top = max(fin, default=0.0)
    ax.lo, ax.hi = min(0.0, min(fin, default=0.0)), (max(1.0, top * 1.1) if top > 1 else min(1.05, max(0.1, top * 1.25)))
    uncounted = any(not g.get("counted", True) for g in groups)
    defs, pat = _patterns(next(_CHARTS), {*_HATCHES[:len(keys)], *(["\\\\"] if uncounted else [])})
    out = [_open(W, H, defs), f'<text class=t x={_f(ax.x0 + ax.w / 2)} y=18>{_x(f"{v.name}: per group")}</text>']
    ax.frame(out, "rate (share of the group's rows, 0-1)")
    slot = ax.w / max(1, len(names))
    width = slot * 0.8 / max(1, len(keys))
    legend, bars = [], []
    for j, k in enumerate(keys):
        word = RATE_WORDS.get(k, k) if v.backend == "data" else "positive rate"
        colour, hatch = _COLOURS[j % 4], _HATCHES[j % 4]
        legend.append((colour, pat.get(hatch), word, False))
        for i, g in enumerate(groups):
            x = ax.x0 + slot * (i + 0.1) + width * j
            val = _num(g.get(k))
            counted = g.get("counted", True)
            y = ax.y(val if math.isfinite(val) else 0.0)
            box = f'x={_f(x)} y={_f(y)} width={_f(width)} height={_f(max(0.0, ax.y(ax.lo) - y))}'
            tip = (texts or {}).get((i, k)) or ("-" if not math.isfinite(val) else f"{val:.4g}")
            tip = f"{names[i]}: {word} {tip}" + ("" if counted else " (not counted)")
            over = pat.get(hatch if counted else "\\\\")
            out.append(f'<g><title>{_x(tip)}</title><rect class={"b" if counted else "u"} {box}'
                       f'{f" fill={chr(34)}{colour}{chr(34)}" if counted else ""} />'
                       + (f'<rect {box} fill="url(#{over})"/>' if over else "") + "</g>")
            iv = g.get(f"{k}_interval")
            if isinstance(iv, (list, tuple)) and len(iv) == 2 and math.isfinite(val) \
                    and all(isinstance(z, (int, float)) and math.isfinite(z) for z in iv):
                bars.append(ax.errorbar(x + width / 2, float(iv[0]), float(iv[1]), cap=min(4.0, width / 3)))
    if bars:
        out.append(f'<path class=k d="{"".join(bars)}"/>')
    if uncounted:
        legend.append(("#fff", pat["\\\\"], "not counted (too small or excluded)", False))
    for name, ref in _reference_lines(v, keys, groups):
        if not math.isfinite(_num(ref)):  # an overall rate that is not a number: no line to draw
            continue
        ax.hline(out, ref, name)
        legend.append((_RED, None, name, True))
    # the group names under their bars, slanted when there are more than three
    ty = _f(ax.y0 + ax.h + 14)
    out.append(f'<g class={"s" if rotate else "m"}>')
    for i, s in enumerate(names):
        cx = _f(ax.x0 + slot * (i + 0.5))
        turn = f' transform="rotate(-25 {cx} {ty})"' if rotate else ""
        out.append(f'<text x={cx} y={ty}{turn}>{_x(s)}</text>')
    out.append("</g>")
    _legend(out, legend, ax.x0 + 6, ax.y0 + 6)
    _metric_panel(out, v, ax.x0 + ax.w + gap, ax.y0, W - (ax.x0 + ax.w + gap) - 20, ax.h)
    out.append("</svg>")
    return "".join(out)


def _legend(out: list, entries: list, x: float, y: float) -> None:
    if not entries:
        return
    wide = max(_text_width(label(e[2]), 9) for e in entries)
    out.append(f'<rect x={_f(x)} y={_f(y)} width={_f(wide + 34)} height={_f(14 * len(entries) + 6)} '
               f'fill="#fff" fill-opacity=".8"/>')
    for r, (colour, hatch, text, line) in enumerate(entries):
        yy = y + 4 + 14 * r
        if line:  # True: a threshold's dashed line; "solid": a group's curve; "dots": the diagonal
            cls, stroke = {True: ("r", ""), "dots": ("d", "")}.get(line, ("c", f' stroke="{colour}"'))
            out.append(f'<path class={cls} d="M{_f(x + 4)} {_f(yy + 5)}h20"{stroke}/>')
        else:
            cls = "u" if colour == "#fff" else "b"
            out.append(f'<rect class={cls} x={_f(x + 4)} y={_f(yy)} width=20 height=10'
                       f'{"" if cls == "u" else f" fill={chr(34)}{colour}{chr(34)}"} />')
            if hatch:
                out.append(f'<rect x={_f(x + 4)} y={_f(yy)} width=20 height=10 fill="url(#{hatch})"/>')
        out.append(f'<text x={_f(x + 30)} y={_f(yy + 9)}>{_x(text)}</text>')


def _reference_lines(v, keys, groups) -> list[tuple[str, float]]:
    """The threshold in the rates' own units: highest - t (difference), t x highest (ratio), overall +- t
    (to overall); for the most/least favoured group's rate, t itself (charts' matplotlib chart drew the same)."""
    d = v.details
    t = d.get("threshold")
    if t is None or len(keys) != 1:
        return []
    from fairspec.analyses.group_rates import METRICS

    mdef = METRICS.get(d.get("metric", ""))
    vals = [g[keys[0]] for g in groups if math.isfinite(_num(g.get(keys[0]))) and g.get("counted", True)]
    if not vals or mdef is None:
        return []
    hi = max(vals)
    overall = (d.get("overall") or {}).get(keys[0])
    if mdef.form in ("max_rate", "min_rate"):
        return [(f"threshold {_spec_number(t)}", t)]
    if d.get("compare") == "to_overall" and overall is not None:
        if mdef.form == "ratio":
            return [(f"{_spec_number(t)} x overall", overall * t)]
        return [(f"overall - {_spec_number(t)}", overall - t), (f"overall + {_spec_number(t)}", overall + t)]
    if mdef.form == "ratio":
        return [(f"{_spec_number(t)} x highest", hi * t)]
    if mdef.form in ("difference", "average"):
        return [(f"highest - {_spec_number(t)}", hi - t)]
    return []


def _metric_panel(out: list, v, x0: float, y0: float, w: float, h: float) -> None:
    """The metric's value with its interval (a dot and an error bar) against the threshold, titled with
    the verdict in its colour."""
    d = v.details
    t = d.get("threshold")
    if v.value is None or not math.isfinite(_num(v.value)):
        return
    lo, hi = v.bound if v.bound else (v.value, v.value)
    if not all(math.isfinite(_num(x)) for x in (lo, hi)):  # an open end: the value alone
        lo = hi = v.value
    pts = [float(x) for x in (v.value, lo, hi, t) if isinstance(x, (int, float)) and math.isfinite(float(x))]
    a, b = min(pts), max(pts)
    pad = (b - a) * 0.08 or max(abs(a) * 0.1, 0.05)
    ax = _Axes(x0, y0, w, h, a - pad, b + pad)
    cx = x0 + w / 2
    out.append(f'<text class=t x={_f(cx)} y=18 fill="{STATUS_COLOUR.get(v.status, "#000")}">{_x(v.status)}</text>')
    ax.frame(out)
    out.append(f'<path class=k d="{ax.errorbar(cx, float(lo), float(hi), cap=6)}"/>'
               f'<circle cx={_f(cx)} cy={_f(ax.y(float(v.value)))} r=4><title>{_x(d.get("metric", "value"))} '
               f'{_x(_value_text(v))}</title></circle>'
               f'<text class=m x={_f(cx)} y={_f(y0 + h + 14)}>{_x(d.get("metric", "value"))}</text>')
    if t is not None and math.isfinite(_num(t)):  # its legend under the panel: inside, it crossed the interval
        ax.hline(out, float(t), f"threshold {_spec_number(t)}")
        _legend(out, [(_RED, None, f"threshold {_spec_number(t)}", True)], x0 - 4, y0 + h + 20)


def _value_text(v) -> str:
    from fairspec.report import bound_texts, value_text

    b = bound_texts(v)
    return value_text(v) + (f" [{b[0]}, {b[1]}]" if b else "")


_MARKERS = ("circle", "square", "triangle", "diamond")
_LINE_COLOURS = (_BLUE, _ORANGE, _GREEN, _RED, "#CC79A7", "#56B4E9", "#F0E442", "#000000")


def _marker(kind: str, x: float, y: float) -> str:
    x, y = round(x), round(y)
    if kind == "circle":
        return f'<circle cx={x} cy={y} r=3 />'
    if kind == "square":
        return f'<rect x={x - 3} y={y - 3} width=6 height=6 />'
    if kind == "triangle":
        return f'<path d="M{x} {y - 4}l4 7h-8Z"/>'
    return f'<path d="M{x} {y - 4}l4 4-4 4-4-4Z"/>'


def reliability_svg(v) -> str:
    """A calibration gap: each group's reliability curve (observed share of label = 1 against the mean score
    per bin) with the diagonal, each group's ECE in the legend on its side of the claim's thresholds; beside
    it the metric's value and interval against the threshold."""
    from fairspec.syntax.literals import shown

    d = v.details
    W, H = 720.0, 360.0
    ax = _Axes(60, 30, (W - 60 - 70 - 20) * 2.2 / 3.2, 270, 0, 1)
    sx = lambda x: ax.x0 + x * ax.w  # noqa: E731
    out = [_open(W, H), f'<text class=t x={_f(ax.x0 + ax.w / 2)} y=18>{_x(f"{v.name}: reliability per group")}'
                        '</text>']
    ax.frame(out, "observed share of label = 1 (0-1)")
    out.append('<g class=x>' + "".join(f'<text x={_f(sx(t))} y={_f(ax.y0 + ax.h + 13)}>{_tick_text(t)}</text>'
                                         for t in _ticks(0, 1))
               + f'<text x={_f(ax.x0 + ax.w / 2)} y={_f(ax.y0 + ax.h + 28)}>mean score in the bin (probability, '
                 f'0-1)</text></g><path class=d d="M{_f(sx(0))} {_f(ax.y(0))}L{_f(sx(1))} {_f(ax.y(1))}"/>')
    legend = [(_GREY, None, "perfect calibration", "dots")]
    for j, g in enumerate(d["groups"]):
        pts = [(float(b["mean_score"]), float(b["positive_share"])) for b in g.get("reliability", [])
               if math.isfinite(_num(b.get("mean_score"))) and math.isfinite(_num(b.get("positive_share")))]
        if not pts:
            continue
        colour, marker = _LINE_COLOURS[j % 8], _MARKERS[j % 4]
        ece = g.get("ece")
        name = (f"{g['group']} (ECE {shown(ece, v.thresholds, digits=3, style='f', exact=repr(float(ece)))})"
                if ece is not None else str(g["group"]))
        path = "".join(("M" if i == 0 else "L") + f"{_f(sx(x))} {_f(ax.y(y))}" for i, (x, y) in enumerate(pts))
        out.append(f'<g fill="{colour}"><title>{_x(name)}</title><path class=c d="{path}" stroke="{colour}"/>'
                   + "".join(_marker(marker, sx(x), ax.y(y)) for x, y in pts) + "</g>")
        legend.append((colour, None, name, "solid"))
    _legend(out, legend, ax.x0 + 6, ax.y0 + 6)
    _metric_panel(out, v, ax.x0 + ax.w + 70, ax.y0, W - (ax.x0 + ax.w + 70) - 20, ax.h)
    out.append("</svg>")
    return "".join(out)
