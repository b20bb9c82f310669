"""The smaller items of issue 9 (item 9): a did-you-mean for a misspelt keyword, the selection
rate named as such, property names whole in the table, --property without the other
properties' warnings, and lint of a pickled model importing no scikit-learn."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import FIXTURES, people_decls, run_cli


def test_misspelt_keyword_gets_did_you_mean(tmp_path):
    p = tmp_path / "t.fair"
    p.write_text("propery p {\n  statistical_parity(m, groups sex) <= 0.1\n}\n")
    out = run_cli("lint", p, "--format", "json")
    (d,) = json.loads(out.stdout)["diagnostics"]
    assert d["code"] == "FS101" and d["hint"] == "did you mean 'property'?"


def test_favoured_metrics_are_described_as_selection_rates():
    from fairspec.sema.properties import METRICS

    for m in ("most_favoured", "least_favoured"):
        assert "selection rate P(decision = 1 | group)" in METRICS[m]
        assert "positive rate (PPV)" not in METRICS[m]


def test_table_never_breaks_a_property_name():
    from rich.console import Console

    from fairspec.pipeline import Report
    from fairspec.report import print_text
    from fairspec.verdict import Verdict

    names = ["mlp_equalized_odds_by_sex_and_race_over_adult", "lr_statistical_parity_sex_older_groups"]
    rep = Report("s.fair", [], [Verdict(n, "group_metric", "unknown", reason="a long reason " * 8, backend="data",
                                        value=0.123456, bound=(0.1, 0.2)) for n in names])
    console = Console(width=100, record=True, color_system=None)
    print_text(rep, console)
    text = console.export_text()
    for n in names:
        assert n in text, text


SPEC = people_decls("DATA") + """\
model m = sklearn("MODEL", trust pickle)
encode People for m {
  age : standard
  sex : onehot
  race : code
  member, score : raw
}
model t = onnx("TANH")
encode People for t {
  age : standard
  sex : onehot
  race : code
  member, score : raw
}
property parity { statistical_parity(m, groups sex) <= 0.5 }
property same {
  forall x, x' : People
  require x.* == x'.* except {sex}
  ensure label(t(x)) == label(t(x'))
}
"""


def _spec(tmp_path):
    p = tmp_path / "s.fair"
    p.write_text(SPEC.replace("DATA", str(FIXTURES / "data" / "people.csv"))
                 .replace("MODEL", str(FIXTURES / "models" / "people6.pkl"))
                 .replace("TANH", str(FIXTURES / "models" / "people6_tanh.onnx")))
    return p


def test_property_option_shows_only_that_propertys_warnings(tmp_path):
    p = _spec(tmp_path)
    full = json.loads(run_cli("lint", p, "--format", "json").stdout)["diagnostics"]
    assert any(d["code"] == "FS506" for d in full)          # the Tanh network under the milp default
    out = run_cli("check", p, "--format", "json", "--property", "parity")
    doc = json.loads(out.stdout)
    assert [x["name"] for x in doc["properties"]] == ["parity"]
    assert not any(d["code"] == "FS506" for d in doc["diagnostics"]), doc["diagnostics"]


def test_lint_of_a_pickled_model_imports_no_scikit_learn(tmp_path):
    """Lint reads the pickle's width inertly; scikit-learn (seconds to import: scipy.stats and pandas
    come with it) is imported only when check loads the model, once."""
    p = _spec(tmp_path)
    code = ("import sys\nfrom fairspec.pipeline import lint\nres = lint(sys.argv[1])\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'joblib', 'scipy', 'pandas'}))")
    out = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
