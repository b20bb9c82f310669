"""Regression ReLU networks, individual fairness (issue 25): random small float32 ONNX nets with one
output read as a value (``score = value``) over finite feature domains; the post
``|value(m(x)) - value(m(x'))| op eps`` with ``<=`` and ``<``, every backend and mode (maximize: the
exact largest difference). Ties on purpose as in :mod:`.multiclass` (dyadic weights, thresholds
equal to the exact optimum)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .core import Instance, Prop, Truth
from .multiclass import _base, _diff_truth, _eps, _pair_spec, _settings, _text
from .networks import Outputs, _witness_checker, onnx_dtype, torch_dtype

FAMILY = "regression"


def generate(seed: int, n_props: int = 6) -> Instance:
    rng = np.random.default_rng([26, seed])
    # torch for three in ten instances, from a stream of its own (the onnx instances stay as they were)
    runtime = "torch" if np.random.default_rng([26, seed, 17]).random() < 0.3 else "onnx"
    fs, encs, P, X, spec, files, info, Y, size = _base(rng, 1, "logit1", FAMILY, runtime,
                                                       onnx_dtype(seed) if runtime == "onnx" else torch_dtype(seed))
    spec += ('model m = torch("m.pt", score = value)\n' if runtime == "torch" else
             'model m = onnx("m.onnx", output = "out", score = value)\n')
    spec += "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n"
    v = Y.reshape(-1)
    props = []
    for j in range(n_props):
        ps = _pair_spec(rng, fs)
        backend, mode, extra = _settings(rng)
        _, best, _ = _diff_truth(v, P, ps, "<=", "0")
        Dx = best[0] if best is not None else Fraction(0)
        op, eps = _eps(rng, Dx, float(Dx))
        status, best, n = _diff_truth(v, P, ps, op, eps)
        value = float(best[0]) if (mode == "maximize" and best is not None) else None
        check = _witness_checker(fs, P, ps, Outputs(v > 0, v, None, True), "logit", op, eps, X)
        truth = Truth(status, value=value, value_kind="max" if value is not None else None, check_witness=check,
                      domain=size, pairs=n, exact=best[0] if value is not None else None)
        meta = {"post": "value", "op": op, "eps": eps, "backend": backend, "mode": mode, "head": "value",
                "runtime": runtime}
        ensure = f"|value(m(x)) - value(m(x'))| {op} {eps}"
        props.append(Prop(f"p{j}", FAMILY, _text(f"p{j}", fs, ps, ensure, extra), truth, meta, 20.0))
    return Instance(FAMILY, seed, spec, files, props, info)
