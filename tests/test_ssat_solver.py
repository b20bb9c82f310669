"""Our SSAT solver against the SSAT semantics by brute force, budgets, formats."""

import random

import numpy as np
import pytest

from fairspec.backends.ssat import SSATFormula, SSATSolver, brute_force_ssat


def random_formula(rng: random.Random, outer: str | None = None):
    f = SSATFormula()
    outer = outer or rng.choice("EA")
    for _ in range(rng.randint(0, 3)):
        f.new_var(outer)
    for _ in range(rng.randint(1, 6)):
        f.new_var("R", rng.choice([0.1, 0.3, 0.5, 0.77, 1.0, 0.0, rng.random()]))
    for _ in range(rng.randint(0, 3)):
        f.new_var("I")
    for _ in range(rng.randint(1, 10)):
        vs = rng.sample(range(1, f.nv + 1), min(rng.randint(1, 4), f.nv))
        f.add([v if rng.random() < 0.5 else -v for v in vs])
    return f


@pytest.mark.parametrize("outer", ["E", "A"])
def test_solver_matches_semantics_on_random_formulas(outer):
    rng = random.Random(1 if outer == "E" else 2)
    for _ in range(400):
        f = random_formula(rng, outer)
        r = SSATSolver(f).solve()
        assert r.status == "ok"
        assert abs(r.probability - brute_force_ssat(f)) < 1e-12
        if outer == "E" and r.assignment:
            # the reported optimiser reaches the value
            fixed = [v if b else -v for v, b in r.assignment.items()]
            assert abs(brute_force_ssat(f, fixed) - r.probability) < 1e-12


def test_solver_with_assumptions_and_caching_across_calls():
    rng = random.Random(5)
    for _ in range(100):
        f = random_formula(rng, "E")
        s = SSATSolver(f)
        for _ in range(3):
            lits = [v if rng.random() < 0.5 else -v for v in rng.sample(range(1, f.nv + 1), min(2, f.nv))]
            assert abs(s.solve(lits).probability - brute_force_ssat(f, lits)) < 1e-12


def test_defined_variables_are_summed():
    # d <-> (x and y), clause (d or z): Pr = Pr[x y] + Pr[not(x y)] Pr[z]
    f = SSATFormula()
    x = f.new_var("R", 0.3)
    y = f.new_var("R", 0.6)
    z = f.new_var("R", 0.5)
    d = f.new_var("D")
    for c in ([-d, x], [-d, y], [d, -x, -y], [d, z]):
        f.add(c)
    want = 0.18 + 0.82 * 0.5
    assert SSATSolver(f).solve().probability == pytest.approx(want)
    assert brute_force_ssat(f) == pytest.approx(want)


def test_batched_probabilities():
    f = SSATFormula()
    x = f.new_var("R", np.array([0.1, 0.5, 0.9]))
    y = f.new_var("R", 0.5)
    f.add([x, y])
    r = SSATSolver(f).solve()
    assert np.allclose(r.probability, [0.55, 0.75, 0.95])


def test_empty_clause_and_trivial_formulas():
    f = SSATFormula()
    f.new_var("R", 0.4)
    assert SSATSolver(f).solve().probability == 1.0
    f.add([])
    assert SSATSolver(f).solve().probability == 0.0


def test_budget_exhaustion_is_unknown_with_reason():
    rng = random.Random(9)
    f = SSATFormula()
    for _ in range(40):
        f.new_var("R", 0.5)
    for _ in range(60):
        f.add([v if rng.random() < 0.5 else -v for v in rng.sample(range(1, 41), 3)])
    r = SSATSolver(f, max_nodes=5).solve()
    assert r.status == "unknown" and r.probability is None and "budget" in r.reason
    r = SSATSolver(f, time_limit=0.0).solve()
    assert r.status in ("unknown", "ok")
    if r.status == "unknown":
        assert "time" in r.reason


def test_sdimacs_output():
    f = SSATFormula()
    e = f.new_var("E")
    r = f.new_var("R", 0.25)
    i = f.new_var("I")
    f.add([e, r])
    f.add([-r, i])
    text = f.to_sdimacs()
    assert text.splitlines()[0] == "p cnf 3 2"
    assert "e 1 0" in text and "r 0.25 2 0" in text and "e 3 0" in text
