"""Options a property accepts are honoured by its backend (issue 9, item 7).

(PBA's `max_rows` is in test_pba_runner.py; the option schemas are fairspec/planning/registry.py.)
"""

from __future__ import annotations

import pytest

from conftest import FIXTURES

SPEC = """\
features Plain {
  age    : int in [18, 80]
  sex    : {F, M} protected
  race   : {1, 2, 3}
  member : bool
  score  : real in [-1, 1e0]
}
model plain = onnx("MODEL")
encode Plain for plain {
  age : minmax(lo = 18, hi = 80)
  member : onehot
  race : code { 1 = 0, 2 = 1, 3 = 2 }
  sex : code
  score : standard(mean = -0.5, std = 0.25)
}
property close {
  forall x, x' : Plain
  require x.* == x'.* except {sex}
  ensure |prob(plain(x)) - prob(plain(x'))| <= 0.9
  using milp
  ENGINE
}
"""


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
