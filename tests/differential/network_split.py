"""Networks whose hidden layer proves what their interval bounds leave (session 31): proof-path row 14
(``certify.layersplit.prove_layer_split``, ``certify.relsplit.prove_relational_split``, the refinement's
split at a hidden layer) through ``fairspec check``, with enumeration off.

The networks are built as tests/test_layer_split.py's and tests/test_relational_split.py's (AC-7 race's
case: boxes on one side of the threshold whose input-space bounds are loose): three tied integer features
and a protected one (three values), raw, into a float32 ONNX ReLU network 4-6-5-3-1 with dyadic weights
(multiples of 1/4), the protected weight zero on every other first-layer neuron, and either

* ``layer`` (even seeds): three of the second hidden layer's five neurons dead on the whole domain
  (non-positive weights on the ReLU outputs, negative bias), the output bias moved so that many boxes keep
  one sign with a few live neurons; a ``label`` post (the sign property: the layer split) and an eps post; or
* ``one_live`` (odd seeds): every first-layer neuron but one dead on the whole domain (the network a function
  of one scalar, a plateau where it is inactive); a ``label`` post and two eps posts.

From instance seed 73,000,000 on, one network in three has a plateau at the threshold or an ulp-scale step
beside it (``_plateau``). The eps posts are ``logit`` (a logit head) or ``prob`` (a Sigmoid head, three in ten), eps the exact largest
difference (where ``<`` and ``<=`` part) or a grid point, ``<`` or ``<=``: the relational split. Three
networks in ten have float32 weights off the dyadic grid (every weight times 1.1): the runtime rounds, and
the bounds widen by its error bound E.

The tied features are wide (``-W .. W``) so that the partitions' sub-boxes hold more than
``refine.ENUM_POINTS`` individuals (else they are enumerated before any bound); ``partitions`` at least
``DECIDE_FIRST_MIN`` (64), so the first decision pass by refinement runs before any per-partition solve,
and ``refine`` as network-wide-solver writes it. Checked with FAIRSPEC_ENUMERATE_PAIRS=0.

Judged as network-wide-solver (``network_wide.judge``: the verdict, its witness replayed on the domain, the
shares against the fair and unfair individuals in exact fractions); the truth is brute force over every
individual and its three counterfactuals on onnxruntime (the largest ``|s - s'|`` of an individual its
largest score minus its smallest, exact), vectorised (``networks.post_truth`` gives the same, 30 s slower).
Each property is checked in a spec file of its own, with certify's two split checks wrapped, so its outcome
says how many Proofs they minted (``meta.split_proofs``) and how many boxes those proved
(``meta.split_boxes``). The wrapper only counts: it returns what certify returned.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import network_wide as nwide
from . import networks as nw
from .core import Enc, Feature, Instance, Prop, Truth, decimal_text, encode_points, exact, grid

FAMILY = "network-split-solver"

#: per seed: the half-width of the tied features' range, and the partitions
WIDTHS = (8, 10, 12)
PARTS = (64, 128)
#: each property's budget (seconds): the campaign's; tests/test_soundness_slice.py gives its instance one that
#: cannot run out (:func:`budget`), so that whether the split is reached does not depend on the machine's speed
TIMEOUT = 30


class budget:
    """``with budget(seconds):`` the instances generated in the block give each property this timeout."""

    def __init__(self, seconds: int):
        self.seconds = int(seconds)

    def __enter__(self):
        global TIMEOUT
        self.kept, TIMEOUT = TIMEOUT, self.seconds
        return self

    def __exit__(self, *exc):
        global TIMEOUT
        TIMEOUT = self.kept
        return False


def _dyadic(rng, shape, scale=8):
    return rng.integers(-scale, scale + 1, size=shape).astype(np.float64) / 4


def _net(rng, kind: str, f32: bool = False) -> nw.Net:
    """The 4-6-5-3-1 network of the module docstring (inputs x0, x1, x2, g); ``f32``: every weight and bias
    times 1.1 in float32 (as the unit tests' float32 nets)."""
    W0, b0 = _dyadic(rng, (6, 4)), _dyadic(rng, (6,))
    W0[::2, 3] = 0.0                                   # the protected input read by neurons 1, 3, 5 only
    W0[1::2, 3] = float(rng.choice([0.25, 0.5, 1.0])) * np.sign(W0[1::2, 3] + 0.125)
    W1, b1 = _dyadic(rng, (5, 6)), _dyadic(rng, (5,))
    W2, b2 = _dyadic(rng, (3, 5)), _dyadic(rng, (3,))
    W3, b3 = _dyadic(rng, (1, 3)), np.zeros(1)
    if kind == "layer":
        dead = [0, 2, 4]
        W1[dead] = -np.abs(W1[dead])                   # on ReLU outputs (>= 0): dead on every input
        b1[dead] = -1.0
    else:
        W0[1:] = 0.0
        b0[1:] = -1.0                                  # every first-layer neuron but neuron 0 dead
        if W0[0, 3] == 0:
            W0[0, 3] = 0.25
    b3[0] = float(rng.choice([0.5, 1.0, 2.0, -0.25, -1.0, 0.0]))
    Ws, bs = [W0, W1, W2, W3], [b0, b1, b2, b3]
    if f32:     # float32 numbers off the dyadic grid: the runtime rounds, the bounds widen by its error E
        Ws, bs = [W * 1.1 for W in Ws], [b * 1.1 for b in bs]
    return nw.Net([W.astype(np.float32).astype(np.float64) for W in Ws],
                  [b.astype(np.float32).astype(np.float64) for b in bs], "logit1")


#: from this instance seed on, one network in three (a random stream of its own, so the earlier seeds' instances
#: are as they were) gets a plateau at the threshold (:func:`_plateau`)
PLATEAU_FROM = 73_000_000
PLATEAUS = ((1.0, 0.0), (-1.0, 0.0), (1.0, 2.0 ** -20), (-1.0, -(2.0 ** -20)))


def _plateau(net: nw.Net, seed: int):
    """As tests/test_layer_split.py's plateau nets: the output ``sign * |W| h + bias``, its logit exactly
    ``bias`` wherever the last hidden layer is 0 (a plateau, as AC-7's) and of one sign beyond it: at the
    threshold (0 is not positive: an individual at 0 under one value and above it under another is unfair) or
    an ulp-scale step beside it. Returns ``[sign, bias]`` or None (the network unchanged)."""
    if seed < PLATEAU_FROM:
        return None
    r = np.random.default_rng([32, seed])
    if r.random() >= 1 / 3:
        return None
    sign, bias = PLATEAUS[int(r.integers(0, len(PLATEAUS)))]
    net.Ws[-1] = sign * np.abs(net.Ws[-1])
    net.bs[-1] = np.full_like(net.bs[-1], bias)
    return [sign, bias]


def generate(seed: int) -> Instance:
    rng = np.random.default_rng([31, seed])
    kind = "layer" if seed % 2 == 0 else "one_live"
    w = int(WIDTHS[int(rng.integers(0, len(WIDTHS)))])
    fs = [Feature(f"x{i}", "int", lo=-w, hi=w) for i in range(3)] + [Feature("g", "int", lo=0, hi=2, protected=True)]
    encs = [Enc(f, "raw") for f in fs]
    names = [f.name for f in fs]
    P = grid(fs)
    X = encode_points(encs, P, names)
    f32 = bool(rng.random() < 0.3)
    net = _net(rng, kind, f32)
    plateau = _plateau(net, seed)
    head = "sigmoid1" if rng.random() < 0.3 else "logit1"
    net.head = head
    data = net.onnx_bytes("float32")
    Y = nw.run_onnx(data, X.astype(np.float32))
    out = nw.readout(head, Y)
    score = "prob" if head == "sigmoid1" else "logit"
    spec = ("features F {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
            f'model m = onnx("m.onnx", output = "out", score = {score})\n'
            "encode F for m {\n" + "\n".join(f"  {f.name} : raw" for f in fs) + "\n}\n")
    info = {"runtime": "onnx", "head": head, "dtype": "float32", "kind": kind, "width": w, "points": int(P.shape[0]),
            "weights": "float32" if f32 else "dyadic", "plateau": plateau,
            "env": {"FAIRSPEC_ENUMERATE_PAIRS": "0"}}
    size = int(P.shape[0])
    props = []
    eps_post = "logit" if head == "logit1" else "prob"
    posts = ["label", eps_post] if kind == "layer" else ["label", eps_post, eps_post]
    for k, post in enumerate(posts):
        props.append(_property(rng, k, fs, P, X, out, info, size, post))
    inst = Instance(FAMILY, seed, spec, {"m.onnx": data}, props, info)
    inst.judge = _judge(inst)
    return inst


def _measures(out, post):
    """Per individual (the rows of the grid in threes: ``g`` is its last, fastest axis), whether it is unfair
    under ``label``, or its exact largest ``|s - s'|`` (Fractions; the runtime's float32 scores, every ordered
    pair of its three counterfactuals admissible)."""
    if post == "label":
        L = np.asarray(out.label).reshape(-1, 3)
        return ~(L.all(axis=1) | (~L).all(axis=1))
    v = np.asarray(out.logit if post == "logit" else out.prob, dtype=np.float64).reshape(-1, 3)
    return [Fraction(float(a)) - Fraction(float(b)) for a, b in zip(v.max(axis=1), v.min(axis=1))]


def _property(rng, k, fs, P, X, out, info, size, post) -> Prop:
    """One property; its truth by brute force over every individual (the property's status, exact), and its
    shares' truth (fair, unfair, individuals) for network_wide.judge."""
    free = (3,)
    tied = (0, 1, 2)
    ps = nw.PairSpec(free, (), tied)
    assert np.all(P[:, 3].reshape(-1, 3) == [0, 1, 2]) and np.all(P[::3, :3] == P[1::3, :3])
    op = eps = None
    m = _measures(out, post)
    if post == "label":
        unfair = np.asarray(m)
    else:
        top = max(m)
        op = "<=" if rng.random() < 0.6 else "<"
        r = rng.random()
        text = decimal_text(top)
        if r < 0.35 and text is not None and text != "0":
            eps = text                                 # the exact largest difference: where < and <= part
        else:
            grid_eps = [0.25, 0.5, 1.0, 2.0, 4.0] if post == "logit" else [0.03125, 0.0625, 0.125, 0.25, 0.5]
            eps = str(float(rng.choice(grid_eps)))
        e = exact(eps)
        unfair = np.array([d > e if op == "<=" else d >= e for d in m])
    status = "violated" if unfair.any() else "holds"
    n_ind = len(unfair)
    parts = int(PARTS[(k + int(rng.integers(0, len(PARTS)))) % len(PARTS)])
    lines = ["forall x, x' : F", "require x.* == x'.* except {g}"]
    lines.append("ensure label(m(x)) == label(m(x'))" if post == "label"
                 else f"ensure |{post}(m(x)) - {post}(m(x'))| {op} {eps}")
    lines += [f"partitions = {parts}", "refine = 3s", f"timeout = {TIMEOUT}s"]
    name = f"p{k}"
    text = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
    truth = Truth(status, check_witness=nw._witness_checker(fs, P, ps, out, post, op, eps, X), domain=size,
                  pairs=6 * n_ind)
    meta = {"post": post, "op": op, "eps": eps, "backend": "default", "mode": "prove", "partitions": parts,
            "refine": True, "head": info["head"], "runtime": "onnx", "dtype": "float32", "kind": info["kind"],
            "weights": info["weights"], "plateau": info["plateau"], "relaxed": [], "solver_forced": True,
            "shares_truth": (int(n_ind - unfair.sum()), int(unfair.sum()), int(n_ind))}
    return Prop(name, FAMILY, text, truth, meta, TIMEOUT)


def _judge(inst: Instance):
    def judge(spec, props, base):
        """network-wide-solver's judgement, one property per spec file, the split checks counted."""
        outs = []
        for p in props:
            alone = spec.parent / f"spec-{p.name}-alone.fair"
            alone.write_text(inst.spec + "\n" + p.text + "\n")
            with counting() as c:
                (o,) = nwide.judge(alone, [p], base)
            o.meta = {**o.meta, "split_proofs": c["proofs"], "split_boxes": c["boxes"], "split_calls": c["calls"]}
            outs.append(o)
        return outs

    return judge


class counting:
    """Wraps ``certify.layersplit.prove_layer_split`` and ``certify.relsplit.prove_relational_split`` (the
    refinement imports them at each call) for the ``with`` block: counts the calls, the Proofs minted and
    the boxes proved; returns certify's decision unchanged."""

    def __enter__(self):
        import fairspec.certify.layersplit as ls
        import fairspec.certify.relsplit as rs

        self.c = {"calls": 0, "proofs": 0, "boxes": 0}
        self.kept = [(ls, "prove_layer_split", ls.prove_layer_split),
                     (rs, "prove_relational_split", rs.prove_relational_split)]
        for mod, name, fn in self.kept:
            setattr(mod, name, self._wrap(fn))
        return self.c

    def _wrap(self, fn):
        c = self.c

        def wrapped(*a, **kw):
            dec = fn(*a, **kw)
            c["calls"] += 1
            if dec.proof is not None:
                c["proofs"] += 1
                c["boxes"] += int((np.asarray(dec.status) == 1).sum())
            return dec

        return wrapped

    def __exit__(self, *exc):
        for mod, name, fn in self.kept:
            setattr(mod, name, fn)
        return False
