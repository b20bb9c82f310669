"""How the HTML report scales with the number of properties (``fairspec check --html`` at 10, 100, 1,000).

Builds a spec with N properties over the shipped predictions example's data (examples/predictions:
4,000 logged decisions, no model file): group metrics on data (statistical parity, disparate impact,
equal opportunity, predictive parity, a false-negative-rate difference to the overall rate, base rates,
a calibration gap every 25th property), plus a few individual-fairness and PBA properties over the Adult example's logistic regression
(examples/adult: lr.skops and its data).  Runs the check once per N, then in the same
process times (CPU seconds of this process, and wall) the text report alone (the baseline: ``fairspec.report.print_text`` into a string) and
the HTML rendering alone (``fairspec.report.html.render``), each the median of ``--runs`` runs, with
the page's size and the peak memory tracemalloc sees while rendering it.

    python bench/html_report.py [--sizes 10 100 1000] [--runs 1] [--keep DIR] [--trace]

``--keep DIR`` writes each page there (to look at it in a browser).  Results: bench/results/html_report.md.
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import sys
import tempfile
import time
import resource
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEAD = """data log = csv("decisions.csv", label = outcome == 1)

features Applicant from log {
  age  : int in [17, 90]
  sex  : {Female, Male} protected
  race : {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White} protected
}

model service = predictions(log, decision = "approved")
model scored = predictions(log, score = "score", threshold = 0.5)
group older = age >= 40

data adult = csv("adult.data", header = false,
                 columns = [age, workclass, fnlwgt, education, "education-num", "marital-status", occupation,
                            relationship, race, sex, "capital-gain", "capital-loss", "hours-per-week",
                            "native-country", income],
                 missing = ["?"], label = income == ">50K")

features Adult from adult {
  age            : int in [17, 90]
  education_num  : int in [1, 16] column "education-num"
  hours_per_week : int in [1, 99] column "hours-per-week"
  capital_gain   : int in [0, 99999] column "capital-gain"
  capital_loss   : int in [0, 4356] column "capital-loss"
  workclass      : {"Federal-gov", "Local-gov", Private, "Self-emp-inc", "Self-emp-not-inc", "State-gov", "Without-pay"}
  marital_status : {Divorced, "Married-AF-spouse", "Married-civ-spouse", "Married-spouse-absent", "Never-married",
                    Separated, Widowed} column "marital-status"
  occupation     : {"Adm-clerical", "Armed-Forces", "Craft-repair", "Exec-managerial", "Farming-fishing",
                    "Handlers-cleaners", "Machine-op-inspct", "Other-service", "Priv-house-serv", "Prof-specialty",
                    "Protective-serv", Sales, "Tech-support", "Transport-moving"}
  relationship   : {Husband, "Not-in-family", "Other-relative", "Own-child", Unmarried, Wife}
  race           : {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White} protected
  sex            : {Female, Male} protected
}

model lr = sklearn("lr.skops")
encode Adult for lr {
  age            : minmax(lo = 17, hi = 90)
  education_num  : minmax(lo = 1, hi = 16)
  hours_per_week : minmax(lo = 1, hi = 99)
  capital_gain   : minmax(lo = 0, hi = 99999)
  capital_loss   : minmax(lo = 0, hi = 4356)
  workclass, marital_status, occupation, relationship, race, sex : onehot
}
"""

# (body, every how many properties) -- the group metrics cycle; the rest are sprinkled in
GROUP = [
    "statistical_parity(service, groups sex x older) <= {t}",
    "disparate_impact(service, groups race) >= {r}",
    "equal_opportunity(service, groups sex) <= {t}",
    "predictive_parity_ratio(service, groups sex) >= {r}",
    "false_negative_rate_difference(service, groups race) <= {t}\n  compare = to_overall",
    "base_rate_ratio(log, groups sex x older) >= {r}",
    "equalized_odds(service, groups sex) <= {t}",
]
CALIBRATION = "calibration_gap(scored, groups sex, bins = 10) <= {t}"
INDIVIDUAL = ("forall x, x' : Adult\n  require x.* == x'.* except {{sex}}\n  ensure label(lr(x)) == label(lr(x'))")
PBA = "pba(lr, flip sex, around adult, delta {{age: 1}}) >= 0.{p}\n  points = 40"


def spec_text(n: int) -> str:
    props = []
    for i in range(n):
        t, r, p = f"0.{(i % 9) + 1:02d}", f"0.{70 + i % 25}", 80 + i % 19
        if i % 100 == 7:
            body = INDIVIDUAL.format()
        elif i % 100 == 57:
            body = PBA.format(p=p)
        elif i % 25 == 12:
            body = CALIBRATION.format(t=t)
        else:
            body = GROUP[i % len(GROUP)].format(t=t, r=r)
        props.append(f"property p{i:04d} {{\n  {body}\n}}\n")
    return HEAD + "\n" + "\n".join(props)


def _median(f, runs: int) -> tuple[float, float, object]:
    """The median CPU seconds of this process (the machine is shared: wall time is mostly other jobs'),
    the median wall seconds, and ``f()``."""
    cpu, wall, out = [], [], None
    for _ in range(runs):
        t, w = time.process_time(), time.perf_counter()
        out = f()
        cpu.append(time.process_time() - t)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall), out


def _text(report) -> str:
    from fairspec import report as rep

    buf = io.StringIO()
    rep.print_text(report, rep.console(file=buf, width=120))
    return buf.getvalue()


def measure(n: int, runs: int, keep: Path | None, trace: bool) -> dict:
    from fairspec.pipeline import check
    from fairspec.report.html import render

    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        shutil.copy(ROOT / "examples/predictions/decisions.csv", folder / "decisions.csv")
        shutil.copy(ROOT / "examples/adult/data/adult.data", folder / "adult.data")
        shutil.copy(ROOT / "examples/adult/models/lr.skops", folder / "lr.skops")
        (folder / "fairspec.toml").write_text("")
        spec = folder / "bench.fair"
        spec.write_text(spec_text(n))
        check_s, _, report = _median(lambda: check(spec), 1)
    if report.error or not report.verdicts:
        raise SystemExit(f"the bench spec did not check: {report.error} {[d.message for d in report.diagnostics]}")
    text_s, text_w, text = _median(lambda: _text(report), runs)
    render(report)  # warm: matplotlib's first import and font cache are not the report's cost
    html_s, html_w, page = _median(lambda: render(report), runs)
    peak = float("nan")
    if trace:  # tracemalloc slows the rendering several times over: its own run, not the timed ones
        tracemalloc.start()
        render(report)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux: the process's peak so far
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"report_{n}.html").write_text(page, encoding="utf-8")
    kinds = {}
    for v in report.verdicts:
        kinds[v.kind] = kinds.get(v.kind, 0) + 1
    return {"n": n, "check": check_s, "text": text_s, "html": html_s, "text_w": text_w, "html_w": html_w, "mb": len(page.encode()) / 1e6,
            "text_kb": len(text.encode()) / 1e3, "peak": peak / 1e6, "rss": rss, "svg": page.count("<svg"), "kinds": kinds}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--trace", action="store_true", help="also the rendering's peak allocation (tracemalloc)")
    args = ap.parse_args()
    print("| N | check CPU s | text CPU s | html CPU s | html/text | text wall s | html wall s | page MB | text KB | render peak MB (tracemalloc) | process peak RSS MB | charts | kinds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        r = measure(n, args.runs, args.keep, args.trace)
        kinds = ", ".join(f"{k} {c}" for k, c in sorted(r["kinds"].items()))
        print(f"| {r['n']:,} | {r['check']:.1f} | {r['text']:.2f} | {r['html']:.2f} | {r['html'] / r['text']:.1f} "
              f"| {r['text_w']:.2f} | {r['html_w']:.2f} "
              f"| {r['mb']:.2f} | {r['text_kb']:.0f} | {r['peak']:.0f} | {r['rss']:.0f} | {r['svg']} | {kinds} |", flush=True)


if __name__ == "__main__":
    main()
