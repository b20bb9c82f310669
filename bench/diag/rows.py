"""What the diagnosis scripts of bench/diag share: one row of the Fairify benchmark (a network and a
protected attribute) as a pair problem over Fairify's verification domain, with Fairify's partitions."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def fairify_row(shared: Path, model: str, protected: str, post: str = "label", eps: float = 0.0):
    """``(problem, parts, names, idx)``: the PairProblem of ``model`` (its ONNX network, every input
    integral over the verification domain, ``protected`` the free input), Fairify's partitions of it,
    the input names and the protected input's index."""
    from fairify import Bench

    from fairspec.backends.milp.partition import fairify_partitions
    from fairspec.backends.pair import PairProblem
    from fairspec.models import network

    bench = Bench(Path(shared).resolve())
    d = bench.domains[model.split("-")[0]]
    names = d["feature_order"]
    lo = [d["verification_domain"][n][0] for n in names]
    hi = [d["verification_domain"][n][1] for n in names]
    idx = names.index(protected)
    net = network.from_onnx(bench.onnx(model))
    p = PairProblem(net, lo, hi, [True] * len(names), (), (idx,), None, (), post, eps)
    return p, fairify_partitions(p, threshold=d["partition_threshold_src"]), names, idx


def sampled_logits(net, lo, hi, idx, values, n: int, rng):
    """``(X, Z)``: ``n`` individuals drawn uniformly from the integer points of ``[lo, hi]`` and the
    network's float32 logit of each under every protected value (``Z[v]``; input ``idx`` set to it)."""
    import numpy as np

    X = np.floor(lo + rng.random((n, len(lo))) * (hi - lo + 1))
    Z = []
    for v in values:
        Xv = X.copy()
        Xv[:, idx] = v
        Z.append(np.asarray(net.forward(Xv, dtype=np.float32), dtype=np.float64).reshape(-1))
    return X, np.array(Z)
