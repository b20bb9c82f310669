"""`fairspec lint` refuses what `fairspec check` refuses, with the same sentence, where the file shows it.

* An ONNX graph onnxruntime will not load though `onnx.load` reads it (an operator ONNX does not
  define, one newer than the opset the model imports, a node reading a value nothing defines, a node
  whose inputs must share an element type and do not) linted clean and check failed on it: lint now
  reads it from the file's bytes (peek_onnx.graph_problem, without onnx or onnxruntime) as FS401, and
  check's loader says the same sentence in place of onnxruntime's.
* An ONNX graph with no output, an output no node computes, a node on a cycle, or an input of shape
  [N, 0] (session 27) linted clean and check refused it: graph_problem / input_problem say each.
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


# onnxruntime-only refusals: onnx.checker.check_model passes each, onnxruntime will not load it (its type and
# shape inference, or no kernel), and lint says it from the file's bytes (peek_onnx.graph_problem)
def _output_declared_double(m):
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    return "its graph output 'logit' is declared double but computed in float"


def _weights_of_another_width(m):
    init = m.graph.initializer[0]                                  # W: [6, 1] -> [5, 1]
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init)[:5], "W"))
    return "multiplies 'x', 6 columns wide, by 'W' of shape [5, 1], whose inner dimension is 5"


def _transposed(m):
    m.graph.node[-1].attribute.append(helper.make_attribute("transB", 1))
    return "multiplies 'x', 6 columns wide, by 'W' of shape [6, 1] transposed, whose inner dimension is 1"


def _integer_gemm(m):
    for init in m.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype("int64"), init.name))
    gemm = m.graph.node[-1]
    gemm.input[0], gemm.output[0] = "xi", "zi"
    m.graph.node.insert(0, helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT64, name="to_int"))
    m.graph.node.append(helper.make_node("Cast", ["zi"], ["logit"], to=TensorProto.FLOAT, name="to_float"))
    return "computes in int64, an element type onnxruntime runs no Gemm in"


def _zipmap_of_doubles(m):
    """skl2onnx's default ZipMap after a float64 classifier: onnxruntime refuses it (ZipMap takes float only)."""
    for init in m.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype("float64"), init.name))
    gemm = m.graph.node[-1]
    gemm.input[0], gemm.output[0] = "xd", "zd"
    m.graph.node.insert(0, helper.make_node("Cast", ["x"], ["xd"], to=TensorProto.DOUBLE, name="to_double"))
    m.graph.node.extend([helper.make_node("Cast", ["zd"], ["logit"], to=TensorProto.FLOAT, name="to_float"),
                         helper.make_node("Sigmoid", ["zd"], ["pd"], name="sigmoid"),
                         helper.make_node("ZipMap", ["pd"], ["probs"], domain="ai.onnx.ml", name="zipmap",
                                          classlabels_int64s=[1])])
    m.graph.output.append(helper.make_value_info("probs", helper.make_sequence_type_proto(helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None)))))
    m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 1))
    return "node 'zipmap' (ZipMap) reads 'pd' in double, and ZipMap takes float only"


# graph inputs fairspec cannot feed: check's loader refused them from the file's signature, lint said nothing
def _input_of_rank_three(m):
    m.graph.input[0].type.tensor_type.shape.dim.add().dim_value = 1
    return "has shape [N, 6, 1]; fairspec needs an input of shape [N, width]"


def _integer_input(m):
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.INT64
    return "has element type 7; fairspec feeds float32 or float64 tensors"


# session 27's hostile walk: lint passed each, check refused it (onnxruntime, or the loader before it)
def _no_graph_output(m):
    del m.graph.output[:]
    return "declares no graph outputs"


def _output_nothing_computes(m):
    del m.graph.node[:]
    return "its graph output 'logit' is no graph input, no initializer and no node's output"


def _cycle(m):
    gemm = m.graph.node[-1]
    gemm.input[0], gemm.output[0] = "r", "pre"                     # Gemm reads Relu's output, Relu reads Gemm's
    m.graph.node.extend([helper.make_node("Relu", ["pre"], ["r"], name="relu"),
                         helper.make_node("Identity", ["pre"], ["logit"], name="out")])
    return "is on a cycle (a value it reads is computed from its own output), and an ONNX graph is acyclic"


def _input_of_no_column(m):
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 0
    return "has shape [N, 0]: no column; fairspec needs an input of shape [N, width], width at least 1"


ORT_ONLY = [_output_declared_double, _weights_of_another_width, _transposed, _integer_gemm, _zipmap_of_doubles]


@pytest.mark.parametrize("break_it", [_unknown_op, _too_new, _int_bias, _undefined, *ORT_ONLY, _input_of_rank_three,
                                      _integer_input, _no_graph_output, _output_nothing_computes, _cycle,
                                      _input_of_no_column])
def test_an_onnx_graph_onnxruntime_refuses_is_refused_by_lint_as_check_says(tmp_path, break_it):
    m = _people6()
    said = break_it(m)
    onnx.save(m, str(tmp_path / "bad.onnx"))
    onnx.load(str(tmp_path / "bad.onnx"))                          # onnx reads it
    if break_it in ORT_ONLY:
        onnx.checker.check_model(onnx.load(str(tmp_path / "bad.onnx")))   # and its checker passes it
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
    """An int64 bias cast to float first: the types are followed through Cast (its `to`), nothing is said."""
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


def _read(path):
    from fairspec import ir
    from fairspec.runtime.columnar import iter_arrow, read_table

    d = ir.Data("people", "csv", str(path), ",", True, None, ())
    whole = read_table(d)
    streamed = sum(t.n_read for t in iter_arrow(d, stream=True, batch_rows=1000))
    assert streamed == whole.n_read
    return whole


def _people_lines():
    return (FIXTURES / "data" / "people.csv").read_text().splitlines()


def test_a_quoted_line_break_at_the_end_of_a_block_is_one_row_in_lint_and_check(tmp_path):
    # pyarrow cut its 1 MiB blocks at the last line break of each, inside quotes or not: this file,
    # whose quoted line break is the last one before byte 1 MiB, linted clean and check refused it
    # ("line 37448 has 1 field, expected 7", the row's second half read as a row of its own)
    head, row = _people_lines()[:2]
    text = head + "\n" + (row + "\n") * (((1 << 20) - len(head) - 1) // (len(row) + 1) - 2)
    cut = row.rsplit(",", 1)[0] + ',"tr'
    text += cut + "x" * ((1 << 20) - len(text) - len(cut) - 1) + '\nain"\n' + (row + "\n") * 50
    assert text.rfind("\n", 0, 1 << 20) == (1 << 20) - 1 and text[(1 << 20) - 3:(1 << 20) + 4] == 'xx\nain"'
    (tmp_path / "block.csv").write_text(text)
    rows = text.count("\n") - 2                         # the header, and one row on two lines
    spec = _project(tmp_path, data="block.csv")
    assert _errors(spec) == []
    assert _read(tmp_path / "block.csv").n_read == rows


def test_a_quoted_line_break_in_a_header_name_is_the_header_in_lint_and_check(tmp_path):
    # pyarrow skipped the header as one line (skip_rows): the name's second line was read as a row
    lines = _people_lines()
    lines[0] = lines[0].replace("split", '"split\nnote"')
    lines[3] = lines[3].replace(",train", ',"tr\nain"')
    (tmp_path / "h.csv").write_text("\n".join(lines) + "\n")
    assert _errors(_project(tmp_path, data="h.csv")) == []
    t = _read(tmp_path / "h.csv")
    assert t.n_read == len(lines) - 1 and "split\nnote" in t.columns


@pytest.mark.parametrize("where", ["in the row", "before the row", "never closed"])
def test_a_ragged_row_and_quoted_line_breaks_are_one_sentence_in_lint_and_check(tmp_path, where):
    # the same line numbers from both readers: a row is named by the line it starts on, and one whose
    # quoted field holds line breaks by the line it ends on too (its quote may be closed: the sentence
    # no longer says "likely never closed" of a quote that is)
    lines = _people_lines()
    if where == "in the row":
        lines[4] = lines[4].replace(",train", ',"tr\nain",extra')
        said = "line 5 has 8 fields, expected 7; a quoted field on it holds a line break, so the row runs to line 6"
    elif where == "before the row":
        lines[4] = lines[4].replace(",train", ',"tr\nain"')
        lines[9] += ",extra"
        said = "line 11 has 8 fields, expected 7"
    else:
        lines[4] = lines[4].replace(",train", ',"train').replace(",test", ',"test')
        lines[6] = lines[6].replace(",train", ',train"').replace(",test", ',test"') + ",extra"
        said = "line 5 has 8 fields, expected 7; a quoted field on it holds a line break, so the row runs to line 7"
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    errs = _errors(_project(tmp_path, data="r.csv"))
    assert [d.code for d in errs] == ["FS404"], errs
    assert errs[0].message.startswith(f"data file {tmp_path / 'r.csv'} {said}"), errs[0].message
    assert errs[0].message.endswith(said) == (where == "before the row")
    from fairspec.runtime.data import DataError

    with pytest.raises(DataError) as e:
        _read(tmp_path / "r.csv")
    assert str(e.value) == errs[0].message


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


@pytest.mark.parametrize("op", sorted(__import__("fairspec.models.peek_onnx", fromlist=["x"]).NO_CPU_KERNEL))
def test_the_no_kernel_table_is_onnxruntimes(op):
    """fairspec/models/peek_onnx.NO_CPU_KERNEL lists element types the installed onnxruntime refuses to load a
    Gemm / MatMul in (lint refuses them from the file's bytes): each is refused, and float16, float and double
    are not (a newer onnxruntime that runs one of them fails here: drop it from the table)."""
    import numpy as np
    import onnxruntime as ort

    from fairspec.models.peek_onnx import NO_CPU_KERNEL

    def loads(t) -> bool:
        w = numpy_helper.from_array(np.ones((6, 1), dtype=helper.tensor_dtype_to_np_dtype(t)), "W")
        g = helper.make_graph([helper.make_node("Cast", ["x"], ["xc"], to=t), helper.make_node(op, ["xc", "W"], ["y"]),
                               helper.make_node("Cast", ["y"], ["out"], to=TensorProto.FLOAT)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 1])], [w])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        try:
            ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - onnxruntime's own exception types
            return False
        return True

    assert [t for t in sorted(NO_CPU_KERNEL[op]) if loads(t)] == []
    assert all(loads(t) for t in (TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE))


@pytest.mark.parametrize("what", ["dict", "list", "ndarray"])
def test_a_skops_file_of_no_model_is_fs401_in_lint_as_check_says(tmp_path, what):
    """A skops file holding a dict, a list or an array linted with only warning FS506 ("estimator dict is not
    a ReLU MLP"), exit 0, and check refused it: lint now says check's sentence, FS401 at the path."""
    import numpy as np
    import skops.io as sio

    obj = {"dict": {"coef": [1.0]}, "list": [1.0, 2.0], "ndarray": np.zeros(6)}[what]
    (tmp_path / "m.skops").write_bytes(sio.dumps(obj))
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("DATA", "people.csv").replace('onnx("MODEL", output = "logit")', 'sklearn("m.skops")'))
    errs = _errors(spec)
    assert [d.code for d in errs] == ["FS401"], errs
    assert errs[0].message == f"{tmp_path / 'm.skops'} holds a {what}, which has neither predict_proba nor decision_function"
    with pytest.raises(ModelLoadError) as e:
        load_model("sklearn", tmp_path / "m.skops")
    assert str(e.value) == errs[0].message


def test_an_onnx_output_of_three_dimensions_is_fs413_in_lint_as_in_check(tmp_path):
    """Session 27: an output declared [N, 1, 1] linted clean and check's loader refused it; both say FS413 now."""
    m = _people6()
    m.graph.output[0].type.tensor_type.shape.dim.add().dim_value = 1
    onnx.save(m, str(tmp_path / "bad.onnx"))
    spec = _project(tmp_path, model="bad.onnx")
    errs = _errors(spec)
    said = "output 'logit' has 3 dimensions; fairspec reads outputs of shape [N] or [N, K]"
    assert [d.code for d in errs] == ["FS413"] and said in errs[0].message, errs
    with pytest.raises(ModelLoadError) as e:
        load_model("onnx", tmp_path / "bad.onnx", output="logit")
    assert said in str(e.value)
    r = run_cli("check", spec, "--format", "json", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert [d["code"] for d in json.loads(r.stdout)["diagnostics"] if d["severity"] == "error"] == ["FS413"]
