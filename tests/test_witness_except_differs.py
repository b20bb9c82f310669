"""A witness completed with a feature only the pre-condition reads (pre_relax.complete_witness) is a pair the
property compares: a feature after ``except`` differs. Review of session 33 (r_h3, R1): a tree enumeration decided
the relaxed property, and the completion filled ``z`` (read by no model input) with the first values meeting
``x.z == P`` -- (P, P) -- so the printed witness differed only in ``n``, which is no feature after ``except``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fairspec.cli import main as cli_main


def _spec(table: str) -> str:
    return ("features F {\n  g : {A, B, C}  protected\n  z : {P, Q}\n  n : int in [0, 3]\n}\n"
            "model m = sklearn(\"m.skops\")\n"
            "encode F for m {\n  g : code {" + table + "}\n  n : raw\n}\n"
            "property p {\n  forall x, x' : F\n  require x.* == x'.* except {g, z}\n  require |x.n - x'.n| <= 1\n"
            "  require x.g == A and x'.g == A and x.z == P\n  ensure label(m(x)) == label(m(x'))\n}\n")


@pytest.mark.parametrize("table", ["A = 0, B = 1, C = 2", "A = 0, B = 0, C = 1"])
def test_a_completed_witness_differs_after_except(tmp_path, monkeypatch, capsys, table):
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.sklearn_model import import_skops_io

    X = np.array([[c, n] for c in (0, 1) for n in range(4)], dtype=float)
    import_skops_io().dump(DecisionTreeClassifier(random_state=0).fit(X, (X[:, 1] >= 2).astype(int)),
                           str(tmp_path / "m.skops"))
    (tmp_path / "s.fair").write_text(_spec(table))
    monkeypatch.chdir(tmp_path)
    code = cli_main(["check", "s.fair", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    (p,) = doc["properties"]
    # truly violated: (A, P, n=2) and (A, Q, n=1) differ in z (after except), n within 1, label 1 vs 0
    assert code == 1 and p["status"] == "violated", p
    fx, fy = p["witness"]["features"], p["witness"]["features_prime"]
    assert fx["g"] == fy["g"] == "A" and {fx["z"], fy["z"]} == {"P", "Q"}, (fx, fy)
    assert (fx if fx["z"] == "P" else fy)["z"] == "P" and abs(fx["n"] - fy["n"]) <= 1 and \
        (fx["n"] >= 2) != (fy["n"] >= 2), (fx, fy)
