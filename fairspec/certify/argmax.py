"""The class score of a K-output network and the per-class proofs joined into one.

A multiclass model predicts the first largest of its K outputs ``y``. Class ``c`` is predicted iff
``g_c(x) = min_{j != c} (y_c(x) - y_j(x)) > 0`` (up to ties the runtime's argmax breaks, which
:func:`argmax_class_score` reads as it does): :func:`argmax_layers` builds ``g_c`` exactly as an ordinary
ReLU network, so every pair engine solves the per-class question unchanged; the runtime error bound of
the readout ``("argmax", c)`` is :func:`fairspec.certify.network.runtime_error_bound`'s (the largest of
the margins' bounds); :func:`prove_class_stable` joins the K per-class proofs into one that the
predicted class never changes.

**A softmax head** (readout ``("argmax", c, "softmax")``): the runtime's class is then the first
largest of its float *probabilities* ``p~ = softmax~(z~)`` of its float logits ``z~``, which can tie
(or order) classes whose logits differ. With ``E`` the logit margins' runtime error bound
(``|(z~_c - z~_j) - (y_c - y_j)| <= E`` for the proof's exact logits ``y``, the ``("margin", c, j)``
readouts), ``delta`` the softmax evaluation's assumed error :data:`SOFTMAX_ABS_ERROR`
(``|p~_j - p_j| <= delta``, ``p = softmax(z~)`` exactly) and ``x = 2 K delta < 1``, the class score
``g_c = min_{j != c} (y_c - y_j)`` decides the runtime's class within ``E + mu``,
``mu = x / (1 - x)`` (>= ``-ln(1 - x)``), exactly as a logit class score does within ``E``:

* ``g_c > E + mu`` => the runtime picks ``c``: every ``z~_c - z~_j > mu >= -ln(1 - x)``, so ``c``
  is the largest exact probability, ``p_c >= 1/K``, and ``p_j = p_c exp(-(z~_c - z~_j)) < p_c (1 - x)``,
  so ``p_c - p_j > x p_c >= 2 delta`` and ``p~_c - p~_j >= p_c - p_j - 2 delta > 0`` for every ``j``:
  ``c`` is the unique largest float probability;
* the runtime picks ``c`` => ``g_c >= -(E + mu)``: ``p~_c >= p~_k`` for every ``k``, so
  ``p_c >= p_k - 2 delta`` for every ``k``, in particular ``p_c >= max_k p_k - 2 delta >= 1/K - 2 delta
  > 0``; then ``exp(z~_j - z~_c) = p_j / p_c <= 1 + 2 delta / p_c <= 1 / (1 - x)``, so
  ``z~_c - z~_j >= ln(1 - x) >= -mu`` and ``y_c - y_j >= -mu - E``.

So the error bound of the readout ``("argmax", c, "softmax")`` is ``E + mu`` (rounded up,
:func:`softmax_class_slack`), and every engine moves its thresholds by it unchanged. Pure numpy and
fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from fairspec.certify.chains import as_layers
from fairspec.certify.half import SOFTMAX_ABS_ERROR16
from fairspec.certify.rounding import float_up

__all__ = ["argmax_layers", "argmax_class_score", "prove_class_stable", "class_readout", "softmax_class_slack",
           "SOFTMAX_ABS_ERROR"]

#: assumed bound on |runtime softmax - exact softmax of the runtime's float logits| (certify.class_prob's
#: docstring; tests/test_class_prob_bab.py measures onnxruntime's and torch's against it). float16: the
#: float32 evaluation rounded once (fairspec.certify.half)
SOFTMAX_ABS_ERROR = {"float16": SOFTMAX_ABS_ERROR16, "float32": 2.0 ** -18, "float64": 2.0 ** -40}


def class_readout(readout) -> tuple[int, str] | None:
    """``(c, head)`` of a class readout: ``("argmax", c)`` (head "none": the runtime's class is the
    first largest of its logits) or ``("argmax", c, "softmax")`` (of its softmax probabilities); None
    for any other readout."""
    if readout is None or len(readout) not in (2, 3) or readout[0] != "argmax" or isinstance(readout[1], bool):
        return None
    try:
        c = int(readout[1])
    except (TypeError, ValueError):
        return None
    if c != readout[1] or c < 0:
        return None
    if len(readout) == 3:
        return (c, "softmax") if readout[2] == "softmax" else None
    return c, "none"


def softmax_class_slack(K: int, precision: str) -> float:
    """``mu = x / (1 - x)``, ``x = 2 K SOFTMAX_ABS_ERROR[precision]``, rounded up: what a softmax head
    adds to the class score's runtime error bound (see the module docstring). ValueError when
    ``x >= 1`` (so many classes that the softmax's error could hide the top probability)."""
    if precision not in SOFTMAX_ABS_ERROR:
        raise ValueError(f"no softmax error bound for {precision!r} arithmetic")
    x = 2 * int(K) * Fraction(SOFTMAX_ABS_ERROR[precision])
    if K < 2 or x >= 1:
        raise ValueError(f"a softmax over {K} classes is beyond the softmax's assumed error bound")
    return float_up(x / (1 - x))


def _exact_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` in float64, or ValueError when a difference is not exact."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    for x, y, z in zip(np.ravel(a), np.ravel(b), np.ravel(d)):
        if Fraction(float(x)) - Fraction(float(y)) != Fraction(float(z)):
            raise ValueError("a margin between two output rows is not exact in float64")
    return d


def argmax_layers(base_net, c: int) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """The layers of ``g_c(x) = min_{j != c} (y_c(x) - y_j(x))`` for the K-output network
    ``base_net`` (``y``), exactly: ``g_c > 0`` iff class ``c`` is the unique largest output, and
    ``g_c`` is an ordinary ReLU network (the pair solvers, the certified branch and bound and the
    exact SMT encode it unchanged).

    The margins ``y_c - y_j`` are folded into the last layer (rows ``W_c - W_j``, checked exact in
    float64; ValueError otherwise; a last layer with a ReLU is kept and the margins read from it
    with coefficients +-1); a tree of ``min(a, b) = relu(a) - relu(-a) - relu(a - b)`` layers
    (coefficients small integers, exact) takes the minimum. K = 2: the margin itself."""
    layers = as_layers(base_net)
    W, b, relu = layers[-1]
    K = W.shape[0]
    if K < 2 or not 0 <= c < K:
        raise ValueError(f"class {c} of a {K}-output network")
    if relu:
        hidden = list(layers)
        Wl, bl = np.eye(K), np.zeros(K)
    else:
        hidden = list(layers[:-1])
        Wl, bl = W, b
    # expressions over the current layer's inputs: (row, bias)
    vals = [(_exact_diff(Wl[c], Wl[j]), float(_exact_diff(np.array([bl[c]]), np.array([bl[j]]))[0]))
            for j in range(K) if j != c]
    first = True
    while len(vals) > 1:
        rows, bias, nxt = [], [], []
        for k in range(0, len(vals), 2):
            a = vals[k]
            base = len(rows)
            rows += [a[0], -a[0]]
            bias += [a[1], -a[1]]
            if k + 1 < len(vals):
                bb = vals[k + 1]
                if first:
                    rows.append(_exact_diff(a[0], bb[0]))
                    bias.append(float(_exact_diff(np.array([a[1]]), np.array([bb[1]]))[0]))
                else:
                    rows.append(a[0] - bb[0])                 # small integers: exact
                    bias.append(a[1] - bb[1])
                coef = {base: 1.0, base + 1: -1.0, base + 2: -1.0}
            else:
                coef = {base: 1.0, base + 1: -1.0}
            nxt.append(coef)
        Wn = np.array(rows, dtype=np.float64)
        hidden.append((Wn, np.array(bias, dtype=np.float64), True))
        m = Wn.shape[0]
        vals = []
        for coef in nxt:
            r = np.zeros(m)
            for i, v in coef.items():
                r[i] = v
            vals.append((r, 0.0))
        first = False
    row, bias = vals[0]
    return hidden + [(row.reshape(1, -1), np.array([bias], dtype=np.float64), False)]


def argmax_class_score(Y, c: int) -> np.ndarray:
    """The runtime's class-``c`` score of output rows ``Y`` (k, K) as the argmax rule reads them:
    positive iff ``c`` is the *first* largest column (numpy's / onnxruntime's ArgMax), else
    ``<= 0``; its magnitude is ``min_j (y_c - y_j)`` in float64 except that a tie the rule breaks
    in favour of ``c`` scores the smallest positive float (so ``score > 0`` is exactly the
    decision)."""
    Y = np.asarray(Y, dtype=np.float64)
    others = np.delete(Y, c, axis=1)
    g = (Y[:, c][:, None] - others).min(axis=1) if others.shape[1] else np.full(Y.shape[0], np.inf)
    wins = np.argmax(Y, axis=1) == c
    return np.where(wins & (g <= 0), 5e-324, np.where(~wins & (g > 0), 0.0, g))


def prove_class_stable(parts: dict, K: int):
    """One Proof that the predicted class (argmax of K outputs) never changes between the two
    sides of an admissible pair, from one Proof per class ``c`` that no pair has class ``c`` on
    one side only (``g_c(x) > 0 >= g_c(x')`` refuted on the runtime, readout ``("argmax", c)``):
    a pair whose class changes has class ``c`` on one side and another on the other, so the K
    cases cover every violation. certify checks that every class has its Proof and that the Proof of
    class ``c`` records the readout ``("argmax", c)`` it was minted for (``detail["readout"]``, set
    where certify minted it from the readout it checked) and that the parts recording their K-output
    network (``detail["base_net"]``: every bab-certificate and exact-smt part) agree on it; None otherwise."""
    from fairspec.certify.proof import Proof, _mint

    if set(parts) != set(range(K)) or K < 2:
        return None
    if not all(isinstance(parts[c], Proof) for c in range(K)):
        return None
    heads = set()
    for c in range(K):
        r = parts[c].detail.get("readout")
        got = class_readout(r) if isinstance(r, list) else None
        if got is None or got[0] != c:
            return None
        heads.add(got[1])
    if len(heads) != 1:                     # every part about one runtime: its logits' or its softmax's class
        return None
    (head,) = heads
    # one K-output network (recorded where minted: every bab-certificate, exact-smt part, a tiling of them)
    if len({parts[c].detail["base_net"] for c in range(K) if parts[c].detail.get("base_net") is not None}) > 1:
        return None
    if any(parts[c].method in ("bab-certificate", "exact-smt") and parts[c].detail.get("base_net") is None
           for c in range(K)):
        return None
    methods = sorted({parts[c].method for c in range(K)})
    if not set(methods) <= {"bab-certificate", "exact-smt", "enumeration", "interval", "lp-certificate", "partitioned"}:
        return None
    # the parts' one method when they share one; a mix (or partitions per class) names each part
    method = methods[0] if len(methods) == 1 and methods[0] != "partitioned" else "per-class"
    leaves = [parts[c].detail.get("leaves") for c in range(K)]
    detail = {"classes": K, "cases": [parts[c].to_json() for c in range(K)],
              "case_summaries": [parts[c].summary for c in range(K)]}
    if all(isinstance(n, int) for n in leaves):
        detail["leaves"] = sum(leaves)
    what = f"{K} softmax probabilities" if head == "softmax" else f"{K} outputs"
    if head == "softmax":
        detail["head"] = "softmax"
    return _mint(method, f"the predicted class (argmax of {what}, first largest on ties) is the same for "
                         f"both sides of every admissible pair", **detail)


def column_network(base_net, c: int, scale=None, shift=None) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """Logit column ``c`` of the K-output network ``base_net`` alone: its last layer cut to row ``c``, then the
    encoding's affine scaling (model input ``u = scale * v + shift``; None: none) folded into the first layer,
    in that order and with that arithmetic (``W * scale``, ``b + W @ shift``), as each column's run builds the
    network its proof is about (kinds.logit_column cuts, kinds.lowering.fold_scaling folds)."""
    layers = as_layers(base_net)
    W, b, relu = layers[-1]
    if not 0 <= int(c) < W.shape[0]:
        raise ValueError(f"the network has no logit column {c}")
    layers = layers[:-1] + [(np.array(W[c:c + 1], dtype=np.float64), np.array(b[c:c + 1], dtype=np.float64), relu)]
    if scale is not None or shift is not None:
        n = layers[0][0].shape[1]
        sc = np.ones(n) if scale is None else np.asarray(scale, dtype=np.float64).reshape(-1)
        sh = np.zeros(n) if shift is None else np.asarray(shift, dtype=np.float64).reshape(-1)
        if sc.shape != (n,) or sh.shape != (n,):
            raise ValueError("the scaling does not fit the network's inputs")
        W0, b0, r0 = layers[0]
        layers[0] = (W0 * sc[None, :], b0 + W0 @ sh, r0)
    return layers


def join_logit_columns(parts: dict, base_net, eps, strict: bool, scale=None, shift=None):
    """One Proof of ``forall c: |z_c(x) - z_c(x')| op eps`` (``op`` ``<`` when ``strict``) of the K-output network
    ``base_net`` (model inputs; ``scale`` / ``shift`` the encoding's affine scaling, :func:`column_network`) from
    one Proof per logit column ``c`` of the K (each the ``logit`` post of the network cut to its row ``c``): a
    pair that moves some column beyond eps moves column c, which part c refutes. certify checks that the parts
    are keyed 0..K-1 and that each is about its own column of THIS network: the pair question it records
    (``detail["pair"]``, :func:`fairspec.certify.claims.pair_scope`) names the fingerprint of
    :func:`column_network` ``(base_net, c)`` (a part about another column, or one part given for two columns,
    is refused unless the two columns are the same network) and the same pair question otherwise as every
    other part; and the claim it records (a real-arithmetic proof's ``detail["runtime"]``, its threshold moved
    by its E as :func:`fairspec.certify.pairlp.moved_threshold` moves it; a partitioned proof's
    ``detail["whole"]``) is the ``logit`` post of a one-output logit readout with this eps and strictness, in
    one precision for all. None otherwise."""
    import math

    from fairspec.certify.claims import exact_text, net_fingerprint
    from fairspec.certify.exact import threshold_of
    from fairspec.certify.proof import Proof, _mint

    try:
        K = as_layers(base_net)[-1][0].shape[0]
        want_net = [net_fingerprint(column_network(base_net, c, scale, shift)) for c in range(K)]
    except (ValueError, TypeError, IndexError):
        return None
    if set(parts) != set(range(K)) or not all(isinstance(parts[c], Proof) for c in range(K)):
        return None
    want = exact_text(eps)
    scopes, precisions = [], set()
    for c in range(K):
        p = parts[c]
        d = p.detail
        if p.method not in ("bab-certificate", "exact-smt", "interval", "enumeration", "partitioned"):
            return None
        pair = d.get("pair")
        if not isinstance(pair, dict) or pair.get("net") != want_net[c]:
            return None                     # about another network than column c of this one
        scopes.append({k: v for k, v in pair.items() if k != "net"})
        rt, whole = d.get("runtime"), d.get("whole")
        if isinstance(rt, dict) and p.method in ("bab-certificate", "exact-smt") and not isinstance(whole, dict):
            rec = rt
            if d.get("post") != "logit":
                return None
            try:
                # pairlp.moved_threshold of the logit post (not imported: pairlp.query -> network -> argmax):
                # |z - z'| op eps on the runtime within E of the proof's network when z - z' op' eps - 2E
                E = float(rt["runtime_error"])
                if not (math.isfinite(E) and E >= 0):
                    return None
                if Fraction(d["threshold"]) != threshold_of(eps) - 2 * Fraction(E) or d.get("strict") is not bool(strict):
                    return None
            except (KeyError, TypeError, ValueError, ArithmeticError):
                return None
        elif isinstance(whole, dict) and rt is None:
            rec = whole
            if whole.get("post") != "logit":
                return None
        else:
            return None                     # no record of the claim it proved
        if rec.get("eps") != want or rec.get("eps_strict") is not bool(strict):
            return None
        if list(rec.get("readout") or ()) != ["logit", 0]:
            return None
        precisions.add(rec.get("precision"))
    if len(precisions) != 1 or any(s != scopes[0] for s in scopes):
        return None                         # one runtime, one pair question for every column
    leaves = [parts[c].detail.get("leaves") for c in range(K)]
    detail = {"columns": K, "base_net": net_fingerprint(as_layers(base_net)), "column_nets": want_net,
              "cases": [parts[c].to_json() for c in range(K)],
              "case_summaries": [parts[c].summary for c in range(K)]}
    if all(isinstance(n, int) for n in leaves):
        detail["leaves"] = sum(leaves)
    return _mint("per-column", f"|z_c(x) - z_c(x')| {'<' if strict else '<='} {want} for each of the {K} logit "
                               f"columns c and every admissible pair", **detail)
