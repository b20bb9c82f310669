"""torch files fairspec cannot feed, refused by what they hold in one sentence naming the file, not by the
error feeding them causes: a forward() taking a NamedTuple of tensors (FS428, at lint from the code the
archive stores and at check: what it takes, what to save instead; was check's 'evaluating ... failed:
forward() Expected a value of type '__torch__.Pair''), and a Flatten layer that merges the batch dimension
(named at load; was a shape error: 'mat1 and mat2 shapes cannot be multiplied', 'has shape (6,) for a batch
of 2 rows'). Flatten(0, -1) squeezing an [N, 1] output keeps the rows apart and is read as before.
TorchScript archives are scripted in another process: torch.jit.load reuses a class this process compiled
under the same name (a user's class, a Flatten's mangled one)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import NamedTuple

import pytest

torch = pytest.importorskip("torch")

from test_torch_chain import _lint_doc  # noqa: E402
from test_torch_multi_output import ENCODE, FEATURES, _prop  # noqa: E402

from fairspec.models import ModelLoadError, load_model  # noqa: E402


def _saved(tmp_path, code: str, name: str = "m.pt"):
    """``code`` run as a script in another process with the path to save to as sys.argv[1] (a file:
    torch.jit.script reads a class's source; tmp_path its directory: a module written there is importable)."""
    (tmp_path / "save_it.py").write_text(code)
    subprocess.run([sys.executable, "save_it.py", str(tmp_path / name)], cwd=tmp_path, check=True)
    return tmp_path / name


_HALVES = """
import sys, torch
from typing import NamedTuple
class Halves(NamedTuple):
    left: torch.Tensor
    right: torch.Tensor
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 3)
    def forward(self, p: Halves):
        return self.l(torch.cat([p.left, p.right], dim=1))
torch.jit.save(torch.jit.script(M().eval()), sys.argv[1])
"""
# a NamedTuple of a module of its own: the archive stores it as __torch__.h5_shares.Shares, in
# code/__torch__/h5_shares.py
_SHARES_MODULE = """
from typing import NamedTuple
import torch
class Shares(NamedTuple):
    counts: torch.Tensor
    flags: torch.Tensor
    weights: torch.Tensor
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 3)
    def forward(self, p: Shares):
        return self.l(torch.cat([p.counts, p.flags, p.weights], dim=1))
"""
_SHARES = "import sys, torch, h5_shares\ntorch.jit.save(torch.jit.script(h5_shares.M().eval()), sys.argv[1])\n"


@pytest.mark.parametrize("code, takes, cls", [
    (_HALVES, "a NamedTuple Halves (p: left, right)", "Halves"),
    (_SHARES, "a NamedTuple Shares (p: counts, flags, weights)", "Shares")])
def test_a_torchscript_forward_taking_a_named_tuple_is_fs428_at_lint_and_check(tmp_path, code, takes, cls):
    (tmp_path / "h5_shares.py").write_text(_SHARES_MODULE)
    _saved(tmp_path, code)
    doc = _lint_doc(tmp_path, 'torch("m.pt", score = logit)')       # no torch imported by lint
    (d,) = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    assert d["code"] == "FS428" and (d["line"], d["column"]) == (6, 17), d
    said = d["message"]
    assert f"m.pt has a forward() that takes {takes}, but fairspec feeds a model one tensor" in said, said
    assert "which columns would go to which field is in neither the file nor the spec" in said, said
    assert said.endswith(f"save a module whose forward() takes that one tensor and builds the {cls} from it"), said
    with pytest.raises(ModelLoadError) as e:
        load_model("torch", tmp_path / "m.pt")
    assert e.value.code == "FS428" and e.value.message == said, (e.value.message, said)


class _Halves(NamedTuple):
    left: torch.Tensor
    right: torch.Tensor


class _TakesHalves(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 3)

    def forward(self, p: _Halves):     # a string annotation here (from __future__ import annotations)
        return self.l(torch.cat([p.left, p.right], dim=1))


def test_a_pickled_forward_taking_a_named_tuple_is_fs428_at_check(tmp_path, monkeypatch, capsys):
    """A torch.save pickle holds no code: lint cannot see the signature; check's load reads the annotation
    (its name looked up in forward's module, nothing evaluated) and refuses it with the same code, exit 2
    (was: 'evaluating ... failed: 'Tensor' object has no attribute 'left'')."""
    from fairspec.cli import main

    torch.save(_TakesHalves().eval(), str(tmp_path / "m.pt"))
    (tmp_path / "spec.fair").write_text(FEATURES + 'model m = torch("m.pt", score = logit, trust pickle)\n'
                                        + ENCODE + _prop("cls", "class(m(x)) == class(m(x'))", "milp", "prove"))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["check", "spec.fair", "--format", "json"]) == 2
    rep = json.loads(capsys.readouterr().out)
    (d,) = rep["diagnostics"]
    assert d["code"] == "FS428", d
    assert "m.pt has a forward() that takes a NamedTuple _Halves (p: left, right), but" in d["message"], d
    assert d["message"].endswith("takes that one tensor and builds the _Halves from it"), d
    assert rep["properties"] == []


def _flatten_saved(tmp_path, layers: str, how: str, name: str = "m.pt"):
    """torch.nn.Sequential(layers) saved in this process (torch's own layers only: no class source for
    torch.jit.script to read from a file; a process of its own cost ~3 s CPU importing torch)."""
    from torch.nn import Flatten, Linear, ReLU

    torch.manual_seed(0)
    m = torch.nn.Sequential(*eval(f"({layers},)", {"Flatten": Flatten, "Linear": Linear, "ReLU": ReLU})).eval()
    path = tmp_path / name
    if how == "script":
        torch.jit.save(torch.jit.script(m), str(path))
    elif how == "trace":
        torch.jit.save(torch.jit.trace(m, torch.zeros(1, 4)), str(path))
    else:
        assert how == "eager", how
        torch.save(m, str(path))
    return path


@pytest.mark.parametrize("how", ["script", "trace", "eager"])
@pytest.mark.parametrize("layers, name, dims", [
    ("Linear(4, 5), ReLU(), Flatten(0, -1), Linear(5, 3)", "2", (0, -1)),     # was: mat1 and mat2 shapes ...
    ("Linear(4, 5), ReLU(), Linear(5, 3), Flatten(0, -1)", "3", (0, -1)),     # was: shape (6,) for 2 rows
    ("Linear(4, 5), ReLU(), Linear(5, 3), Flatten(-2, 1)", "3", (-2, 1))])
def test_a_flatten_that_merges_the_batch_dimension_is_refused_by_name(tmp_path, how, layers, name, dims):
    path = _flatten_saved(tmp_path, layers, how)
    with pytest.raises(ModelLoadError) as e:
        load_model("torch", path, trust_pickle=how == "eager")
    assert e.value.message == (
        f"torch model {path} has a layer {name}, Flatten(start_dim={dims[0]}, end_dim={dims[1]}), that merges the "
        f"batch dimension into the features: its outputs are not one per row of the [N, 4] batch fairspec feeds it; "
        f"save the module with Flatten() there (start_dim=1 keeps the rows apart) or without it"), e.value.message


def test_check_names_the_merging_flatten_in_one_sentence(tmp_path, monkeypatch, capsys):
    from fairspec.cli import main

    _flatten_saved(tmp_path, "Linear(4, 5), ReLU(), Flatten(0, -1), Linear(5, 3)", "script")
    (tmp_path / "spec.fair").write_text(FEATURES + 'model m = torch("m.pt", score = logit)\n' + ENCODE
                                        + _prop("cls", "class(m(x)) == class(m(x'))", "milp", "prove"))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["check", "spec.fair", "--format", "json"]) == 2
    rep = json.loads(capsys.readouterr().out)
    assert (rep["properties"], rep["diagnostics"]) == ([], []), rep
    assert "m.pt has a layer 2, Flatten(start_dim=0, end_dim=-1), that merges the batch dimension" in rep["error"], rep
    assert "evaluating" not in rep["error"] and "mat1" not in rep["error"], rep["error"]


@pytest.mark.parametrize("how", ["script", "trace", "eager"])
def test_a_flatten_squeezing_one_output_column_is_read_as_before(tmp_path, how):
    """Flatten(0, -1) of an [N, 1] output is [N]: one number per row, the rows kept apart."""
    import numpy as np

    path = _flatten_saved(tmp_path, "Linear(4, 5), ReLU(), Linear(5, 1), Flatten(0, -1)", how)
    m = load_model("torch", path, score_kind="logit", trust_pickle=how == "eager")
    assert m.input_width == 4
    X = np.arange(12.0).reshape(3, 4)
    assert m.score(X).shape == (3,)
    assert m.piecewise_linear().widths[-1] == 1
