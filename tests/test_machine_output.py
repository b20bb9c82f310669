"""Machine output is clean (issue 9, items 2 and 6).

* Under ``--format json`` stdout holds the JSON document and nothing else, whatever a
  solver prints: HiGHS writes its banner to file descriptor 1 when a model is created.
"""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli

PROVE_SPEC = """\
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
property prove_flip {
  forall x, x' : Plain
  require x.* == x'.* except {sex}
  ensure label(plain(x)) == label(plain(x'))
  using milp
  mode = prove
}
"""


def test_json_stdout_is_only_the_document_when_highs_runs(tmp_path):
    spec = tmp_path / "prove.fair"
    spec.write_text(PROVE_SPEC.replace("MODEL", str(FIXTURES / "models" / "people6.onnx")), encoding="utf-8")
    out = run_cli("check", spec, "--format", "json", timeout=600)
    assert out.returncode in (0, 1, 3), out.stdout[-2000:] + out.stderr[-2000:]
    doc = json.loads(out.stdout)               # the whole of stdout: one JSON document
    p = doc["properties"][0]
    assert p["name"] == "prove_flip" and p["backend"].startswith("milp")
    # what the solver printed went to stderr, not nowhere and not stdout
    assert "HiGHS" not in out.stdout
