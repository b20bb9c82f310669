"""A fixed-seed slice of the soundness campaign (issue 20, deliverable 7; bench/soundness.py
runs the long campaign): small random instances of every family, each property's truth by
enumeration on the model's own runtime (tests/differential/), fairspec's verdict judged
against it.

Per family two tests: no wrong verdict (a false proof, a false violation, a witness that is
no domain point or does not replay, a maximum or exact value that is not, a crash), and
`unknown` on at most 1% of the properties whose domain has at most 1,000 points (rounded
up: a time-out on a loaded machine is `unknown`, tolerated up to the target, never wrong).

A family whose slice still has wrong verdicts (or too many unknowns) on main is marked
``xfail(strict=True)`` with its issue-20 class: the fix turns it into an XPASS, and the fixer
removes the marker.
"""

from __future__ import annotations

import math

import pytest

from differential import campaign

# family -> instance seeds of the slice (each instance has several properties)
SLICE = {
    "network": (1, 4, 6, 7, 9, 10, 12),
    "trees": (1, 2, 3, 4, 6, 7, 8, 9),
    "distribution": (1, 3, 4, 5, 6, 7),
    "pba": (1, 4, 5, 9),
    "data": (1, 6, 8),
    "kdisc": (1, 4, 5, 9, 10),
}


@pytest.fixture(scope="module")
def slice_results():
    from fairspec.backends import executor

    saved = dict(executor._CONFIG)
    executor.configure(workers=1)        # partitions in process: no pool started by the slice
    cache: dict = {}

    def results(fam):
        if fam not in cache:       # each family's slice runs once, for both of its tests
            cache[fam] = [campaign.run_one(fam, s) for s in SLICE[fam]]
        return cache[fam]

    try:
        yield results
    finally:
        executor._CONFIG.update(saved)


def _wrong(results) -> list[str]:
    return [f"{o['family']} seed {o['seed']} {o['name']}: {o['defect']} ({o['why'][:160]}) "
            f"[{o['meta'].get('backend')}/{o['meta'].get('mode')}/{o['meta'].get('post')}]"
            for r in results for o in r["outcomes"] if o["klass"] == "wrong"]


def _check_no_wrong(results):
    errors = [r["error"] for r in results if r.get("error")]
    assert not errors, errors[0]
    rejected = [f"{o['seed']} {o['name']}: {o['why']}" for r in results for o in r["outcomes"]
                if o["klass"] == "rejected"]
    assert not rejected, rejected
    assert sum(len(r["outcomes"]) for r in results) > 0
    wrong = _wrong(results)
    assert not wrong, "\n".join(wrong)


def _check_unknown(results):
    small = [o for r in results for o in r["outcomes"] if campaign.is_small(o)]
    unknown = [f"{o['seed']} {o['name']}: {o['reason']}" for o in small if o["klass"] == "unknown"]
    allowed = math.ceil(campaign.UNKNOWN_TARGET * len(small))
    assert len(unknown) <= allowed, f"{len(unknown)} unknown of {len(small)} (allowed {allowed}):\n" + "\n".join(unknown)


def test_network_no_wrong_verdict(slice_results):
    _check_no_wrong(slice_results("network"))


def test_network_unknown_within_target(slice_results):
    _check_unknown(slice_results("network"))


def test_trees_no_wrong_verdict(slice_results):
    _check_no_wrong(slice_results("trees"))


def test_trees_unknown_within_target(slice_results):
    _check_unknown(slice_results("trees"))


def test_distribution_no_wrong_verdict(slice_results):
    _check_no_wrong(slice_results("distribution"))


def test_distribution_unknown_within_target(slice_results):
    _check_unknown(slice_results("distribution"))


def test_pba_no_wrong_verdict(slice_results):
    _check_no_wrong(slice_results("pba"))


def test_data_no_wrong_verdict(slice_results):
    # group metrics on data are estimates: `unknown` (a threshold inside the interval) is a statistical
    # answer there, so they have no unknown test (their properties have no finite domain)
    _check_no_wrong(slice_results("data"))


def test_kdisc_no_wrong_verdict(slice_results):
    _check_no_wrong(slice_results("kdisc"))


def test_kdisc_unknown_within_target(slice_results):
    _check_unknown(slice_results("kdisc"))
