"""Session 37 audit (h6, round 2): a verdict does not depend on how the check runs -- in particular, what a
long-lived process (the editor server, a notebook calling the API twice, a Dask cluster serving many
checks) read from a file before is never reused once the file has changed.

* A Dask worker kept the state an ``init=(factory, args)`` built (k-discrimination's search loads the spec's
  model and data with it) under the key ``("init", init)``, equal by value from one map to the next: a
  second check of the same spec on the same cluster (its workers outlive a `fairspec check --cluster`)
  searched the model as its file was at the first check. A local pool builds it anew per map; so does Dask now.
* fairspec.filecache (on in `fairspec lsp`) and the server's spec-text cache (fairspec.lsp.disk) knew a file's
  state by its size and modification time (and inode): a rewrite in place keeping both (`cp -p` onto the
  file, an editor restoring the time, `touch -d`) was read from the cache. The status-change time is now
  part of the state (a rewrite moves it; nobody can set it), and a file that changed within the last two
  seconds (one tick of a coarse clock) is not cached at all.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _read_state(path: str) -> str:  # a Dask init factory: the state is the file's text
    return Path(path).read_text()


def _state_job(state, item):
    return state


def _rewrite_in_place(p: Path, text: str) -> None:
    """Rewrite ``p`` as `cp -p` onto it does: the same inode, the same size and the same modification time."""
    st = os.stat(p)
    assert len(text.encode()) == st.st_size
    with open(p, "r+b") as f:
        f.write(text.encode())
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(p)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)


def test_dask_init_state_is_built_anew_for_each_map(tmp_path):
    """Failed before the fix: the second map answered 'old' (the state built by the first map's equal init)."""
    distributed = pytest.importorskip("distributed")
    from fairspec.runtime.dask_executor import DaskExecutor

    f = tmp_path / "state.txt"
    f.write_text("old")
    init = (_read_state, (str(f),))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=50) as lc:
        ex = DaskExecutor(lc.scheduler_address)
        try:
            assert ex.map(_state_job, [1, 2], init=init) == ["old", "old"]
            f.write_text("new")
            assert ex.map(_state_job, [1, 2], init=init) == ["new", "new"]
        finally:
            ex.shutdown()


@pytest.fixture
def cache_on():
    from fairspec import filecache

    was = filecache.ENABLED
    filecache.enable()
    filecache.clear()
    yield filecache
    filecache.ENABLED = was
    filecache.clear()


def test_data_sample_rewritten_with_same_size_and_mtime_is_read_again(tmp_path, cache_on):
    """Failed before the fix: the second look read the first rows (1,2) from the cache."""
    from fairspec import ir
    from fairspec.runtime import data

    p = tmp_path / "d.csv"
    p.write_text("a,b\n1,2\n")
    d = ir.Data("d", "csv", str(p))
    assert data.column_names(d) == (["a", "b"], [["1", "2"]])
    _rewrite_in_place(p, "a,b\n3,4\n")
    assert data.column_names(d) == (["a", "b"], [["3", "4"]])


def test_old_file_is_still_cached_and_its_ctime_tells_a_rewrite(tmp_path, cache_on, monkeypatch):
    """With the two-second rule off, the status-change time alone tells the in-place rewrite; a file that did
    not change is read once (the cache still serves the editor)."""
    from fairspec import ir
    from fairspec.runtime import data

    monkeypatch.setattr(cache_on, "RECENT_NS", 0)
    p = tmp_path / "d.csv"
    p.write_text("a,b\n1,2\n")
    d = ir.Data("d", "csv", str(p))
    calls = []
    real = data._open_rows
    monkeypatch.setattr(data, "_open_rows", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    assert data.column_names(d) == (["a", "b"], [["1", "2"]])
    assert data.column_names(d) == (["a", "b"], [["1", "2"]])
    assert len(calls) == 1
    before = os.stat(p).st_ctime_ns
    while True:  # the clock of the file system moves on (a few ms; never a verdict's condition)
        _rewrite_in_place(p, "a,b\n3,4\n")
        if os.stat(p).st_ctime_ns != before:
            break
    assert data.column_names(d) == (["a", "b"], [["3", "4"]])


def test_lsp_disk_text_rewritten_with_same_size_and_mtime_is_read_again(tmp_path):
    """The editor server's text of a spec no open document holds (an imported library). Failed before the fix."""
    from fairspec.lsp import disk

    p = tmp_path / "lib.fair"
    p.write_text("# one\n")
    assert disk.disk_text(str(p)) == "# one\n"
    _rewrite_in_place(p, "# two\n")
    assert disk.disk_text(str(p)) == "# two\n"


def test_a_file_loaded_by_two_workers_is_listed_once():
    """`--workers 2` / `--cluster`: each worker loads the model and data its properties need, and the report listed
    each load (the model twice, the data twice) where a serial run lists each file once. Failed before the fix."""
    from types import SimpleNamespace

    from fairspec.pipeline import Report, _merge_out
    from fairspec.verdict import Verdict

    model = {"what": "model", "name": "clf", "file": "/m.skops", "seconds": 1.0, "input_order": "names"}
    table = {"what": "data", "name": "test", "file": "/d.csv", "seconds": 0.1}
    report = Report(spec=None, diagnostics=[])
    for name, seconds in (("p", 1.0), ("q", 2.0)):  # the same files, loaded in two worker processes
        prop = SimpleNamespace(name=name)
        out = {"verdict": Verdict(name=name, kind="metric", status="unknown", reason="a test"),
               "loads": [{**model, "seconds": seconds}, {**table, "seconds": seconds / 10}]}
        _merge_out(report, prop, out)
    assert [(x["what"], x["name"], x["seconds"]) for x in report.loads] == [("model", "clf", 1.0), ("data", "test", 0.1)]


_SECOND_SIGNAL_WHILE_WRITING = r"""
import os, signal, sys, time
from pathlib import Path
from fairspec import interrupt
from fairspec.files import Roots, safe_write

target = Path(sys.argv[1])

def write(tmp):
    tmp.write_text("<html>half")             # the report is being written to its temporary file...
    os.kill(os.getpid(), signal.SIGINT)      # ...when the user presses Ctrl-C twice
    os.kill(os.getpid(), signal.SIGINT)
    deadline = time.monotonic() + 120        # the watcher thread ends the process (os._exit) meanwhile
    while time.monotonic() < deadline:
        time.sleep(0.01)
    sys.exit(99)

with interrupt.installed(defer=True):
    safe_write(target, write, Roots.for_spec(target))
"""


def test_second_signal_while_writing_a_report_leaves_no_temporary_file(tmp_path):
    """A second Ctrl-C / SIGTERM ends the process at once (os._exit), also while `--html` is being written: the
    target kept its old content (written atomically), but the temporary file beside it stayed in the user's
    folder (`.r.html.XXXX.tmp`). Failed before the fix."""
    import subprocess
    import sys

    target = tmp_path / "r.html"
    target.write_text("<html>old report</html>")
    r = subprocess.run([sys.executable, "-c", _SECOND_SIGNAL_WHILE_WRITING, str(target)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 130, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert target.read_text() == "<html>old report</html>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_worker_state_names_files_as_the_serial_run_does(tmp_path):
    """The workers' copy of the spec made its paths absolute with os.path.abspath, which also drops `x/..`: a
    model declared as "../adult/models/dt.skops" was listed under `loads` as ".../worked/../adult/models/dt.skops"
    by a serial run and ".../adult/models/dt.skops" by `--workers 2` / `--cluster` (and `link/..` is not always
    the folder above). Failed before the fix."""
    from fairspec import ir
    from fairspec.pipeline import _absolute

    model = str(tmp_path / "worked" / ".." / "m.skops")
    table = str(tmp_path / "worked" / ".." / "d.csv")
    spec = ir.Spec(file=str(tmp_path / "worked" / "s.fair"), models=(ir.Model("m", "sklearn", model),),
                   datasets=(ir.Data("d", "csv", table),), feature_sets=(), encodings=(), groups=(), distributions=(),
                   properties=())
    out = _absolute(spec)
    assert (out.models[0].path, out.datasets[0].path) == (model, table)
