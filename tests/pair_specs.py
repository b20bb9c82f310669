"""The end-to-end pair spec the runtime tests share (test_float16_runtime, test_float16_torch,
test_runtime_precision, test_violated_value): one protected bool ``g`` between two raw integer
features, ``|score(m(x)) - score(m(x'))| op eps`` over pairs differing only in ``g``; and the check
of a verdict against the runtime's own gaps at the tie and one step either side."""

from __future__ import annotations

import json

import numpy as np

PAIR_SPEC = """features F {{
  g : bool  protected
  f0 : int in [0, {f0}]
  f1 : int in [0, {f1}]
}}
model m = {model}
encode F for m {{
  f0 : raw
  g : raw
  f1 : raw
}}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |{score}(m(x)) - {score}(m(x'))| {op} {eps}
{mode}}}
"""


def pair_spec(model: str, op: str, eps, f0: int = 30, f1: int = 20, score: str = "logit",
              mode: str | None = "find", tail: str = "") -> str:
    """The spec's text; ``eps`` a number (written by repr) or its text; ``mode`` None: no mode line
    (the default mode); ``tail``: text right after the mode (e.g. "\n  using smt")."""
    line = f"  mode = {mode}{tail}\n" if mode else ""
    return PAIR_SPEC.format(model=model, op=op, eps=eps if isinstance(eps, str) else repr(float(eps)),
                            f0=f0, f1=f1, score=score, mode=line)


def first_verdict(folder, text: str) -> dict:
    """Check ``text`` saved as ``folder``/spec.fair; its first property's JSON verdict."""
    from fairspec.pipeline import check
    from fairspec.report import to_json

    (folder / "spec.fair").write_text(text)
    return json.loads(to_json(check(folder / "spec.fair")))["properties"][0]


def runtime_gaps(score, f0: int = 30, f1: int = 20, u: float = 2.0 ** -11):
    """``score`` (an (n, 3) array of (f0, g, f1) -> the runtime's n scores) over the spec's domain:
    every pair's |score - score'|, their largest, and one rounding step ``u`` of it (at least ``u``)."""
    a, b = (x.ravel() for x in np.meshgrid(np.arange(f0 + 1), np.arange(f1 + 1), indexing="ij"))
    gaps = np.abs(score(np.stack([a, np.zeros(a.size), b], 1)) - score(np.stack([a, np.ones(a.size), b], 1)))
    top = float(gaps.max())
    return gaps, top, u * max(1.0, top)


def ties_never_contradicted(verdict, gaps, top: float, step: float) -> None:
    """At the runtime's largest gap ``top`` and one ``step`` either side, for `<=` and `<`: holds only
    where every gap satisfies the claim, violated (with a witness) only where one does not."""
    for eps in (top - step, top, top + step):
        for op in ("<=", "<"):
            held = bool(np.all(gaps <= eps if op == "<=" else gaps < eps))
            v = verdict(op, eps)
            assert v["status"] != "holds" or held, (op, eps, v)
            assert v["status"] != "violated" or (not held and v["witness"] is not None), (op, eps, v)
