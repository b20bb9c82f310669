"""A verdict's notes (``details.notes``; a distribution's unused table rows in
``details.distribution.notes``) reach every report a person reads: an indented ``note:`` line
under the verdict in text, a note paragraph in its HTML section, the finding's message in
SARIF / GitHub (after its ``;``, so the fingerprint is unchanged); JSON keeps them in details.
They were in JSON only: the text report dropped them."""

from __future__ import annotations

import json

import numpy as np

from conftest import FIXTURES, NOTED_DIST, NOTED_DIST_NOTE, people_decls, run_cli

PEOPLE = FIXTURES / "data" / "people.csv"

DIST = NOTED_DIST

NOTE = NOTED_DIST_NOTE


def test_a_note_is_in_every_format(tmp_path):
    spec = tmp_path / "spec.fair"
    spec.write_text(DIST)
    text = run_cli("check", spec)
    assert text.returncode == 1, text.stderr
    lines = text.stdout.splitlines()
    i = lines.index(f"  note: {NOTE}")
    assert lines[i - 1].startswith("sp: ")  # under the verdict's line
    doc = json.loads(run_cli("check", spec, "--format", "json").stdout)
    (v,) = doc["properties"]
    assert v["details"]["distribution"]["notes"] == [NOTE] and "notes" not in v["details"]
    sarif = json.loads(run_cli("check", spec, "--format", "sarif").stdout)
    (res,) = sarif["runs"][0]["results"]
    assert res["message"]["text"].startswith("property 'sp' is violated; ")
    assert res["message"]["text"].endswith(f"; note: {NOTE}")
    gh = run_cli("check", spec, "--format", "github").stdout
    assert f"; note: {NOTE}" in gh
    html = tmp_path / "r.html"
    run_cli("check", spec, "--html", html)
    assert "<p class=note>Note: p(Q) = 0.4 is not used: the table of &#x27;Q&#x27; conditions on P</p>" \
        in html.read_text()


def test_the_fingerprint_ignores_the_notes(tmp_path):
    from fairspec.report import ci
    from fairspec.verdict import Verdict

    spans = {}
    plain = Verdict("sp", "group_metric", "violated", value=0.5, reason="it fails")
    noted = Verdict("sp", "group_metric", "violated", value=0.5, reason="it fails", details={"notes": ["n 1"]})
    fp = [json.loads(ci.to_sarif([], [v], spans, spec=str(tmp_path / "s.fair")))["runs"][0]["results"][0]
          for v in (plain, noted)]
    assert fp[1]["message"]["text"] == fp[0]["message"]["text"] + "; note: n 1"
    assert fp[0]["partialFingerprints"] == fp[1]["partialFingerprints"]


def test_a_pba_note_under_its_verdict_and_max_cells_is_read(tmp_path):
    """PBA on a tree with max_cells = 1: every point's neighbourhood has more leaf combinations, so
    each is left unknown and a note says why. (max_cells, an option the registry declares without
    an Options field, was an internal error at lint: Options(max_cells=...) a TypeError.)"""
    import csv

    import skops.io as sio
    from sklearn.tree import DecisionTreeClassifier

    rows = list(csv.DictReader(PEOPLE.open()))
    X = np.array([[(float(r["age"]) - 18) / 62, r["sex"] == "F", r["sex"] == "M", "ABC".index(r["race"]),
                   r["member"] == "true", float(r["score"])] for r in rows], dtype=np.float64)
    y = np.array([r["hired"] == "yes" for r in rows], dtype=int)
    sio.dump(DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y), tmp_path / "tree.skops")
    spec = tmp_path / "pba.fair"
    spec.write_text(people_decls(PEOPLE, "P") + 'model m = sklearn("tree.skops")\n'
                    "encode P for m { age : minmax(lo = 18, hi = 80)  sex : onehot  race : code  member, score : raw }\n"
                    "property c { pba(m, flip sex, around people, delta {age: 20, score: 0.5}) >= 0.5\n"
                    "  points = 20  max_cells = 1 }\n")
    note = "20 points have more than 1 leaf combinations in their neighbourhood and were left unknown"
    text = run_cli("check", spec, "--allow-path", FIXTURES)
    assert "internal error" not in text.stdout + text.stderr, text.stderr
    lines = text.stdout.splitlines()
    i = lines.index(f"  note: {note}")
    assert lines[i - 1].startswith("c: 0 of 20 eligible points PBA-verified, 0 refuted, 20 unknown")
    doc = json.loads(run_cli("check", spec, "--allow-path", FIXTURES, "--format", "json").stdout)
    assert doc["properties"][0]["details"]["notes"] == [note]
