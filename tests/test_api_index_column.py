"""A data frame whose column was made its index (``df.set_index("a")``) passed to the API: FS207 "data set 'd'
has no column 'a'" gave the default hint; the frame's index is not written, so now the hint says 'a' is the
frame's index and to pass frame.reset_index() (session 37, h4). Failed before."""

from __future__ import annotations

import numpy as np

import fairspec

SPEC = """data d = csv("d.csv", label = y == "yes")
features F from d {
  r : {x, y, z}  protected
  a : int in [0, 3]
}
property sp {
  statistical_parity(d, groups r) <= 0.5
}
"""


def test_fs207_names_the_frames_index(tmp_path):
    import pandas as pd

    (tmp_path / "s.fair").write_text(SPEC, encoding="utf-8")
    i = np.arange(12)
    df = pd.DataFrame({"r": np.array(["x", "y", "z"])[i % 3], "a": i % 4, "y": np.where(i % 2, "yes", "no")})
    diags = fairspec.lint(str(tmp_path / "s.fair"), data={"d": df.set_index("a")})
    (d,) = [d for d in diags if d.code == "FS207"]
    assert "'a' is the index of the data frame given for 'd'" in d.hint and "reset_index()" in d.hint, d.hint
    assert [x for x in fairspec.lint(str(tmp_path / "s.fair"), data={"d": df}) if x.severity == "error"] == []
