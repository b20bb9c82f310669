"""Session 37 audit of hostile input (brief h6): mutated specs, data and model files through lint and check.
Each test here failed before its fix.

* A rule whose numbers, scaled to one integer denominator, do not fit 64 bits (``P + Q - S >= 1e-22``)
  was an internal error (OverflowError, exit 4) in the distribution backend: it is now refused
  (unknown, with the reason) before any integer array is built.
* A skops file holding a scikit-learn transformer, clusterer or outlier detector (StandardScaler, KMeans,
  IsolationForest) passed lint clean while check refused it (exit 2): lint now says check's sentence (FS401)
  from the file's schema, without loading it.
* `fairspec fmt` of a spec whose block header ends in a comment, its `{` on the next line, put the `{` on the
  comment's line (swallowed by it) and exited 4 (an internal error of the concrete parser): the `{` keeps a
  line of its own."""

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


PEOPLE = """\
data d = csv("d.csv", label = hired == "yes")
features P from d {
  age    : int in [18, 80]
  sex    : {F, M}  protected
  score  : real in [0, 1]
}
model s = sklearn("m.skops")
encode P for s {
  sex : onehot
  age, score : raw
}
property q { statistical_parity(s, groups sex) <= 0.3 }
"""


@pytest.mark.parametrize("est, said", [
    ("preprocessing.StandardScaler()", "neither predict_proba nor decision_function"),
    ("cluster.KMeans(2, n_init=1)", "neither predict_proba nor decision_function"),
    ("ensemble.IsolationForest(n_estimators=2)", "an outlier detector"),
])
def test_lint_refuses_a_skops_transformer_clusterer_or_outlier_detector_as_check_does(tmp_path, est, said):
    import importlib

    import numpy as np
    sio = pytest.importorskip("skops.io")
    from fairspec.pipeline import check, lint

    mod, call = est.split(".", 1)
    obj = eval(call, {**vars(importlib.import_module(f"sklearn.{mod}"))})  # noqa: S307 - a fixed test table
    X = np.array([[20 + i % 50, i % 2, 1 - i % 2, (i % 10) / 10] for i in range(40)])
    sio.dump(obj.fit(X), tmp_path / "m.skops")
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "d.csv").write_text("age,sex,score,hired\n" + "".join(
        f"{20 + i % 50},{'FM'[i % 2]},{(i % 10) / 10},{'yes' if i % 3 else 'no'}\n" for i in range(40)))
    spec = tmp_path / "s.fair"
    spec.write_text(PEOPLE)
    errs = [d for d in lint(spec).diagnostics if d.is_error]
    assert [d.code for d in errs] == ["FS401"] and said in errs[0].message and "m.skops" in errs[0].message, errs
    rep = check(spec)
    assert rep.exit_code == 2 and said in " ".join([rep.error or ""] + [d.message for d in rep.diagnostics])


@pytest.mark.parametrize("decl", ["features F from d  # note\n{\n  a : bool\n}\n",
                                  "features F  # fairspec: ignore[FS427]\n\n{\n  a : bool\n}\n",
                                  "features F\n# own line\n{ a : bool }\n",
                                  "property p  # c\r\n{\r\n  statistical_parity(m, groups a) <= 0.1\r\n}\r\n"])
def test_fmt_keeps_a_block_brace_after_a_comment_off_the_comment(decl):
    from fairspec.syntax.format import format_text
    from fairspec.syntax.parser import parse_text

    once = format_text(decl, "c.fair")
    assert parse_text(once, "c.fair") == parse_text(decl, "c.fair")
    assert format_text(once, "c.fair") == once
    assert [ln.strip() for ln in once.splitlines() if "#" in ln] == [ln.strip() for ln in decl.splitlines() if "#" in ln]
