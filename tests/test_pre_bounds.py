"""kinds/pre_bounds: a pre-condition's conjunct with arithmetic or `not` on one tied int read as the whole-number
bounds it is equivalent to, checked by brute force over the int's domain against kinds/pair_pre.PairPre's exact
reading of the conjunct, in both readings of each constant (the float it is stored as, the decimal it is written
as), the constants biased to ties (a grid point: `x.b * 2 <= 8` at b = 4). Derived bounds must hold on exactly the
whole numbers the conjunct holds on in each reading; where the readings part, none is derived."""

from __future__ import annotations

import itertools
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).parent))
from test_pre_relax import DECLS, dyadic_net  # noqa: E402

BDECLS = DECLS.replace("  a : int in [0, 9]\n", "  a : int in [0, 9]\n  b : int in [-12, 12]\n  r : real in [0, 1]\n")


def _props(tmp_path, reqs, free="s", tol=""):
    from fairspec.pipeline import lint

    dyadic_net(tmp_path / "m.onnx", 0)
    body = "".join(f"property p{k} {{\n  forall x, x' : F\n  require x.* == x'.* except {{{free}}}\n{tol}"
                   f"  require {r}\n  ensure label(m(x)) == label(m(x'))\n}}\n" for k, r in enumerate(reqs))
    (tmp_path / "b.fair").write_text(BDECLS + body)
    res = lint(tmp_path / "b.fair")
    spec = res.spec
    assert spec is not None and len(spec.properties) == len(reqs), [str(d) for d in res.diagnostics][:3]
    return spec


def _atoms(rng, n):
    """Conjunct texts over x.b / x'.b: affine forms, `not`, constants at grid points (ties) and off them."""
    ks = ["2", "3", "0.5", "0.25", "1.5", "0.1", "-2", "-0.5", "4", "0.3"]
    ops = ["<", "<=", ">", ">=", "=="]
    out = []
    for _ in range(n):
        k, d = ks[rng.integers(len(ks))], int(rng.integers(-3, 4))
        b0 = int(rng.integers(-12, 13))
        var = "x'" if rng.random() < 0.3 else "x"
        form = [f"{var}.b * {k}", f"{k} * {var}.b", f"{var}.b / {k.lstrip('-') if k != '0' else '2'}",
                f"{var}.b * {k} + {d}", f"({var}.b - {d}) * {k}", f"{var}.b + {d}"][rng.integers(6)]
        # the constant: the form's value at b0 (a tie), or a little off it
        exact = {"f": None}
        c = rng.choice(["tie", "off", "dec"])
        val = _val(form.replace(f"{var}.b", str(b0)))
        if c == "tie":
            ct = _num(val)
        elif c == "off":
            ct = _num(val + Fraction(1, 4))
        else:
            ct = f"{float(val) + 0.1:.1f}"
        op = ops[rng.integers(len(ops))]
        atom = f"{form} {op} {ct}" if rng.random() < 0.6 else f"{ct} {op} {form}"
        if rng.random() < 0.3:
            atom = f"not ({atom})"
        out.append(atom)
        _ = exact
    out += ["x.b * 2 <= 13", "not (x.b < 3)", "not (x.b >= 3 or x.b < -4)", "not (x.b == 3)", "x.b * 0.1 <= 0.3",
            "2 * x.b + 1 < 9", "(x.b - 3) / 4 >= -1", "x.b * 2 == 7", "x.b * 2 == 8", "x.b * 0 <= 3", "x.b + x.b > 5",
            "x.b * 2 > x.b + 3", "x.a * 2 <= 9", "not (x.r < 0.5)", "x.b * 3 <= 0.3 * 10"]
    return out


def _val(text):
    return Fraction(eval(text.replace("/", "*Fraction(1)/"), {"Fraction": Fraction}))   # decimal reading, exact-ish


def _num(v: Fraction) -> str:
    if v.denominator == 1:
        return str(v.numerator)
    return repr(float(v))


def test_derived_bounds_hold_on_exactly_the_conjunct_s_whole_numbers_in_both_readings(tmp_path):
    from fairspec.ir.no_pair import _as_decimal, _as_float
    from fairspec.kinds.pair_pre import PairPre
    from fairspec.kinds.pre_bounds import derived_bounds

    rng = np.random.default_rng(34)
    reqs = _atoms(rng, 400)
    spec = _props(tmp_path, reqs)
    derived = parted = 0
    for req, prop in zip(reqs, spec.properties):
        fs = spec.feature_set(prop.features)
        (atom,) = prop.pre
        got = derived_bounds(atom, prop, fs)
        pre = PairPre(prop, fs, {n: np.zeros(2) for n in ("a", "b", "r")})
        seen = set()
        for b, read in itertools.product(range(-12, 13), (_as_float, _as_decimal)):
            env = {(v, n): Fraction(b) if n == "b" else Fraction(0) for v in (prop.var, prop.var_prime)
                   for n in ("a", "b", "r")}
            try:
                truth = bool(pre._exact(atom, env, read))
            except Exception:  # noqa: BLE001 - a division by zero etc.: no bound may be derived
                assert not got, req
                break
            seen.add((b, truth))
            if got:
                mine = all(bool(pre._exact(g, env, read)) for g in got)
                assert mine == truth, (req, [str(g) for g in got], b, read.__name__)
        derived += bool(got)
        if len({t for _, t in seen}) == 2 and not got:
            parted += 1
    # it derives most of them (the forms are all affine in b): those it does not are readings that part, `==` / `!=`
    # with no box, or forms of no tied int
    assert derived >= 200, (derived, parted)
    by = dict(zip(reqs, spec.properties))

    def bounds(req):
        p = by[req]
        return [f"{g.left.var}.{g.left.feature} {g.op} {g.right.value}" for g in derived_bounds(p.pre[0], p, spec.feature_set(p.features))]
    assert bounds("x.b * 2 <= 13") == ["x.b <= 6"]
    assert bounds("not (x.b < 3)") == ["x.b >= 3"]
    assert bounds("not (x.b >= 3 or x.b < -4)") == ["x.b <= 2", "x.b >= -4"]
    assert bounds("2 * x.b + 1 < 9") == ["x.b <= 3"]             # `<` stays strict at the tie b = 4
    assert bounds("(x.b - 3) / 4 >= -1") == ["x.b >= -1"]
    assert bounds("x.b * 2 == 8") == ["x.b == 4"]
    for none in ("x.b * 3 <= 0.3 * 10",     # b <= 1 in decimals (0.3 * 10 is 3), b <= 0 in floats (below 3)
                 "not (x.b == 3)", "x.b * 0.1 <= 0.3", "x.b * 2 == 7", "x.b * 0 <= 3", "not (x.r < 0.5)"):
        assert bounds(none) == [], none
    assert bounds("x.b + x.b > 5") == ["x.b >= 3"] and bounds("x.b * 2 > x.b + 3") == ["x.b >= 4"]


def test_no_bound_on_a_protected_or_relaxed_int(tmp_path):
    from fairspec.kinds.pre_bounds import derived_bounds

    spec = _props(tmp_path, ["x.a * 2 <= 9"], tol="  require |x.a - x'.a| <= 1\n")
    (p,) = spec.properties
    assert derived_bounds(p.pre[-1], p, spec.feature_set(p.features)) == ()


FORMS = [("x.a * 2 <= {2t}", lambda a, t: a <= t), ("x.a * 2 < {2t}", lambda a, t: a < t),
         ("not (x.a < {t})", lambda a, t: a >= t), ("not (x.a <= {t})", lambda a, t: a > t),
         ("10 - x.a > {10-t}", lambda a, t: a < t), ("x.a * 0.5 >= {t/2}", lambda a, t: a >= t),
         ("not (x.a * 3 > {3t} or x.a < 2)", lambda a, t: 2 <= a <= t)]


@pytest.mark.parametrize("seed", [0, 2])
def test_a_bound_written_with_arithmetic_or_not_is_kept_by_the_relaxation(tmp_path, seed, monkeypatch):
    """The solvers' relaxation keeps an arithmetic / `not` bound on the tied int a as its whole-number bound
    (constants at grid points: ties, `<` strict). Brute force over the 60-point domain: never a wrong verdict; where
    no pair meeting it flips the label, holds (proved) -- before, the bound was dropped, and a flip outside it left
    the property unknown."""
    from test_pre_relax import _X, _pairs, _point, _points, _spec

    import onnxruntime as ort

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    dyadic_net(tmp_path / "m.onnx", seed)
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    lab = sess.run(None, {"x": _X(_points())})[0].reshape(-1) > 0
    pts = _points()
    proved = 0
    for t in (2, 4, 7):
        for form, holds_on in FORMS:
            req = (form.replace("{2t}", str(2 * t)).replace("{t}", str(t)).replace("{10-t}", str(10 - t))
                   .replace("{t/2}", repr(t / 2)).replace("{3t}", str(3 * t)))
            pred = (lambda x, y, h=holds_on, t=t: h(x["a"], t))
            truth = any(lab[i] != lab[j] for i, j in _pairs("s", pred))
            v = _spec(tmp_path, "s", req, "label(m(x)) == label(m(x'))", "  using milp\n")
            if v.status == "violated":
                assert truth, (req, v.reason)
                x, y = _point(v.witness.features), _point(v.witness.features_prime)
                assert pred(x, y) and lab[pts.index(x)] != lab[pts.index(y)], (req, x, y)
            else:
                assert (v.status, v.how) == ("holds", "proved") and not truth, (req, truth, v.status, v.reason)
                assert "only as `x.a" in v.reason, v.reason
                proved += 1
    assert proved, "no case where the bound proves it"


def test_a_real_s_hull_holds_every_value_meeting_an_arithmetic_or_not_bound(tmp_path):
    """pre_relax.real_hull reads an arithmetic / `not` conjunct on the tied real r (pre_bounds.real_bounds): every
    float of [0, 1] meeting it in either reading of its constants (PairPre's exact reading; the floats at and 1-4
    ulps around each reading's bound, ties on grid points) lies in the hull; the hull is narrower than [0, 1]."""
    from types import SimpleNamespace

    from fairspec.ir.no_pair import _as_decimal, _as_float
    from fairspec.kinds.pair_pre import PairPre
    from fairspec.kinds.pre_bounds import real_bounds
    from fairspec.kinds.pre_relax import real_hull

    rng = np.random.default_rng(7)
    reqs = ["x.r * 2 <= 1", "not (x.r < 0.3)", "1 - x.r > 0.7", "x.r / 0.1 <= 3", "not (x.r >= 0.6 or x.r < 0.2)",
            "x.r * 3 < 0.9", "(x.r + 0.1) * 10 >= 4", "x'.r * 4 == 1", "not (x.r * 2 > 1.2)"]
    for _ in range(60):
        k = ["2", "0.1", "3", "0.5", "-2", "10", "0.3"][rng.integers(7)]
        c = ["0.3", "0.5", "0.6", "1", "0.9", "0.25", "-0.4", "1.2"][rng.integers(8)]
        op = ["<", "<=", ">", ">=", "=="][rng.integers(5)]
        a = f"x.r * {k} {op} {c}" if rng.random() < 0.7 else f"{c} {op} x.r * {k} + 0.1"
        reqs.append(f"not ({a})" if rng.random() < 0.3 else a)
    spec = _props(tmp_path, reqs)
    enc = SimpleNamespace(columns=[SimpleNamespace(feature="r", kind="raw")])
    narrowed = 0
    for req, prop in zip(reqs, spec.properties):
        fs = spec.feature_set(prop.features)
        (atom,) = prop.pre
        hull = dict((n, (lo, hi)) for n, lo, hi in real_hull(prop, fs, enc, [atom]))
        if "r" not in hull:
            continue
        lo, hi = hull["r"]
        narrowed += (lo, hi) != (0.0, 1.0)
        pre = PairPre(prop, fs, {n: np.zeros(2) for n in ("a", "b", "r")})
        probe = {0.0, 1.0, lo, hi} | {float(x) for x in np.linspace(0, 1, 101)}
        for _, _, reads in real_bounds(atom, prop, fs):
            for v in reads:
                x = float(v)
                for step in range(5):
                    probe |= {x, float(np.nextafter(x, 2)), float(np.nextafter(x, -1))}
                    x = float(np.nextafter(x, 2))
        for v in sorted(p for p in probe if 0.0 <= p <= 1.0):
            env = {(var, n): Fraction(v) if n == "r" else Fraction(0) for var in (prop.var, prop.var_prime)
                   for n in ("a", "b", "r")}
            if any(bool(pre._exact(atom, env, read)) for read in (_as_float, _as_decimal)):
                assert lo <= v <= hi, (req, v, lo, hi)
    assert narrowed >= 30, narrowed


def test_no_pair_from_arithmetic_or_not_against_brute_force(tmp_path):
    """Session 35: a pre-condition whose arithmetic / `not` conjuncts on the tied int b leave it no whole number
    (`x.b * 2 == 7`; `x.b * 2 >= 7` with `not (x.b > 2)`; `x.b * 2 > 30` past [-12, 12]) holds vacuously
    (fairspec.ir.no_pair, read by certify.no_pair and lint's FS509). Brute force over b's domain against PairPre's
    exact reading: "no pair" only where no value meets the conjuncts in EITHER reading of the constants; where the
    readings part (`x.b * 0.1 == 0.3`: 3 in decimals, none in floats) it is not said."""
    from fairspec.ir.no_pair import _as_decimal, _as_float, no_pair_reason
    from fairspec.kinds.pair_pre import PairPre

    rng = np.random.default_rng(35)
    atoms = _atoms(rng, 120) + ["x.b * 2 > 30", "x.b * 0.1 == 0.3", "x.b * 0.5 == 0.75", "not (x.b >= -12)"]
    reqs = [a for a in atoms[-4:]]
    reqs += [f"{atoms[rng.integers(len(atoms))]} and {atoms[rng.integers(len(atoms))]}" for _ in range(300)]
    reqs += ["x.b * 2 == 7", "x.b * 2 >= 7 and not (x.b > 2)", "x.b * 2 >= 7 and x.b <= 3", "x.b * 2 + 1 < 0 and x.b >= 0"]
    spec = _props(tmp_path, reqs)
    said = empty = 0
    for req, prop in zip(reqs, spec.properties):
        fs = spec.feature_set(prop.features)
        why = no_pair_reason(prop, fs)
        pre = PairPre(prop, fs, {n: np.zeros(2) for n in ("a", "b", "r")})
        met = {}
        for read in (_as_float, _as_decimal):
            met[read.__name__] = False
            for b in range(-12, 13):
                env = {(v, n): Fraction(b) if n == "b" else Fraction(0) for v in (prop.var, prop.var_prime)
                       for n in ("a", "b", "r")}
                try:
                    ok = all(bool(pre._exact(atom, env, read)) for atom in prop.pre)
                except Exception:  # noqa: BLE001 - a division by zero: no emptiness may be claimed
                    assert why is None, req
                    ok = True
                met[read.__name__] |= ok
        empty += not any(met.values())
        if why is not None:
            said += 1
            assert not any(met.values()), (req, why, met)
    assert said >= 20 and said <= empty, (said, empty)
    by = dict(zip(reqs, spec.properties))
    for req in ("x.b * 2 == 7", "x.b * 2 >= 7 and not (x.b > 2)", "x.b * 2 > 30", "x.b * 0.5 == 0.75"):
        p = by[req]
        assert no_pair_reason(p, spec.feature_set(p.features)) is not None, req
    p = by["x.b * 0.1 == 0.3"]
    assert no_pair_reason(p, spec.feature_set(p.features)) is None


@pytest.mark.parametrize("req", ["x.a * 2 == 7", "x.a * 2 >= 7 and not (x.a > 2)", "not (x.a <= 9)"])
def test_empty_derived_bounds_hold_vacuously(tmp_path, req, monkeypatch):
    """The relaxation's derived bounds of the tied int a leave no whole number (in both readings): no pair meets the
    pre-condition, so the property holds (proved, vacuously, said so) whatever the network computes. It was unknown
    (the relaxation dropped the empty bounds, and a flip outside them was no witness)."""
    from test_pre_relax import _spec

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    dyadic_net(tmp_path / "m.onnx", 0)
    v = _spec(tmp_path, "s", req, "label(m(x)) == label(m(x'))", "  using milp\n")
    assert (v.status, v.how) == ("holds", "proved"), v.reason
    assert v.proof is not None and v.proof.method == "exact-arithmetic" and "vacuous" in " ".join(v.details["notes"])
