"""A tree's threshold on a scaled whole-number feature, mapped back to raw units for the Boolean
form of the distribution backends (Justicia / FVGM), must send every whole number where the
library sends it: scikit-learn compares the float32 model input with the float64 threshold, so a
threshold that is exactly an encoded whole number's float64 value (or its float32 neighbour) is
decided by that rounding, not by the raw value's floor. Thresholds placed on those grid points,
both min-max forms; the Boolean tree against the library's predict on every age."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.backends.boolean.compile import classifier_form
from fairspec.kinds.distribution_problem import discretise_rows
from fairspec.pipeline import lint
from fairspec.runtime.context import Context

AGES = np.arange(0, 121)


def _csv(path):
    rng = np.random.default_rng(0)
    rows = ["grp,age,member,hired"]
    for rep in range(4):
        for a in AGES:
            rows.append(f"{'yes' if rng.random() < 0.5 else 'no'},{a},{int(rng.random() < 0.5)},{int(rng.random() < 0.5)}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _tree(tmp_path, enc_line, encode, where, forest):
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    csv = _csv(tmp_path / "d.csv")
    rng = np.random.default_rng(1)
    X = np.column_stack([encode(AGES.astype(float)), rng.integers(0, 2, len(AGES)), np.zeros(len(AGES)),
                         np.ones(len(AGES))])
    y = (AGES > 60).astype(int) ^ (AGES % 7 == 0)
    est = (RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0) if forest
           else DecisionTreeClassifier(max_depth=4, random_state=0)).fit(X, y)
    for t in (est.estimators_ if forest else [est]):
        tr = t.tree_
        for i in range(tr.node_count):
            if tr.children_left[i] != -1 and tr.feature[i] == 0:
                # a threshold on an encoded whole number's float64 value, or its float32 value
                v = float(rng.integers(1, 120))
                e = float(encode(np.array([v]))[0])
                tr.threshold[i] = e if where == "f64" else float(np.float32(e))
    sio.dump(est, tmp_path / "m.skops")
    text = f"""\
data people = csv("{csv}", label = hired == 1)

features People from people {{
  grp    : {{no, yes}} protected
  age    : int in [0, 120]   bins [60]
  member : bool
}}

model m = sklearn("m.skops")

encode People for m {{
  {enc_line}
  member : raw
  grp : onehot
}}

property p {{
  disparate_impact(m, groups grp, distribution conditional(people)) >= 0.1
}}
"""
    p = tmp_path / "s.fair"
    p.write_text(text)
    return p


ENCODINGS = {
    "lo-hi": ("age : minmax(lo = 0, hi = 120)", lambda v: (v - 0.0) / 120.0),
    "lo-hi-odd": ("age : minmax(lo = 3, hi = 107)", lambda v: (v - 3.0) / 104.0),
}


@pytest.mark.parametrize("forest", [False, True], ids=["tree", "forest"])
@pytest.mark.parametrize("where", ["f64", "f32"])
@pytest.mark.parametrize("enc", list(ENCODINGS))
def test_boolean_tree_sends_every_age_where_the_library_does(tmp_path, enc, where, forest):
    line, encode = ENCODINGS[enc]
    path = _tree(tmp_path, line, encode, where, forest)
    sp = lint(path).spec
    ctx = Context(sp)
    fs = sp.feature_set("People")
    form = classifier_form(sp.model("m"), ctx, fs)
    rows = ctx.rows("People", "people")
    data, _ = discretise_rows(fs, rows, ["grp", "age", "member"], {}, form.needs, None)
    tree = form.build(data.variables, ctx, rows, data.codes)
    want = ctx.model("m").decide(ctx.model_input("m", rows.frame.values, rows.frame.n_rows)).astype(bool)
    got = tree.predict(data.codes)
    assert (got == want).all(), f"{int((got != want).sum())} rows decided differently"
