"""Imported by Python at start-up when this folder is on PYTHONPATH (tests/solver_spy.py puts it there for a
`fairspec check` a test signals): the solver spy, in the check's process and in every worker it spawns."""

import os

if os.environ.get("FAIRSPEC_TEST_SOLVER_MARK"):
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "solver_spy", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "solver_spy.py"))
    _spy = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_spy)
    _spy.install()
