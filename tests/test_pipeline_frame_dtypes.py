"""A user's own data frame and a folded pipeline (session 34).

The layout a folded pipeline's ColumnTransformer hands its estimator is probed on the replay frame only
(models/pipeline_layout.probe). A frame of other dtypes -- int32 beside int64, a category or string column, object
or nullable Int64 numbers, a frame built from a C- or F-ordered 2-D array -- gets the same layout and the same
floats from the pipeline's own transform: the ColumnTransformer copies the columns it selects, and its
``sparse_output_`` is fixed at fit. Pinned here, so that a pandas / scikit-learn change that breaks it fails.

A float32 column does give other floats: the Python API wrote it to CSV as pandas does, each cell as its shortest
float32 decimal (0.1f as "0.1"), which fairspec read back as the float64 0.1, not the frame's 0.10000000149...;
a model deciding at 0.1 then labelled every such row otherwise than its own predict on the frame (a parity gap of
1 checked as 0, holds). The API now writes float16 / float32 columns widened to float64 (exact)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler  # noqa: E402

import fairspec  # noqa: E402
from fairspec.models.pipeline_layout import probe  # noqa: E402
from fairspec.models.sklearn_pipeline import fold  # noqa: E402

RNG = np.random.default_rng(0)
N = 200
BASE = pd.DataFrame({"a": RNG.integers(0, 50, N), "b": RNG.integers(-5, 5, N), "g": RNG.choice(["x", "y", "z"], N)})
Y = ((BASE.a + 3 * BASE.b + RNG.normal(0, 5, N)) > 25).astype(int)

STEPS = {
    "passthrough": lambda: [("n", "passthrough", ["a", "b"])],
    "passthrough and one-hot": lambda: [("n", "passthrough", ["a", "b"]), ("o", OneHotEncoder(sparse_output=False), ["g"])],
    "scaler and one-hot": lambda: [("n", StandardScaler(), ["a", "b"]), ("o", OneHotEncoder(sparse_output=False), ["g"])],
    "minmax and ordinal": lambda: [("n", MinMaxScaler(), ["a", "b"]), ("o", OrdinalEncoder(), ["g"])],
    "sparse one-hot": lambda: [("n", "passthrough", ["a", "b"]), ("o", OneHotEncoder(), ["g"])],
}


def _frames():
    arr = BASE[["a", "b"]].to_numpy(dtype=np.float64)
    c = pd.DataFrame(arr, columns=["a", "b"]).assign(g=BASE.g.to_numpy())
    f = pd.DataFrame(np.asfortranarray(arr), columns=["a", "b"]).assign(g=BASE.g.to_numpy())
    return {"int64": BASE, "a int32": BASE.astype({"a": "int32"}), "both int32": BASE.astype({"a": "int32", "b": "int32"}),
            "float64": BASE.astype({"a": "float64", "b": "float64"}), "g category": BASE.astype({"g": "category"}),
            "g string": BASE.astype({"g": "string"}), "a Int64": BASE.astype({"a": "Int64"}),
            "a object": BASE.astype({"a": "object"}), "a category": BASE.astype({"a": "category"}),
            "from a C array": c, "from an F array": f, "concatenated": pd.concat([BASE.iloc[:90], BASE.iloc[90:]])}


def _layout(t) -> str:
    if hasattr(t, "format") and hasattr(t, "toarray"):
        return str(t.format)
    t = np.asarray(t)
    return "F" if t.flags.f_contiguous and not t.flags.c_contiguous else "C"


@pytest.mark.parametrize("name", sorted(STEPS))
def test_a_frame_of_other_dtypes_gets_the_probed_layout_and_the_same_floats(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", ColumnTransformer(STEPS[name]())), ("clf", LogisticRegression())]).fit(BASE, Y)
        want = probe(pipe, fold(pipe))
        ref = pipe[:-1].transform(BASE)
        ref = np.asarray(ref.toarray() if hasattr(ref, "toarray") else ref, dtype=np.float64)
        scores = pipe.decision_function(BASE)
        labels = pipe.predict(BASE)
        # the same floats in give the same scores up to the BLAS's summation order, which may differ with the
        # array's alignment (bitwise equal on an Intel Xeon; on an AMD EPYC 58 of 200 differ for the float64
        # frame): every order lies within gamma(n) * (sum |x_i w_i| + |b|) of the exact score, n = terms
        w, b = pipe[-1].coef_[0], float(pipe[-1].intercept_[0])
        n = ref.shape[1] + 1
        u = 2.0 ** -53
        slack = 2.0 * (n * u / (1 - n * u)) * (np.abs(ref) @ np.abs(w) + abs(b)) * (1 + 1e-12)
        differ = {}
        for label, fr in _frames().items():
            t = pipe[:-1].transform(fr)
            assert _layout(t) == want, (name, label)
            got = np.asarray(t.toarray() if hasattr(t, "toarray") else t, dtype=np.float64)
            assert np.array_equal(got, ref), (name, label)
            d = pipe.decision_function(fr)
            assert np.all(np.abs(d - scores) <= slack), (name, label)
            clear = np.abs(scores) > slack
            assert np.array_equal(pipe.predict(fr)[clear], labels[clear]), (name, label)
            differ[label] = int(np.sum(d != scores))
        print(name, "scores that differ bitwise from the int64 frame's:", differ)


SPEC = '''data d = csv("d.csv", label = y == 1)
features F from d {
  x : real in [0, 1]
  g : {a, b} protected
}
model m = sklearn("m.skops")
property sp {
  statistical_parity(m, groups g) <= 0.5
}
'''


def _parity_at_0_1(tmp_path, x, sign):
    """A pipeline deciding class 1 where x lies on ``sign``'s side of the double 0.1 (group a's x: 0.1 narrowed;
    group b's: 0 or 1), checked through the API on the frame holding ``x``: its own predict gives a parity gap of
    1, so the verdict must be violated with value 1 (written as "0.1" it was read as 0.1: gap 0, holds)."""
    fr = pd.DataFrame({"x": x, "g": ["a"] * 40 + ["b"] * 40, "y": [1, 0] * 40})
    wide = pd.DataFrame({"x": [float(v) for v in x], "g": fr.g})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", ColumnTransformer([("n", "passthrough", ["x"]), ("o", OrdinalEncoder(), ["g"])])),
                         ("clf", LogisticRegression())]).fit(wide, fr.y)
        pipe[-1].coef_ = np.array([[sign, 0.0]])
        pipe[-1].intercept_ = np.array([-sign * 0.1])
        own = pipe.predict(wide)
    assert own[:40].tolist() == [1] * 40 and own[40:].tolist() == [0] * 40
    (tmp_path / "s.fair").write_text(SPEC)
    v = fairspec.check(tmp_path / "s.fair", models={"m": pipe}, data={"d": fr})["sp"]
    assert v.status == "violated" and v.value == 1.0, (v.status, v.value, v.reason)


@pytest.mark.parametrize("dtype", ["float32", "float16", "Float32"])
def test_a_float32_column_is_checked_as_the_numbers_the_frame_holds(tmp_path, dtype):
    """x = 0.1 narrowed (float32: 0.10000000149..., float16: 0.0999755...) for group a; the model decides on which
    side of the float64 0.1 it lies (class 1 on the frame's own number for every a, class 0 for b): its own predict
    on the frame, a parity gap of 1 (violated). Written as "0.1" it was read as 0.1, class 0: gap 0, holds."""
    narrow = float(pd.array([0.1], dtype=dtype).astype("float64")[0])
    sign = 1.0 if narrow > 0.1 else -1.0
    _parity_at_0_1(tmp_path, pd.array([0.1] * 40 + [0.0 if sign > 0 else 1.0] * 40, dtype=dtype), sign)


@pytest.mark.parametrize("carrier", ["object", "sparse"])
def test_float32_cells_in_an_object_or_sparse_column_are_checked_as_the_frame_holds_them(tmp_path, carrier):
    """The review of the widening (session 34): an object column holding np.float32 scalars was written as "0.1"
    (read back as 0.1: parity gap 0, holds, where the pipeline's own predict gives 1), and a Sparse[float32] column
    raised TypeError outside the API's error handling. Both are now written as the doubles the frame holds."""
    sign = 1.0 if float(np.float32(0.1)) > 0.1 else -1.0
    vals = np.array([0.1] * 40 + [0.0 if sign > 0 else 1.0] * 40, dtype=np.float32)
    x = pd.Series(list(vals), dtype=object) if carrier == "object" else pd.Series(pd.arrays.SparseArray(vals))
    _parity_at_0_1(tmp_path, x, sign)
