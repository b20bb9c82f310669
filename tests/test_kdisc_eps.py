"""k-discrimination's eps is a bucket width: each probability p goes in bucket floor(p / eps), one of
ceil(1 / eps). Lint accepted any eps >= 0, and check then ended in exit 4 on a tree model (certify's
exact count: "ValueError: eps must be > 0" for eps = 0, "OverflowError: Python int too large to
convert to C long" for eps = 1e-300), while the search said "eps must lie in (0, 1)" as an unknown.
Now lint says FS307 at the eps for eps outside (0, 1) and below 2^-62 (the buckets are counted in
64-bit integers); an eps just above that is checked as any other."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, people_decls, run_cli
from fairspec.pipeline import lint

SPEC = people_decls("people.csv", features="P") + '''model dt = sklearn("people_dt.skops")
encode P for dt { sex, race : onehot  age, member, score : raw }
property clusters {
  k_discrimination(dt, over {sex, race}, eps = EPS) < 4
}
'''


def _project(tmp_path, eps: str):
    for name, folder in (("people.csv", "data"), ("people_dt.skops", "models")):
        (tmp_path / name).write_bytes((FIXTURES / folder / name).read_bytes())
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("EPS", eps))
    return spec


@pytest.mark.parametrize("eps", ["0", "1", "2", "1e-300", "1e-19"])
def test_an_eps_that_is_no_bucket_width_is_fs307_at_the_eps(tmp_path, eps):
    spec = _project(tmp_path, eps)
    errs = [d for d in lint(spec).diagnostics if d.is_error]
    assert [d.code for d in errs] == ["FS307"], errs
    line = spec.read_text().splitlines()[errs[0].span.line - 1]
    assert line[errs[0].span.column - 1:].startswith(f"eps = {eps}"), (line, errs[0].span)
    assert ("must lie in (0, 1)" in errs[0].message) == (eps in ("0", "1", "2")), errs[0].message


@pytest.mark.parametrize("eps,code", [("0", 2), ("1e-300", 2), ("2.2e-19", 0)])
def test_check_never_ends_in_an_internal_error_on_eps(tmp_path, eps, code):
    r = run_cli("check", _project(tmp_path, eps), "--format", "json", cwd=tmp_path)
    assert r.returncode == code and "Traceback" not in r.stderr, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert "internal_errors" not in doc
    if code == 0:
        (p,) = doc["properties"]
        assert p["status"] == "holds" and p["how"] == "proved", p
