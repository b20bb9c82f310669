"""Options a property accepts are honoured by its backend (issue 9, item 7).

(PBA's `max_rows` is in test_pba_runner.py; the option schemas are fairspec/planning/registry.py.)
"""

from __future__ import annotations

import pytest

from conftest import FIXTURES

from test_machine_output import PROVE_SPEC

SPEC = (PROVE_SPEC.replace("  ensure label(plain(x)) == label(plain(x'))\n",
                           "  ensure |prob(plain(x)) - prob(plain(x'))| <= 0.9\n")
        .replace("  mode = prove\n", "  ENGINE\n"))


@pytest.mark.parametrize("engine", ["highs", "scip"])
def test_milp_engine_option_picks_the_solver(tmp_path, engine):
    from fairspec.pipeline import check

    spec = tmp_path / "e.fair"
    spec.write_text(SPEC.replace("MODEL", str(FIXTURES / "models" / "people6.onnx"))
                    .replace("ENGINE", f"engine = {engine}"), encoding="utf-8")
    (v,) = check(spec).verdicts
    assert v.details["engine"] == engine, v.details


def test_unknown_milp_engine_is_not_silently_highs(tmp_path):
    """An engine the backend does not have is a diagnostic at its span (never HiGHS in silence)."""
    from fairspec.pipeline import check

    spec = tmp_path / "e.fair"
    spec.write_text(SPEC.replace("MODEL", str(FIXTURES / "models" / "people6.onnx"))
                    .replace("ENGINE", "engine = gurobi"), encoding="utf-8")
    rep = check(spec)
    assert rep.exit_code == 2 and not rep.verdicts
    (d,) = [d for d in rep.diagnostics if d.is_error]
    assert "engine" in d.message and d.span.line == spec.read_text().splitlines().index("  engine = gurobi") + 1
