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
    before = fb._proc_kib(__import__("os").getpid(), "VmRSS")
    a = np.ones(48 << 17)                          # 48 MiB of float64, touched
    out = peak.stop()
    del a
    assert set(out) >= {"bench_mib", "workers_mib", "max_worker_mib", "total_mib", "per_row"}
    assert out["total_mib"] >= out["bench_mib"] > 0
    if before is not None:                          # Linux: the row's high-water mark holds the array
        assert out["bench_mib"] >= before / 1024 + 40


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
