"""An int feature with a range wider than an enumerated domain holds points (int in [0, 10^15]) is
no small domain: the enumerations of individual fairness and k-discrimination materialised every
value of it before they tried their cut (pair_enumeration._values: "MemoryError: Unable to allocate
7.11 PiB", exit 4 from check). Now such a feature makes the domain not small at once, and the
property goes on to the data, the solvers or the search like any large domain."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, people_decls, run_cli

pytest.importorskip("onnxruntime")

DECLS = people_decls("people.csv", features="P").replace("int in [18, 80]", "int in [0, 1000000000000000]") + '''
model net = onnx("people6.onnx", output = "logit")
encode P for net { age : minmax(lo = 0, hi = 1000000000000000)  sex : onehot  race : code  member, score : raw }
'''
PROPS = {
    "individual": '''property p {
  forall x, x' : P
  require x.* == x'.* except {sex, race}
  require |x.age - x'.age| <= 2
  ensure |prob(net(x)) - prob(net(x'))| <= 0.05
  timeout = 5s
}
''',
    "k_discrimination": '''property p {
  k_discrimination(net, over {sex, race}, eps = 0.05) < 4
  search annealing for 2s
  timeout = 5s
}
''',
}


@pytest.mark.parametrize("kind", sorted(PROPS))
def test_a_wide_int_range_is_no_internal_error(tmp_path, kind):
    for name, folder in (("people.csv", "data"), ("people6.onnx", "models")):
        (tmp_path / name).write_bytes((FIXTURES / folder / name).read_bytes())
    (tmp_path / "s.fair").write_text(DECLS + PROPS[kind])
    r = run_cli("check", "s.fair", "--format", "json", cwd=tmp_path)
    assert r.returncode in (0, 1, 3) and "Traceback" not in r.stderr, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert "internal_errors" not in doc and "MemoryError" not in r.stdout, doc
