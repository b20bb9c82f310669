"""The papers' worked examples as runnable specs (examples/worked/*.fair).

Every spec states its expected answers in header comments,

    # expected: NAME = VALUE [+- TOLERANCE]  STATUS

(STATUS: ``holds (proved)``, ``holds (estimated)``, ``violated`` or
``unknown``; the tolerance defaults to 1e-4), and ``fairspec check --format
json`` must report exactly those values in ``value``.  Exact answers are in
../shared/bench/REFERENCE.md: FVGM Ex. 3.1 (0.55 / 0.14) and 3.2 (0.65 /
0.105), Justicia Ex. 2 (0.4344; 0.1881 / 0.7234) and Ex. 3 (0.4631; 0.4344),
Synthetic Example 1 regenerated (DI within 0.01 of the analytic 0.262).
"""

from __future__ import annotations

import itertools
import json
import re
import sys

import pytest

from conftest import EXAMPLES, run_cli

WORKED = EXAMPLES / "worked"
EXPECT = re.compile(r"^#\s*expected:\s*(?P<name>[\w.]+)\s*=\s*(?P<value>-?[0-9.]+(?:[eE][-+]?\d+)?)"
                    r"(?:\s*\+-\s*(?P<tol>[0-9.]+(?:[eE][-+]?\d+)?))?\s+(?P<status>holds \((?:proved|estimated)\)"
                    r"|violated|unknown)\s*$")


def expectations(path):
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = EXPECT.match(line.strip())
        if m:
            out[m["name"]] = (float(m["value"]), float(m["tol"] or 1e-4), m["status"])
    return out


def worked_specs():
    return sorted(p for p in WORKED.glob("*.fair") if expectations(p))


def test_the_worked_examples_are_there():
    names = {p.stem for p in worked_specs()}
    assert {"fvgm_3_1", "fvgm_3_2", "fvgm_influence", "justicia_2", "justicia_3", "synthetic_1"} <= names


@pytest.mark.parametrize("spec", worked_specs(), ids=lambda p: p.stem)
def test_worked_spec(spec):
    want = expectations(spec)
    r = run_cli("check", "--format", "json", spec, cwd=WORKED)
    assert "Traceback" not in r.stderr, r.stderr
    report = json.loads(r.stdout)
    assert report["diagnostics"] == [], report["diagnostics"]
    assert "internal_errors" not in report, report["internal_errors"]
    got = {p["name"]: p for p in report["properties"]}
    assert set(got) == set(want), f"every property of {spec.name} states its expected answer"
    for name, (value, tol, status) in want.items():
        p = got[name]
        label = f"{p['status']} ({p['how']})" if p["how"] else p["status"]
        assert label == status, f"{name}: {label} ({p['reason']})"
        assert p["value"] == pytest.approx(value, abs=tol), f"{name}: {p['value']} != {value} +- {tol}"
        assert p["backend"] in ("ssat", "dp", "elimination")
    statuses = {p["status"] for p in report["properties"]}
    assert r.returncode == (1 if "violated" in statuses else 3 if "unknown" in statuses else 0)


def test_declared_distributions_are_proved_and_estimated_ones_carry_their_bound():
    r = run_cli("check", "--format", "json", WORKED / "synthetic_1.fair", cwd=WORKED)
    props = json.loads(r.stdout)["properties"]
    for p in props:
        eb = p["details"]["error_bound"]
        assert eb["n_rows"] == 50_000
        add = eb["value_additive"]
        assert p["bound"] == pytest.approx([max(0.0, p["value"] - add), min(1.0, p["value"] + add)])
    # the analytic value lies inside the error bound
    di = next(p for p in props if p["name"] == "di")
    assert di["bound"][0] <= 0.262 <= di["bound"][1]
    assert di["details"]["least_favoured"]["group"] == "older"


def test_the_shipped_synthetic_data_is_the_seeded_generator_output(tmp_path):
    sys.path.insert(0, str(WORKED))
    try:
        import make_synthetic
    finally:
        sys.path.remove(str(WORKED))
    out = tmp_path / "s.csv"
    make_synthetic.main(["--out", str(out)])
    assert out.read_bytes() == (WORKED / "data" / "synthetic_1.csv").read_bytes()


def test_justicia_3_learns_through_the_negated_classifier():
    r = run_cli("check", "--format", "json", WORKED / "justicia_3.fair", "--property", "least", cwd=WORKED)
    p = json.loads(r.stdout)["properties"][0]
    assert p["details"]["method"] == "learn"
    assert p["details"]["solver"]["negated_er_value"] == pytest.approx(0.5656, abs=1e-4)
    assert p["details"]["least_favoured"]["group"] == "not S x not A"
    assert p["details"]["most_favoured"] == {"group": "S x not A", "ppv": pytest.approx(0.4631, abs=1e-4),
                                             "ppv_exact": "4631/10000"}  # the exact PPV (declared decimals)


def _fvgm_3_2_ppv(p: int, uniform=()) -> float:
    """Pr[P + Q + R - S >= 2 | P = p] by enumeration; the features in ``uniform`` are uniform and independent."""
    probs = {"Q": 0.6 if p else 0.3, "R": 0.5, "S": 0.3}
    total = 0.0
    for q, r, s in itertools.product((0, 1), repeat=3):
        w = 1.0
        for name, v in zip("QRS", (q, r, s)):
            pr = 0.5 if name in uniform else probs[name]
            w *= pr if v else 1 - pr
        if p + q + r - s >= 2:
            total += w
    return total


def test_fvgm_influence_expectations_are_the_brute_force_values():
    """The expected values of fvgm_influence.fair, recomputed here from FIF(S) = Q(D) - Q(D_-S)."""
    def metric(name, uniform=()):
        hi, lo = _fvgm_3_2_ppv(1, uniform), _fvgm_3_2_ppv(0, uniform)
        return hi - lo if name == "sp" else lo / hi

    def fif(name, subset):
        return metric(name) - metric(name, subset)

    want = expectations(WORKED / "fvgm_influence.fair")
    assert want["sp_each"][0] == pytest.approx(max(abs(fif("sp", (f,))) for f in "QRS"), abs=1e-6)
    assert want["sp_pairs"][0] == pytest.approx(max(abs(fif("sp", ("Q", "S"))), abs(fif("sp", ("R",)))), abs=1e-6)
    assert want["di_each"][0] == pytest.approx(max(abs(fif("di", (f,))) for f in "QRS"), abs=1e-6)
    # and the spec reports every subset's influence, naming the largest
    r = run_cli("check", "--format", "json", WORKED / "fvgm_influence.fair", cwd=WORKED)
    got = {p["name"]: p for p in json.loads(r.stdout)["properties"]}
    each = {i["subset"][0]: i["fif"] for i in got["sp_each"]["details"]["influence"]}
    assert each == {f: pytest.approx(fif("sp", (f,)), abs=1e-9) for f in "QRS"}
    assert "FIF({Q})" in got["sp_each"]["reason"]
    assert got["di_each"]["details"]["largest"]["fif"] == pytest.approx(fif("di", ("Q",)), abs=1e-9)
