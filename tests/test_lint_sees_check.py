"""`fairspec lint` refuses what `fairspec check` refuses, with the same sentence, where the file shows it.

* An ONNX graph onnxruntime will not load though `onnx.load` reads it (an operator ONNX does not
  define, one newer than the opset the model imports, a node reading a value nothing defines, a node
  whose inputs must share an element type and do not) linted clean and check failed on it: lint now
  reads it from the file's bytes (peek_onnx.graph_problem, without onnx or onnxruntime) as FS401, and
  check's loader says the same sentence in place of onnxruntime's.
* A CSV file with a row of another field count linted clean (lint reads 200 rows, through a reader
  that does not count fields) and check refused it: lint now counts the fields of every row (the
  first 64 MiB) as FS404, in check's words.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, people_decls, run_cli
from fairspec.models import ModelLoadError, load_model
from fairspec.pipeline import lint

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SPEC = people_decls("DATA", features="P") + '''model net = onnx("MODEL", output = "logit")
encode P for net { age : standard  sex : onehot  race : code  member, score : raw }
property parity {
  statistical_parity(net, groups sex) <= 0.99
}
'''


def _project(tmp_path, model="people6.onnx", data="people.csv"):
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    (tmp_path / "people6.onnx").write_bytes((FIXTURES / "models" / "people6.onnx").read_bytes())
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("MODEL", model).replace("DATA", data))
    return spec


def _errors(spec):
    return [d for d in lint(spec).diagnostics if d.is_error]


def _people6():
    return onnx.load(str(FIXTURES / "models" / "people6.onnx"))     # one Gemm: logit = x W + B, opset 17


def _unknown_op(m):
    m.graph.node[-1].op_type = "FrobnicateX"
    return "uses operator 'FrobnicateX', which is no operator of ONNX's domain ai.onnx"


def _too_new(m):
    gemm = m.graph.node[-1]
    gemm.output[0] = "pre"
    m.graph.node.append(helper.make_node("Gelu", ["pre"], ["logit"], name="gelu"))   # Gelu: opset 20
    return "uses operator 'Gelu', which is no operator of ONNX's domain ai.onnx at opset 17"


def _int_bias(m):
    init = m.graph.initializer[-1]
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype("int64"), init.name))
    return f"reads inputs of different element types ('x' float, 'W' float, '{init.name}' int64)"


def _undefined(m):
    m.graph.node[-1].input[2] = "nowhere"
    return "reads 'nowhere', which is no graph input, no initializer and no node's output"


@pytest.mark.parametrize("break_it", [_unknown_op, _too_new, _int_bias, _undefined])
def test_an_onnx_graph_onnxruntime_refuses_is_refused_by_lint_as_check_says(tmp_path, break_it):
    m = _people6()
    said = break_it(m)
    onnx.save(m, str(tmp_path / "bad.onnx"))
    onnx.load(str(tmp_path / "bad.onnx"))                          # onnx reads it
    spec = _project(tmp_path, model="bad.onnx")
    errs = _errors(spec)
    assert [d.code for d in errs] == ["FS401"], errs
    assert str(tmp_path / "bad.onnx") in errs[0].message and said in errs[0].message, errs[0].message
    with pytest.raises(ModelLoadError) as e:                      # check's loader: the same sentence
        load_model("onnx", tmp_path / "bad.onnx", output="logit")
    assert str(e.value) == errs[0].message
    r = run_cli("check", spec, "--format", "json", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert [d["code"] for d in doc["diagnostics"] if d["severity"] == "error"] == ["FS401"], doc


def test_a_graph_that_casts_before_it_mixes_types_is_not_refused(tmp_path):
    """An int64 bias cast to float first: the types are not followed through Cast, nothing is said."""
    m = _people6()
    init = m.graph.initializer[-1]
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype("int64"), "B64"))
    m.graph.node.insert(0, helper.make_node("Cast", ["B64"], ["B"], to=TensorProto.FLOAT, name="cast"))
    onnx.save(m, str(tmp_path / "cast.onnx"))
    spec = _project(tmp_path, model="cast.onnx")
    assert _errors(spec) == []
    load_model("onnx", tmp_path / "cast.onnx", output="logit")     # onnxruntime loads it


def _ragged_csv(tmp_path, quoted: bool) -> str:
    lines = (FIXTURES / "data" / "people.csv").read_text().splitlines()
    lines[-3] = lines[-3] + ",extra"               # the third row from the end: past lint's 200-row sample
    if quoted:
        lines[4] = lines[4].replace(",A,", ',"A",', 1)
    (tmp_path / "ragged.csv").write_text("\n".join(lines) + "\n")
    return f"line {len(lines) - 2} has 8 fields, expected 7"


@pytest.mark.parametrize("quoted", [False, True])
def test_a_ragged_csv_is_refused_by_lint_with_checks_sentence(tmp_path, quoted):
    said = _ragged_csv(tmp_path, quoted)
    spec = _project(tmp_path, data="ragged.csv")
    errs = _errors(spec)
    assert [d.code for d in errs] == ["FS404"], errs
    assert errs[0].message == f"data file {tmp_path / 'ragged.csv'} {said}", errs[0].message
    from fairspec import ir
    from fairspec.runtime.columnar import read_table
    from fairspec.runtime.data import DataError

    with pytest.raises(DataError) as e:              # check's reader (pyarrow) says the same
        read_table(ir.Data("people", "csv", str(tmp_path / "ragged.csv"), ",", True, None, ()))
    assert str(e.value) == errs[0].message
    r = run_cli("lint", spec, "--format", "json", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr


def test_blank_lines_and_a_comment_trailer_are_not_ragged(tmp_path):
    """Rows check's reader skips (a blank line, adult.test's '|1x3 Cross validator') are not counted."""
    text = (FIXTURES / "data" / "people.csv").read_text()
    (tmp_path / "trail.csv").write_text(text.replace("\n", "\n\n", 3) + "|1x3 Cross validator\n")
    spec = _project(tmp_path, data="trail.csv")
    assert _errors(spec) == []


def test_the_operator_table_is_onnxs():
    """fairspec/models/onnx_ops.py lists, up to the opset it covers, exactly the operators the
    installed onnx defines, each from its first version (regenerate it when onnx adds an opset)."""
    import onnx.defs

    from fairspec.models.onnx_ops import FIRST_VERSION, LATEST

    first: dict[str, dict[str, int]] = {d: {} for d in FIRST_VERSION}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in first and s.since_version <= LATEST[s.domain]:
            first[s.domain][s.name] = min(first[s.domain].get(s.name, s.since_version), s.since_version)
    assert first == FIRST_VERSION
