"""Session 37 audit of hostile input (brief h6): mutated specs, data and model files through lint and check.
Each test here failed before its fix.

* A rule whose numbers, scaled to one integer denominator, do not fit 64 bits (``P + Q - S >= 1e-22``)
  was an internal error (OverflowError, exit 4) in the distribution backend: it is now refused
  (unknown, with the reason) before any integer array is built."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

TINY = """\
features W {
  P : bool protected
  Q : bool
  S : bool
}

model clf = rule(P + Q - S >= THRESHOLD)

distribution d {
  p(Q | P) = 0.6
  p(Q | not P) = 0.3
  p(S) = 0.3
}

property sp {
  statistical_parity(clf, groups P, distribution d) <= 0.1
}
"""


@pytest.mark.parametrize("threshold", ["0.0000000000000000000001", "1e-30", "2 + 0.000000000000000001 * Q"])
def test_a_rule_whose_scaled_integers_overflow_is_refused_not_an_internal_error(tmp_path, threshold):
    (tmp_path / "fairspec.toml").write_text("")
    spec = tmp_path / "s.fair"
    spec.write_text(TINY.replace("THRESHOLD", threshold))
    r = run_cli("check", spec, "--format", "json", cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert r.returncode != 4 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    assert not doc.get("internal_errors"), doc
    (v,) = doc["properties"]
    assert "internal error" not in (v.get("reason") or ""), v
