"""Grammar-aware fuzzing in CI (issue 10): specs generated from grammar/fairspec.lark and mutations
of the shipped examples, fixtures and policies never raise inside fairspec.

A bounded, derandomised number of cases (the long run is bench/fuzz.py; its count and findings
are in bench/results/fuzz.md). Generation: tests/spec_fuzz.py.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from spec_fuzz import SpecFuzzer, run_case

FUZZER = SpecFuzzer()
SETTINGS = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@SETTINGS
@given(st.randoms(use_true_random=False), st.sampled_from([30, 100, 400, 1500]))
def test_specs_generated_from_the_grammar_never_raise(tmp_path_factory, rnd, budget):
    text = FUZZER.generate(rnd, budget=budget)
    err = run_case(text, tmp_path_factory.mktemp("g") / "case.fair")
    assert err is None, f"{err}\n--- spec ---\n{text[:2000]}"


@SETTINGS
@given(st.randoms(use_true_random=False))
def test_mutated_shipped_specs_never_raise(tmp_path_factory, rnd):
    text = FUZZER.mutate(rnd)
    err = run_case(text, tmp_path_factory.mktemp("m") / "case.fair")
    assert err is None, f"{err}\n--- spec ---\n{text[:2000]}"


def test_the_generator_covers_the_grammar():
    """Generated specs parse often enough to reach sema, and reach every declaration kind."""
    from fairspec.diagnostics import DiagnosticError
    from fairspec.syntax.parser import parse_text

    rnd = random.Random(0)
    parsed, kinds = 0, set()
    for _ in range(300):
        text = FUZZER.generate(rnd, budget=400)
        try:
            m = parse_text(text, "<fuzz>")
        except DiagnosticError:
            continue
        parsed += 1
        kinds |= {type(d).__name__ for d in m.decls}
    assert parsed >= 100, parsed
    assert {"ModelDecl", "DataDecl", "FeaturesDecl", "PropertyDecl", "EncodeDecl"} <= kinds, kinds


@pytest.mark.parametrize("seed", range(6))
def test_the_cli_never_prints_a_traceback_on_fuzzed_specs(tmp_path, seed):
    rnd = random.Random(seed)
    kind, text = FUZZER.case(rnd)
    spec = tmp_path / "case.fair"
    spec.write_text(text, encoding="utf-8", errors="surrogatepass")
    for fmt in ("text", "json"):
        r = run_cli("lint", spec, "--format", fmt)
        assert r.returncode in (0, 2), (kind, r.returncode, r.stderr[-1000:])
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr
