"""The pair lowering: feature space with the encoding's scaling folded into the network."""

from pathlib import Path

import numpy as np
import pytest

from fairspec.kinds.lowering import fold_scaling, lower_pair
from fairspec.kinds.individual_fairness import network_of
from fairspec.pipeline import check, lint
from fairspec.runtime.context import Context

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples/adult/adult.fair"
AC1 = ROOT / "examples/fairify/ac1.fair"


@pytest.fixture(scope="module")
def adult_ctx():
    res = lint(ADULT)
    assert not [d for d in res.diagnostics if d.is_error]
    return Context(res.spec)


@pytest.mark.parametrize("model", ["mlp", "lr"])
def test_folded_network_equals_model_on_data(adult_ctx, model):
    spec = adult_ctx.spec
    prop = next(p for p in spec.properties if p.kind == "individual_fairness")
    fs = spec.feature_set("Applicant")
    enc = adult_ctx.encoding(model)
    rows = adult_ctx.rows("Applicant", fs.data)
    n = 500
    values = {k: v[:n] for k, v in rows.frame.values.items()}
    U = adult_ctx.model_input(model, values, n)
    low = lower_pair(prop, fs, enc)
    V = np.stack([low.to_features(u) for u in U])
    assert np.allclose(np.stack([low.to_input(v) for v in V]), U)
    net = fold_scaling(network_of(adult_ctx, model), low)
    loaded = adult_ctx.model(model)
    z = net.forward(V)
    s = loaded.score(U)
    if loaded.score_kind == "prob":
        s = np.log(s / (1 - s))
    assert np.allclose(z, s, atol=1e-4)
    # the domain of every data row lies inside the lowering's box
    assert np.all(V >= low.lo - 1e-9) and np.all(V <= low.hi + 1e-9)


def test_milp_proves_a_loose_bound_and_falsifies_a_tight_one(tmp_path):
    spec = tmp_path / "p.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property loose {{
  forall x, x' : Adult
  require x.* == x'.* except {{sex}}
  ensure |logit(ac1(x)) - logit(ac1(x'))| <= 100
  using milp
}}
property tight {{
  forall x, x' : Adult
  require x.* == x'.* except {{sex}}
  ensure label(ac1(x)) == label(ac1(x'))
  using milp
}}
''')
    rep = check(spec)
    by = {v.name: v for v in rep.verdicts}
    assert by["loose"].status == "holds" and by["loose"].how == "proved"
    assert by["tight"].status == "violated"
    w = by["tight"].witness
    assert w is not None and len(w.x) == 13
    diff = [i for i in range(13) if w.x[i] != w.x_prime[i]]
    assert diff == [8]  # only sex differs
