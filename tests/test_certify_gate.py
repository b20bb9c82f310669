"""The final gate (issue 20): one place in the pipeline (``pipeline.certified``, applied to every
verdict of ``check``) refuses a ``holds (proved)`` that carries no certify Proof: it becomes
``unknown`` with the reason "the backend's answer was not certified" (never a crash); kinds whose
paths are still being certified (``pipeline.PENDING``) keep it with a warning in the JSON."""

from __future__ import annotations

import json

from fairspec import pipeline
from fairspec.certify.exact import prove_exact
from fairspec.verdict import Verdict

SPEC = """
features W {
  P : bool protected
  Q : bool
}
model clf = rule(P + Q >= 1)
distribution d {
  p(Q) = 0.5
}
property sp {
  statistical_parity(clf, groups P, distribution d) <= 0.5
}
"""


def test_proved_without_proof_is_refused():
    v = Verdict("p", "group_metric", "holds", how="proved", value=0.1, reason="the solver said so", backend="x")
    out, warning = pipeline.certified(v)
    assert out.status == "unknown" and warning is None
    assert out.reason.startswith(pipeline.UNCERTIFIED)
    assert out.details["uncertified"]["reason"] == "the solver said so"


def test_proved_with_proof_and_other_verdicts_pass():
    proof = prove_exact(1, "<=", "2", claim="1 <= 2")
    v = Verdict("p", "group_metric", "holds", how="proved", proof=proof)
    assert pipeline.certified(v) == (v, None)
    for w in (Verdict("p", "group_metric", "holds", how="estimated"), Verdict("p", "group_metric", "violated"),
              Verdict("p", "group_metric", "unknown", reason="r")):
        assert pipeline.certified(w) == (w, None)


def test_every_kind_is_gated_and_a_pending_kind_would_only_warn(monkeypatch):
    # every kind's proved paths are certified now: none is pending, an uncertified PBA holds is refused
    assert pipeline.PENDING == {}
    out, warning = pipeline.certified(Verdict("p", "pba", "holds", how="proved", backend="pba"))
    assert out.status == "unknown" and pipeline.UNCERTIFIED in out.reason and warning is None
    # the mechanism that kept a kind with a warning while its owners certified it
    monkeypatch.setitem(pipeline.PENDING, "pba", "test")
    out, warning = pipeline.certified(Verdict("p", "pba", "holds", how="proved", backend="pba"))
    assert out.status == "holds" and out.details["uncertified"]["how"] == "proved"
    assert warning and pipeline.UNCERTIFIED in warning


def test_gate_in_check(tmp_path, monkeypatch):
    p = tmp_path / "s.fair"
    p.write_text(SPEC, encoding="utf-8")
    (v,) = pipeline.check(p).verdicts
    assert v.status == "holds" and v.proof is not None          # the certified path passes

    import fairspec.kinds.distribution as D

    def uncertified(prop, ctx, progress=None):
        return Verdict(prop.name, prop.kind, "holds", how="proved", reason="trust me", backend="ssat")

    monkeypatch.setattr(D, "run", uncertified)
    rep = pipeline.check(p)
    (v,) = rep.verdicts
    assert v.status == "unknown" and pipeline.UNCERTIFIED in v.reason
    assert rep.exit_code == 3
    doc = json.loads(json.dumps(rep.to_json()))
    assert doc["properties"][0]["status"] == "unknown"
