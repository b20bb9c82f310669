"""A witness's spec-level values (runtime.encoding.decode_row) encode back to the model input that broke the
claim, exactly: a real feature prints as the shortest number that does (it was rounded to 6 places, so a folded
pipeline's witness f0 = 69.89000000000001 printed as 69.89, a pair that no longer broke the claim when replayed)."""

import numpy as np
import pytest

from fairspec import ir
from fairspec.runtime.encoding import decode_row, encode

FS = ir.FeatureSet("W", (ir.Feature("s", ir.RealRange(0.0, 1000.0), False, "s"),), None)


def _enc(**kw):
    col = ir.ColumnEncoding(**{"feature": "s", "offset": 0, "width": 1, "categories": None, "codes": None,
                               "lo": None, "hi": None, "mean": None, "std": None, "scale": None, "shift": None,
                               "fitted": False, "span": None, **kw})
    return ir.Encoding(("W",), "m", (col,), 1)


@pytest.mark.parametrize("enc", [
    _enc(kind="raw"),
    _enc(kind="standard", mean=37.123, std=13.7),
    _enc(kind="minmax", lo=3.5, hi=917.25),
    _enc(kind="minmax", scale=0.0013, shift=-0.21),
], ids=["raw", "standard", "minmax", "scaled"])
def test_a_decoded_real_encodes_back_to_the_model_input_exactly(enc):
    rng = np.random.default_rng(0)
    values = np.concatenate([[69.89000000000001, 0.30000000000000004, 1e-9, 999.9999999], rng.uniform(0, 1000, 200)])
    X = encode(enc, {"s": values}, len(values))
    for x in X[:, 0]:
        got = decode_row(enc, FS, [x])["s"]
        assert encode(enc, {"s": np.array([got])}, 1)[0, 0] == x, (x, got)


def test_the_shortest_number_is_printed_where_it_encodes_back():
    enc = _enc(kind="raw")
    assert decode_row(enc, FS, [69.89000000000001])["s"] == 69.89000000000001
    assert decode_row(enc, FS, [69.89])["s"] == 69.89
    assert repr(decode_row(enc, FS, [0.1 + 0.2])["s"]) == "0.30000000000000004"
