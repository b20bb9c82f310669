"""bench/fairify.py's per-row plumbing (issue 24): peak memory, loads, the cluster argument and the
committed markdown table. No Fairify data needed (the bench reads it from ../shared), no timing."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fb():
    spec = importlib.util.spec_from_file_location("bench_fairify_under_test", ROOT / "bench" / "fairify.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_peak_memory_sees_a_row_allocation(fb):
    peak = fb.PeakMemory()
    peak.start()
    a = np.ones(48 << 17)                          # 48 MiB of float64, touched
    # resident while the array lives (measured, not "before + 48 MiB": after other tests in this process the
    # allocator may reuse pages already resident, so the RSS need not grow by the array's size -- CI saw 32 MiB)
    during = fb._proc_kib(__import__("os").getpid(), "VmRSS")
    out = peak.stop()
    del a
    assert set(out) >= {"bench_mib", "workers_mib", "max_worker_mib", "total_mib", "per_row"}
    assert out["total_mib"] >= out["bench_mib"] > 0
    if during is not None:                          # Linux: the row's high-water mark holds the array
        assert out["bench_mib"] >= during / 1024 - 0.1


def test_loads_and_cluster_argument(fb):
    ld = fb.loadavg()
    assert ld is None or (len(ld) == 3 and all(x >= 0 for x in ld))
    assert fb.start_cluster(None) == (None, None)
    assert fb.start_cluster("tcp://127.0.0.1:8786") == ("tcp://127.0.0.1:8786", None)


def _row(model, attr, cov, wall, undecided="0"):
    return {"model": model, "protected": attr, "property": "sign", "coverage": cov, "wall_seconds": wall,
            "decide_seconds": wall / 2, "load_start": [5.0, 4.0, 3.0], "load_end": [7.5, 4.0, 3.0],
            "peak_memory": {"bench_mib": 160.0, "workers_mib": [60.0, 61.0], "total_mib": 281.0},
            "shares": {"certified": "1/2", "falsified": "0", "undecided": undecided,
                       "undecided_percent": 100 * float(eval(undecided))},
            "fairify_published": {"SAT": 41, "UNSAT": 0, "UNK": 5}}


def test_render_md_rows_and_network_summary(fb, tmp_path):
    doc = {"run": {"command": "python bench/fairify.py --workers 2", "commit": "abc1234", "finished": False,
                   "load_start": [5.0], "load_end": [7.0]},
           "rows": [_row("AC-1", "sex", {"partitions": 16000, "proved": 8000, "refuted": 7990, "undecided": 10},
                         2000.0, "1/100"),
                    _row("GC-1", "sex", {"partitions": 201, "proved": 2, "refuted": 199, "undecided": 0}, 12.0),
                    _row("GC-1", "age", {"partitions": 201, "proved": 2, "refuted": 199, "undecided": 0}, 15.0)]}
    p = tmp_path / "run.json"
    p.write_text(json.dumps(doc))
    md = tmp_path / "out.md"
    fb.main(["--render-md", str(p), "--md", str(md)])
    text = md.read_text()
    assert "python bench/fairify.py --workers 2" in text and "abc1234" in text and "still running" in text
    assert "| GC-1 | age | sign | 2 / 199 / 0 of 201 | 100% |" in text
    ac = next(ln for ln in text.splitlines() if ln.startswith("| AC-1 | sex |"))
    assert "8,000 / 7,990 / 10 of 16,000 | 99.94% | 50.00% | 0% | 1.00% |" in ac
    assert "41 / 0 / 5" in text and "160 + 60 + 61" in text and "5.0 / 7.5" in text
    summ = {n["model"]: n for n in fb.network_summary(doc["rows"])}
    assert summ["GC-1"]["decided"] == 402 and summ["GC-1"]["wall_seconds"] == 27.0
    assert summ["AC-1"]["undecided"] == 10
    lines = [ln for ln in text.splitlines() if ln.startswith("| GC-1 | sign |") or ln.startswith("| AC-1 | sign |")]
    assert lines[0].startswith("| GC-1") and lines[0].endswith("| yes |")    # GC before AC, decided in time
    assert lines[1].startswith("| AC-1") and lines[1].endswith("| not all run |")   # race was not run
    assert "| sex (race: not run) |" in lines[1]
    doc["rows"].append(_row("AC-1", "race", {"partitions": 16000, "proved": 8000, "refuted": 8000, "undecided": 0},
                            100.0))
    text = fb.render_md([doc])
    ac = next(ln for ln in text.splitlines() if ln.startswith("| AC-1 | sign |"))
    assert ac.endswith("| no |")                                                 # 10 undecided, over 1800 s
    assert "sign: 2 networks with every attribute run (and 0 in part); every partition decided on 1" in text


def test_render_md_union_of_runs_newest_row_counts_once(fb):
    """Several runs rendered together (the committed fairify_all.md): a row run again in a later run
    is shown with its run number and marked superseded, the per-network summary counts only the
    newest run's row, sums the attributes' wall times against the 30 minutes per network, and every
    row has Fairify's published counts beside it (of its sign property beside an eps row)."""
    old = {"run": {"command": "old run", "commit": "aaa1111", "started_utc": "2026-11-28T08:00:00Z", "prove": 1800.0,
                   "finished": False},
           "rows": [_row("AC-12", "race", {"partitions": 16000, "proved": 3726, "refuted": 7993, "undecided": 4281},
                         1813.0, "3/4"),
                    _row("AC-12", "sex", {"partitions": 16000, "proved": 8000, "refuted": 8000, "undecided": 0},
                         557.0)]}
    new = {"run": {"command": "new run", "commit": "bbb2222", "started_utc": "2026-11-28T11:30:00Z", "prove": 900.0,
                   "finished": True},
           "rows": [_row("AC-12", "race", {"partitions": 16000, "proved": 8000, "refuted": 8000, "undecided": 0},
                         1000.0),
                    dict(_row("BM-4", "age", {"partitions": 510, "proved": 378, "refuted": 132, "undecided": 0}, 40.0),
                         property="eps", fairify_published={"SAT": 1, "UNSAT": 30, "UNK": 6})]}
    text = fb.render_md([new, old])                  # listed in any order: runs are numbered by their start
    assert text.index("Run 1:") < text.index("old run") < text.index("Run 2:") < text.index("new run")
    race = [ln for ln in text.splitlines() if ln.startswith("| AC-12 | race | sign |")]
    assert len(race) == 2                            # both shown, the old one marked
    assert race[0].endswith("| 41 / 0 / 5 | 1 (1800), superseded |")
    assert "3,726 / 7,993 / 4,281" in race[0] and race[1].endswith("| 2 (900) |")
    assert all("| 41 / 0 / 5 |" in ln for ln in race)
    assert "| 1 / 30 / 6 (sign) | 2 (900) |" in text
    summ = {(n["model"], n["property"]): n for n in fb.network_summary(
        [dict(r, _run=1) for r in old["rows"]] + [dict(r, _run=2) for r in new["rows"]])}
    ac = summ[("AC-12", "sign")]
    assert ac["partitions"] == 32000 and ac["decided"] == 32000 and ac["undecided"] == 0
    assert ac["wall_seconds"] == 1557.0 and sorted(ac["attributes"]) == ["race", "sex"]
    line = next(ln for ln in text.splitlines() if ln.startswith("| AC-12 | sign |"))
    assert "| 32,000 of 32,000 | 0 | 1557.0 |" in line and line.endswith("| yes |")
    assert "over every row run (the newest run of a row run twice), 32,000 of 32,000" in text
    # the 30 minutes are per network: two attributes of 1,000 s each, every partition decided, miss it
    slow = {"run": {"command": "slow", "started_utc": "2026-11-28T12:00:00Z", "prove": 900.0},
            "rows": [_row("AC-12", "sex", {"partitions": 16000, "proved": 8000, "refuted": 8000, "undecided": 0},
                          1000.0)]}
    line = next(ln for ln in fb.render_md([old, new, slow]).splitlines() if ln.startswith("| AC-12 | sign |"))
    assert "| 2000.0 |" in line and line.endswith("| no |")


def test_undecided_partitions_listed_when_few(fb):
    """A row with few undecided partitions lists them (index, status, box on the partitioned inputs)
    for the engineers who work on exactly those; many are not listed."""
    from types import SimpleNamespace

    parts = [([0, 0, 0], [4, 9, 1]), ([5, 0, 0], [9, 9, 1]), ([10, 0, 0], [14, 9, 1])]
    cov = SimpleNamespace(undecided=2, features=(0,), parts=(("holds", 0.1), ("unknown", 10.0), ("skipped", 0.0)))
    und = fb.undecided_partitions(cov, parts, ["age", "hours", "sex"])
    assert und == [{"index": 1, "status": "unknown", "seconds": 10.0, "box": {"age": [5.0, 9.0]}},
                   {"index": 2, "status": "skipped", "seconds": 0.0, "box": {"age": [10.0, 14.0]}}]
    assert fb.undecided_partitions(SimpleNamespace(undecided=0, features=(0,), parts=(("holds", 0.1),) * 3),
                                   parts, ["age", "hours", "sex"]) is None
    assert fb.undecided_partitions(cov, parts, ["age", "hours", "sex"], limit=1) is None
    assert fb.undecided_partitions(cov, None, ["age", "hours", "sex"]) is None


def test_estimate_column_in_the_table_and_old_runs_render_blank(fb):
    """The undecided share's estimated unfair part (bench/fairify.py --estimate) is a column of the
    committed table, with its interval; a run from before the column (no ``estimate`` key) renders
    "-" there, and a row whose estimate has a reason says so. No solver."""
    est = {"estimated": True, "samples": 10_000, "seed": 0, "confidence": 0.95,
           "estimated_unfair_in_undecided": {"estimate_percent": 9.2, "interval_percent": [8.85, 9.56]},
           "estimated_unfair_of_undecided": {"estimate_percent": 20.73, "interval_percent": [19.94, 21.54]}}
    new = dict(_row("GC-1", "age", {"partitions": 201, "proved": 2, "refuted": 199, "undecided": 0}, 15.0,
                    "2219/5000"), estimate=est)
    old = _row("GC-1", "sex", {"partitions": 201, "proved": 2, "refuted": 199, "undecided": 0}, 12.0, "1/4")
    none = dict(_row("BM-1", "age", {"partitions": 510, "proved": 510, "refuted": 0, "undecided": 0}, 9.0, "1/8"),
                estimate={"estimated": False, "reason": "the undecided boxes do not match the shares"})
    text = fb.render_md([{"run": {"command": "c", "finished": True}, "rows": [new, old, none]}])
    header = next(ln for ln in text.splitlines() if ln.startswith("| network | attr |"))
    assert "| unfair, sampled (95%) | undecided and unfair, estimated (95%) | wall s |" in header
    cells = {ln.split(" | ")[1]: ln for ln in text.splitlines() if ln.startswith("| GC-1 |") and " of " in ln}
    assert "| 44.38% | - | 9.20 [8.85, 9.56] (20.73% of undecided) | 15.0 |" in cells["age"]
    assert "| 25.00% | - | - | 12.0 |" in cells["sex"]
    bm = next(ln for ln in text.splitlines() if ln.startswith("| BM-1 | age | sign |"))
    assert "none: the undecided boxes do not match the" in bm
    # every row of the table has as many cells as the header
    n = header.count("|")
    assert all(ln.count("|") == n for ln in text.splitlines() if ln.startswith(("| GC-1 | age | sign | 2",
                                                                                 "| BM-1 | age | sign | 5")))


def test_bab_sample_variants():
    """bench/diag/bab_sample.py's variants: ``base``, or engine constants as Python literals joined by
    ``;``; anything else stops the script with a sentence, not a traceback."""
    spec = importlib.util.spec_from_file_location("bab_sample_under_test", ROOT / "bench" / "diag" / "bab_sample.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod._parse_variant("base") == {}
    assert mod._parse_variant("BAND_SPLIT=0.5; STRATEGY='relu';TIGHTEN_DEPTHS=(0, 1)") == \
        {"BAND_SPLIT": 0.5, "STRATEGY": "relu", "TIGHTEN_DEPTHS": (0, 1)}
    for bad in ("BAND_SPLIT", "=1", "BAND_SPLIT=;", "STRATEGY=relu", "BAND_SPLIT=(0.5"):
        with pytest.raises(SystemExit):
            mod._parse_variant(bad)
