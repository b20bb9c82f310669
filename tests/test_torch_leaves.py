"""Every leaf layer whose stored TorchScript code ``models.torch_chain`` checks (``_CHECKED_LEAVES``), in an
nn.Sequential the reader takes, x {torch.jit.script, torch.jit.trace} x {in memory, saved and loaded,
saved twice (load, save, load)} x {float32, float64}: read (no refusal as "not torch's own ...forward"),
and the network read agrees with the module.

The shapes teams ship most had no test: a saved archive's Dropout was refused (torch.jit.load lists a
layer's constants in another order, c51c103), and a traced layer keeps none of its settings (ReLU's
inplace, Flatten's dims, Softmax's dim, Dropout's inplace: only constants in its graph), so every traced
non-default one was refused, and a traced Identity (called with no input) too. Edited code stays refused:
tests/test_torch_chain.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fairspec.models import load_model  # noqa: E402
from fairspec.models.network_torch import from_torch  # noqa: E402
from fairspec.models.torch_chain import _CHECKED_LEAVES  # noqa: E402

nn = torch.nn

# name: (the leaf, whether it is the final layer (Sigmoid / Softmax), the chain's input width)
_LEAVES = {
    "Linear": (lambda: nn.Linear(4, 4), False),
    "Linear-no-bias": (lambda: nn.Linear(4, 4, bias=False), False),
    "ReLU": (lambda: nn.ReLU(), False),
    "ReLU-inplace": (lambda: nn.ReLU(inplace=True), False),
    "Identity": (lambda: nn.Identity(), False),
    "Dropout-0": (lambda: nn.Dropout(0.0), False),
    "Dropout-0.3": (lambda: nn.Dropout(0.3), False),
    "Dropout-default": (lambda: nn.Dropout(), False),
    "Dropout-inplace": (lambda: nn.Dropout(0.1, inplace=True), False),
    "AlphaDropout-0.2": (lambda: nn.AlphaDropout(0.2), False),
    "AlphaDropout-default": (lambda: nn.AlphaDropout(), False),
    "Flatten": (lambda: nn.Flatten(), False),
    "Flatten-1-1": (lambda: nn.Flatten(1, 1), False),
    "Flatten-0-0": (lambda: nn.Flatten(0, 0), False),
    "Flatten--1--1": (lambda: nn.Flatten(-1, -1), False),
    "Sigmoid": (lambda: nn.Sigmoid(), True),
    "Softmax-1": (lambda: nn.Softmax(dim=1), True),
    "Softmax--1": (lambda: nn.Softmax(dim=-1), True),
}


def _sequential(leaf: str, dtype):
    torch.manual_seed(0)
    layer, final = _LEAVES[leaf]
    if final:               # Linear, ReLU, Linear, the squash: one logit for Sigmoid, two classes for Softmax
        body = [nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1 if leaf == "Sigmoid" else 2), layer()]
    else:                   # the leaf between two Linears (after a ReLU: an inplace one's input is computed)
        body = [nn.Linear(3, 4), nn.ReLU(), layer(), nn.Linear(4, 1)]
    return nn.Sequential(*body).to(dtype).eval()


@pytest.fixture(autouse=True, scope="module")
def _torch_is_unpatched():
    """Nothing here patches torch, which torch_own's scan of torch's functions (twice a read, most of
    its time) asserts: checked once (tests/test_torch_own.py covers it); per read it would only make the
    matrix slow."""
    from fairspec.models import torch_own

    assert torch_own.changed() == ""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch_own, "changed", lambda: "")
        yield


def test_every_checked_leaf_type_is_in_the_matrix():
    types = {type(layer()).__name__ for layer, _ in _LEAVES.values()}
    assert types == _CHECKED_LEAVES


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("where", ["memory", "saved", "saved-twice"])
@pytest.mark.parametrize("how", ["script", "trace"])
@pytest.mark.parametrize("leaf", list(_LEAVES))
def test_a_sequential_with_the_leaf_is_read_and_agrees(tmp_path, leaf, how, where, dtype):
    dt = getattr(torch, dtype)
    seq = _sequential(leaf, dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # TracerWarnings, torch.jit deprecations
        m = torch.jit.script(seq) if how == "script" else torch.jit.trace(seq, torch.zeros(2, 3, dtype=dt))
        index = 1 if leaf.startswith("Softmax") else None
        if where == "memory":
            net = from_torch(m, index=index)
        else:
            path = tmp_path / "m.pt"
            torch.jit.save(m, str(path))
            if where == "saved-twice":
                torch.jit.save(torch.jit.load(str(path)), str(path))
            net = load_model("torch", path, index=index).piecewise_linear()
    X = np.random.default_rng(1).normal(size=(16, 3)) * 3.0
    with torch.no_grad():
        want = seq(torch.as_tensor(X, dtype=dt)).double().numpy()[:, index or 0]
    got = net.forward(X) if net.final == "none" else net.prob(X)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _traced_archive(tmp_path, seq):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.trace(seq.eval(), torch.zeros(2, 3)), str(tmp_path / "m.pt"))
    return tmp_path / "m.pt"


def _edited(path, member: str, old: bytes, new: bytes):
    import zipfile

    out, edits = path.with_name("edited.pt"), 0
    with zipfile.ZipFile(path) as zi, zipfile.ZipFile(out, "w") as zo:
        for info in zi.infolist():
            data = zi.read(info.filename)
            # activation.py, or activation/___torch_mangle_N.py: a process that traced or scripted a layer of
            # that module before names the archive's classes apart (no edit applied looked like torch
            # "reusing" its own class)
            stem = member.removesuffix(".py")
            if f"/{stem}.py" in info.filename or (f"/{stem}/___torch_mangle_" in info.filename
                                                  and info.filename.endswith(".py")):
                if old in data:
                    data = data.replace(old, new)
                    edits += 1
            zo.writestr(info, data)
    assert edits >= 1, "the edit was applied nowhere"
    return out


@pytest.mark.parametrize("layer, member, old, new", [
    # the settings a traced layer's constants may stand for are torch's own code only as they are
    (nn.ReLU(inplace=True), "activation.py", b"return torch.relu_(argument_1)",
     b"return torch.relu_(torch.mul(argument_1, 1.5))"),
    # an Identity called off the chain (a trace's, with no input) runs torch's own code only (an effect;
    # torch.jit.load drops dead pure code, so an unused torch.zeros would be what torch runs: its own)
    (nn.Identity(), "linear.py", b"NoneType:\n    return None", b"NoneType:\n    print(\"hi\")\n    return None"),
])
def test_edited_code_of_a_traced_leaf_is_refused(tmp_path, capfd, layer, member, old, new):
    """The edit is what runs, and it is refused."""
    from fairspec.models.torch_chain import NotAChain

    seq = nn.Sequential(nn.Linear(3, 4), layer, nn.ReLU(), nn.Linear(4, 1)).eval()
    edited = _edited(_traced_archive(tmp_path, seq), member, old, new)
    x = torch.ones(1, 3)
    capfd.readouterr()
    model = load_model("torch", edited)
    assert not torch.equal(model.raw(x), seq(x)) or "hi" in capfd.readouterr().out      # the edit runs
    with pytest.raises(NotAChain, match=f"not torch's own {type(layer).__name__}.forward"):
        model.piecewise_linear()


def test_a_traced_softmax_over_the_batch_is_refused_as_such():
    """A traced Softmax keeps no dim: the one its graph is torch's code for is the one read."""
    from fairspec.models.base import UnsupportedModel

    seq = nn.Sequential(nn.Linear(3, 2), nn.Softmax(dim=0)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = torch.jit.trace(seq, torch.zeros(2, 3))
    with pytest.raises(UnsupportedModel, match="Softmax over dim 0 is not over the classes"):
        from_torch(m, index=1)


def test_a_flatten_merging_the_rows_is_refused_in_one_sentence(tmp_path):
    """Flatten(0, -1) is torch's own code but does not keep rows apart: running it failed with a
    RuntimeError out of the reader (a traceback), not a reason; now the layer is named, by the loader (the
    file: test_torch_refusals) and by the reader of a module in memory."""
    from fairspec.models.base import ModelLoadError, UnsupportedModel

    seq = nn.Sequential(nn.Linear(3, 2), nn.Flatten(0, -1), nn.Linear(2, 1)).eval()
    torch.save(seq, str(tmp_path / "m.pt"))
    with pytest.raises(ModelLoadError, match=r"m.pt has a layer 1, Flatten\(start_dim=0, end_dim=-1\), that merges"):
        load_model("torch", tmp_path / "m.pt", trust_pickle=True)
    with pytest.raises(UnsupportedModel, match=r"Flatten \(1\): Flatten\(start_dim=0, end_dim=-1\) merges the batch"):
        from_torch(seq)
