"""torch half (float16) modules against certify's float16 error model (fairspec.certify.half).

Measured (and kept measured here): a half Linear is its float32 product plus bias cast to float16
once, the next Linear reading the float16 values; ReLU exact; sigmoid its float32 evaluation cast
once, softmax within the float16 softmax error (mostly the float32 one cast once); torch's float64 ->
float16 conversion rounds twice (through float32), which the bound covers (half.py's docstring; the
loaded model casts with numpy, once). The network reader checks a half module against the converted
network within that bound at each point (certify/agreement.py), not a fixed tolerance. Brute force
on small integer domains: every `holds (proved)` true on every enumerated point of the module, every
witness replayed on it. And the batch question: torch half scores one point differently alone and in
a batch (a wide layer), so torch stays batch dependent; both evaluations lie within the bound.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fairspec.certify.agreement import float16_tolerance  # noqa: E402
from fairspec.certify.class_prob import SOFTMAX_ABS_ERROR  # noqa: E402
from fairspec.certify.half import ETA16, U16  # noqa: E402
from fairspec.certify.network import runtime_error_bound  # noqa: E402
from half_nets import forward64, half_layers, integer_grid, proofs_on_every_point  # noqa: E402
from pair_specs import first_verdict, pair_spec, runtime_gaps, ties_never_contradicted  # noqa: E402


def _module(layers, head=""):
    """A half ``nn.Sequential`` of ``layers`` ([(W [out, in], b, relu)]) and ``head`` ("", "Sigmoid", "Softmax")."""
    mods = []
    for W, b, relu in layers:
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(np.asarray(W, dtype=np.float32)))
            lin.bias.copy_(torch.from_numpy(np.asarray(b, dtype=np.float32)))
        mods.append(lin)
        if relu:
            mods.append(torch.nn.ReLU())
    if head == "Sigmoid":
        mods.append(torch.nn.Sigmoid())
    elif head == "Softmax":
        mods.append(torch.nn.Softmax(dim=1))
    return torch.nn.Sequential(*mods).eval().half()


def _run(module, X) -> np.ndarray:
    with torch.no_grad():       # as TorchModel._forward: float64 cast to float16 by numpy (one rounding)
        return module(torch.from_numpy(np.asarray(X, dtype=np.float16))).double().numpy()


# ------------------------------------------------------------------ how torch computes in half


def test_torch_half_chain_rounds_each_linear_once_and_its_heads_once():
    rng = np.random.default_rng(0)
    layers = half_layers(rng, [30, 20, 20, 4], dyadic=False)
    X = rng.normal(0, 2, (400, 30)).astype(np.float16)
    H = X.astype(np.float32)
    for W, b, relu in layers:
        H = (H @ W.T.astype(np.float32) + b.astype(np.float32)).astype(np.float16).astype(np.float32)
        if relu:
            H = np.maximum(H, np.float32(0))
    assert np.array_equal(_run(_module(layers), X), H.astype(np.float64))
    # the heads: sigmoid bit for bit the float32 one cast once; softmax mostly (one in ~10**5 values one
    # float16 step off: its float32 evaluation differs by path), within the assumed error of the exact one
    Z = torch.from_numpy((rng.normal(size=(20000, 5)) * 4).astype(np.float16))
    with torch.no_grad():
        assert np.array_equal(torch.sigmoid(Z).numpy(), torch.sigmoid(Z.float()).half().numpy())
        p = torch.softmax(Z, dim=1).double().numpy()
    e = np.exp(Z.double().numpy())
    assert np.all(np.abs(p - e / e.sum(axis=1, keepdims=True)) <= SOFTMAX_ABS_ERROR["float16"])


def test_torch_casts_float64_to_float16_through_float32_within_the_bound():
    """The reader's check feeds the module float64 inputs, which torch casts: informative, the cast rounds
    twice (1 + 2**-11 + 2**-25 goes to 1, numpy's direct rounding to
    1 + 2**-10). Checked: its error is within u16 |x| + eta16 at float16 midpoints nudged by fractions
    of a float32 spacing (where double rounding differs) and on random values of every binade."""
    x = np.array([1 + 2.0 ** -11 + 2.0 ** -25])
    assert torch.from_numpy(x).to(torch.float16).double().item() == 1.0
    assert float(x.astype(np.float16)[0]) == 1.0 + 2.0 ** -10
    h = np.arange(0x0001, 0x7BFF, dtype=np.uint16).view(np.float16).astype(np.float64)
    mid = (h[:-1] + h[1:]) / 2
    vals = [mid]
    for k in (-3, -2, -1, 1, 2, 3):
        vals.append(mid * (1 + k * 2.0 ** -26))
    rng = np.random.default_rng(1)
    vals.append(np.exp(rng.uniform(np.log(2.0 ** -26), np.log(65000.0), 200000)))
    v = np.concatenate(vals)
    v = np.concatenate([v, -v])
    got = torch.from_numpy(v).to(torch.float16).double().numpy()
    assert np.all(np.abs(got - v) <= U16 * np.abs(v) + ETA16)
    assert np.any(got != v.astype(np.float16).astype(np.float64))      # it does round twice somewhere


def test_a_loaded_half_module_reads_its_inputs_rounded_once(tmp_path):
    """TorchModel casts with numpy (one rounding), so a point's input is X.astype(float16), which the
    spreads' boxes and the exact-runtime check read."""
    from fairspec.models import load_model

    m = _module([(np.ones((1, 1)), np.zeros(1), False)])
    torch.jit.save(torch.jit.script(m), str(tmp_path / "m.pt"))
    loaded = load_model("torch", tmp_path / "m.pt", score_kind="logit")
    x = np.array([[1 + 2.0 ** -11 + 2.0 ** -25]])
    assert loaded.score(x)[0] == 1.0 + 2.0 ** -10


# ------------------------------------------------------------------ the reader's check


@pytest.mark.parametrize("head", ["", "Sigmoid", "Softmax"])
def test_every_half_output_lies_within_the_readers_tolerance_and_a_float32_one_is_too_small(head):
    """The reader's tolerance (the float16 bound at each point) holds on random half modules at many
    points; the float32 bound in its place (the tamper) is exceeded somewhere."""
    rng = np.random.default_rng(2)
    hit32 = False
    for trial in range(4):
        layers = half_layers(rng, [12, 16, 16, 3], dyadic=trial % 2 == 0)
        m = _module(layers, head)
        X = rng.normal(0, 3, (80, 12))
        got = _run(m, X)
        tol = float16_tolerance(layers, X, head.lower() or "none")
        ex = forward64(layers, X)
        if head == "Sigmoid":
            ex = 1 / (1 + np.exp(-ex))
        elif head == "Softmax":
            ex = np.exp(ex - ex.max(1, keepdims=True))
            ex /= ex.sum(1, keepdims=True)
        assert np.all(np.abs(got - ex) <= tol), np.max(np.abs(got - ex) - tol)
        if head == "":
            e32 = np.array([[runtime_error_bound(layers, x, x, readout=("logit", j), precision="float32")
                             for j in range(3)] for x in X])
            hit32 |= bool(np.any(np.abs(got - ex) > e32))
    assert head != "" or hit32


def test_the_reader_reads_a_half_sequential_and_refuses_one_out_of_order(monkeypatch):
    from fairspec.models.base import UnsupportedModel
    from fairspec.models.network_torch import from_torch

    rng = np.random.default_rng(3)
    layers = half_layers(rng, [5, 8, 1], dyadic=False)
    net = from_torch(_module(layers))
    assert np.array_equal(net.layers[0].W, layers[0][0]) and net.layers[0].relu

    class Skips(torch.nn.Module):           # its children in order, but forward() skips the ReLU
        def __init__(self, seq):
            super().__init__()
            self.a, self.r, self.b = seq[0], seq[1], seq[2]

        def forward(self, x):
            return self.b(self.a(x))

    seq = _module([(np.where(np.arange(8)[:, None] % 2 == 0, 1.0, -1.0) * np.ones((8, 5)) / 4,
                    np.zeros(8), True), (np.ones((1, 8)), np.zeros(1), False)])
    assert not from_torch(Skips(seq)).layers[0].relu     # the chain forward() calls: b(a(x)), no ReLU
    # the agreement check, a second line behind the structural one: read as the declared children
    monkeypatch.setattr("fairspec.models.torch_chain.torch_chain",
                        lambda module, output=None: list(module.named_children()))
    with pytest.raises(UnsupportedModel, match="children in order") as e:
        from_torch(Skips(seq))
    assert "float16 error bound" in str(e.value)


def test_a_half_module_that_overflows_on_the_readers_inputs_is_refused_for_it():
    from fairspec.models.base import UnsupportedModel
    from fairspec.models.network_torch import from_torch

    big = [(np.full((4, 3), 2000.0), np.zeros(4), True), (np.full((1, 4), 8.0), np.zeros(1), False)]
    with pytest.raises(UnsupportedModel, match="65504"):
        from_torch(_module(big))


# ------------------------------------------------------------------ brute force on small domains


@pytest.mark.parametrize("seed", range(6))
def test_every_interval_proof_on_a_half_module_holds_on_every_point(seed):
    """Dyadic half modules (ties: outputs on grid points, exact zeros), a sigmoid head for half of them,
    over a small integer box (one input up to 2100 for some: integers above 2048 are not float16
    numbers). The truth: the module on every point. Every threshold claim proved holds there."""
    rng = np.random.default_rng(200 + seed)
    sig = seed % 2 == 1
    layers = half_layers(rng, [3, 6, 1], dyadic=True)
    hi = np.array([7.0, 5.0, 2100.0 if seed % 3 == 0 else 9.0])
    if seed % 3 == 0:
        layers[0][0][:, 2] = layers[0][0][:, 2] / 64.0
    X = integer_grid(hi.astype(int))
    y = _run(_module(layers, "Sigmoid" if sig else ""), X)[:, 0]
    ex = forward64(layers, X)[:, 0]
    readout = ("prob", 0) if sig else ("logit", 0)
    boxes = [(np.zeros(3), hi)] + [(X[i], X[i]) for i in rng.choice(len(X), 10, replace=False)]
    boxes += [(X[i], np.minimum(X[i] + 1, hi)) for i in rng.choice(len(X), 5, replace=False)]
    assert proofs_on_every_point(layers, X, y, ex, boxes, readout) > 0


MODEL = 'torch("m.pt", score = logit)'


@pytest.mark.parametrize("seed", [0, 1])
def test_the_solvers_prove_and_refute_half_modules_as_the_module_computes(tmp_path, monkeypatch, seed):
    """End to end (FAIRSPEC_ENUMERATE_PAIRS=0: the solvers) against every pair scored on the module:
    clearly above its largest |logit - logit'| holds (proved), below it violated with a witness the
    module replays, and at the tie and one float16 step either side never a verdict its scores
    contradict."""
    rng = np.random.default_rng(seed)
    layers = half_layers(rng, [3, 6, 1], dyadic=seed == 0)
    m = _module(layers)
    torch.jit.save(torch.jit.script(m), str(tmp_path / "m.pt"))
    gaps, top, step = runtime_gaps(lambda X: _run(m, X)[:, 0])
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")

    def verdict(op, eps):
        v = first_verdict(tmp_path, pair_spec(MODEL, op, eps))
        if v["status"] == "violated":           # the witness replayed on the module itself
            w = v["witness"]
            a, b = _run(m, np.array([w["x"], w["x_prime"]]))[:, 0]
            assert (abs(a - b) > eps) if op == "<=" else (abs(a - b) >= eps), (v, a, b)
        return v

    # beyond the runtime's largest gap by more than twice its error bound over the domain: the real
    # network's gap stays below it by a margin, so the solvers prove it
    E = runtime_error_bound(layers, [0, 0, 0], [30, 1, 20], readout=("logit", 0), precision="float16",
                            integer=[True] * 3)
    far = verdict("<=", top + 3 * E + 0.5)
    assert far["status"] == "holds" and far["how"] == "proved", far
    below = verdict("<=", top - 4 * step)
    assert below["status"] == "violated", below
    ties_never_contradicted(verdict, gaps, top, step)


# ------------------------------------------------------------------ the batch question


def test_torch_half_is_batch_dependent_and_both_evaluations_lie_within_the_bound(tmp_path):
    """Measured: a half module 1000 inputs wide scores some points differently alone and in one batch
    of 257 (its CPU GEMM blocks by the batch's size), as torch in float32 does; fairspec counts torch
    batch dependent whatever this measures (models.batching), and both evaluations lie within the
    error bound of the exact network, so the bound holds for every batching."""
    from fairspec.models import load_model
    from fairspec.models.batching import batch_dependent, rounds_by_batch

    rng = np.random.default_rng(4)
    layers = half_layers(rng, [1000, 64, 1], dyadic=False)
    m = _module(layers)
    X = rng.normal(size=(257, 1000)).astype(np.float16).astype(np.float64)
    full = _run(m, X)[:, 0]
    alone = np.array([_run(m, X[i:i + 1])[0, 0] for i in range(len(X))])
    ex = forward64(layers, X)[:, 0]
    lo, hi = X.min(axis=0), X.max(axis=0)
    E = runtime_error_bound(layers, lo, hi, readout=("logit", 0), precision="float16")
    assert np.all(np.abs(full - ex) <= E) and np.all(np.abs(alone - ex) <= E)
    print(f"torch half: {np.count_nonzero(full != alone)} of {len(X)} points scored otherwise alone")
    torch.jit.save(torch.jit.script(m), str(tmp_path / "m.pt"))
    loaded = load_model("torch", tmp_path / "m.pt", score_kind="logit")
    assert loaded.precision == "float16" and batch_dependent(loaded) and rounds_by_batch(loaded)
