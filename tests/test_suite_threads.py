"""The suite runs its BLAS and OpenMP pools at the thread count conftest.py sets (one, unless the
environment names another): small fits and products on a pool of threads only spun against the other
pytest-xdist worker (tests/test_pipeline_team.py took 3x the time)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")
SKLEARN = importlib.util.find_spec("sklearn") is not None   # its OpenMP pool (libgomp) is listed when it loads


def _pools() -> list[tuple[str, int]]:
    import numpy  # noqa: F401  - each library's pool is listed once it is loaded
    if SKLEARN:
        import sklearn.ensemble  # noqa: F401
    from threadpoolctl import threadpool_info

    return [(i["user_api"], i["num_threads"]) for i in threadpool_info()]


def _wanted(api: str) -> int:
    return int(os.environ["OPENBLAS_NUM_THREADS" if api == "blas" else "OMP_NUM_THREADS"])


def test_the_suites_blas_and_openmp_pools_have_the_thread_count_conftest_sets():
    pools = _pools()
    assert {api for api, _ in pools} >= ({"blas", "openmp"} if SKLEARN else {"blas"}), pools
    assert all(n == _wanted(api) for api, n in pools), pools


def test_a_subprocess_of_the_suite_has_them_too():
    code = ("import numpy\n" + ("import sklearn.ensemble\n" if SKLEARN else "")
            + "from threadpoolctl import threadpool_info\n"
            "print(sorted({(i['user_api'], i['num_threads']) for i in threadpool_info()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.strip() == str(sorted({(api, _wanted(api)) for api, _ in _pools()})), out
