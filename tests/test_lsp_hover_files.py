"""Hover on a model's or a data set's file path (the file's format as fairspec reads it, its size, what
lint read from it; nothing unpickled; a missing file says so) and on a policy's own property names
(its metrics, where it is applied: in the spec, or in an open spec importing the library)."""

from __future__ import annotations

import asyncio
import pickle
import shutil

import pytest

from conftest import EXAMPLES
from fairspec.lsp import analysis as A

ADULT = EXAMPLES / "adult" / "adult.fair"


def _hover(path, text, needle, offset=1, importers=()):
    idx = A.analyse(path, {str(path.resolve()): text})
    at = text.index(needle) + offset
    line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    return A.hover(idx, idx.path, line, col, importers=importers)


def test_a_model_files_path_tells_its_format_size_inputs_and_classes():
    text = ADULT.read_text(encoding="utf-8")
    got = _hover(ADULT, text, '"models/lr.skops"')
    assert got.startswith("**model file** `models/lr.skops`: a scikit-learn skops file (read without unpickling), ")
    assert "- inputs: 46 columns: age, education-num," in got and "- a binary classifier: classes 0, 1" in got, got
    got = _hover(ADULT, text, '"models/mlp.onnx"')
    assert got.startswith("**model file** `models/mlp.onnx`: an ONNX graph, 4436 bytes"), got
    assert "- inputs: 46 columns" in got and "- output: logit" in got, got


def test_a_data_files_path_tells_its_format_size_and_columns():
    got = _hover(ADULT, ADULT.read_text(encoding="utf-8"), '"data/adult.data"')
    assert got.startswith("**data file** `data/adult.data`: a CSV file, ") and "KiB" in got, got
    assert "- 15 columns: `age`, `workclass`," in got, got


def test_a_missing_file_says_so(tmp_path):
    spec = tmp_path / "s.fair"
    text = 'model m = sklearn("gone.skops")\ndata d = csv("nothere.csv")\n'
    spec.write_text(text, encoding="utf-8")
    assert _hover(spec, text, '"gone.skops"') == f"**model file** `gone.skops`: no such file ({tmp_path / 'gone.skops'})"
    assert _hover(spec, text, '"nothere.csv"').startswith("**data file** `nothere.csv`: no such file")


class _Boom:
    def __reduce__(self):
        import os

        return (os.system, (f"touch {_Boom.marker}",))


def test_a_pickle_is_never_unpickled_for_a_hover(tmp_path):
    _Boom.marker = tmp_path / "ran"
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(_Boom()))
    spec = tmp_path / "s.fair"
    text = 'model m = sklearn("m.pkl")\n'
    spec.write_text(text, encoding="utf-8")
    got = _hover(spec, text, '"m.pkl"')
    assert got.startswith("**model file** `m.pkl`: a scikit-learn pickle (loaded only under `trust pickle`"), got
    assert not _Boom.marker.exists()


def test_a_policys_property_name_tells_its_metrics_and_where_it_is_applied():
    lib = next(m.file for m in A.analyse(ADULT).modules if m.file.endswith("four_fifths.fair"))
    from pathlib import Path

    text = Path(lib).read_text(encoding="utf-8")
    alone = _hover(Path(lib), text, "property disparate_impact", len("property "))
    assert alone.startswith("**property** `disparate_impact` of policy `four_fifths`: disparate_impact\n"), alone
    assert "(none open does)" in alone
    spec = A.analyse(ADULT)
    got = _hover(Path(lib), text, "property disparate_impact", len("property "), importers=[spec])
    assert "- applied as `mlp_sex.disparate_impact` in adult.fair: group metric, planned backend: data" in got, got
    assert "- applied as `lr_sex_race.disparate_impact` in adult.fair" in got, got


def test_over_stdio_the_library_property_hover_reads_the_open_importer(tmp_path):
    pytest.importorskip("pygls")
    from fairspec.lsp.client import Session

    shutil.copytree(EXAMPLES / "adult", tmp_path / "adult", ignore=shutil.ignore_patterns("train.py"))
    lib = tmp_path / "adult" / "lib.fair"
    lib.write_text("policy near(m: model, F: features) {\n  property near {\n    forall x, x' : F\n"
                   "    require x.* == x'.* except {sex}\n    ensure label(m(x)) == label(m(x'))\n  }\n}\n",
                   encoding="utf-8")
    spec = tmp_path / "adult" / "adult.fair"
    spec.write_text(spec.read_text(encoding="utf-8").replace(
        'import "fairspec/policies/four_fifths.fair"', 'import "fairspec/policies/four_fifths.fair"\nimport "lib.fair"')
        + "\napply near(mlp, Applicant) as mlp_near\n", encoding="utf-8")

    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(lib)
            await s.opened(spec)
            h = await s.hover(uri, s.pos(text, "property near", len("property ") + 1))
            assert "- applied as `mlp_near.near` in adult.fair: individual fairness" in h.contents.value, h
            h = await s.hover(spec.as_uri(), s.pos(spec.read_text(encoding="utf-8"), '"models/dt.skops"', 1))
            assert h.contents.value.startswith("**model file** `models/dt.skops`: a scikit-learn skops file"), h

    asyncio.run(scenario())
