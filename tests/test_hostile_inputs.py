"""Odd input files end to end (session 26): what lint passed and check then refused, and diagnostics
that named the wrong thing. Each test says what was seen before its fix."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, people_decls, run_cli
from fairspec.models import ModelLoadError, load_model
from fairspec.pipeline import lint

PEOPLE = FIXTURES / "data" / "people.csv"


def _errors(spec):
    return [(d.code, d.message) for d in lint(spec).diagnostics if d.is_error]


# ------------------------------------------------------------------ torch.save files without trust

_TORCH = people_decls("people.csv") + '''model net = torch("m.pt", output = 0, score = logitTRUST)
encode People for net { age : standard  sex : onehot  race : code  member, score : raw }
property parity { statistical_parity(net, groups sex) <= 0.99 }
'''


@pytest.mark.parametrize("how", ["zip", "legacy", "state_dict", "other pickle"])
def test_lint_refuses_an_untrusted_torch_save_file_as_check_does(tmp_path, how):
    """torch.save writes a pickle (a zip holding data.pkl since torch 1.6, a bare pickle before): check's
    loader refused it without `trust pickle`, but lint keyed FS408 on .pkl / .joblib and passed every
    .pt file, so the commonest way to save a torch model linted clean and then failed check."""
    torch = pytest.importorskip("torch")
    import pickle

    (tmp_path / "people.csv").write_bytes(PEOPLE.read_bytes())
    net = torch.nn.Sequential(torch.nn.Linear(6, 1))
    path = tmp_path / "m.pt"
    if how == "zip":
        torch.save(net, str(path))
    elif how == "legacy":
        torch.save(net, str(path), _use_new_zipfile_serialization=False)
    elif how == "state_dict":
        torch.save(net.state_dict(), str(path))
    else:
        path.write_bytes(pickle.dumps({"not": "torch"}))
    spec = tmp_path / "s.fair"
    spec.write_text(_TORCH.replace("TRUST", ""))
    ((code, message),) = _errors(spec)
    assert code == "FS408" and message.startswith("m.pt is a pickle (as torch.save writes)"), message
    with pytest.raises(ModelLoadError) as e:
        load_model("torch", path)
    assert e.value.message == message.replace("m.pt", str(path), 1)
    r = run_cli("check", spec, "--format", "json")
    assert r.returncode == 2 and [d["code"] for d in json.loads(r.stdout)["diagnostics"]] == ["FS408"], r.stdout
    spec.write_text(_TORCH.replace("TRUST", ", trust pickle"))
    assert [c for c, _ in _errors(spec) if c == "FS408"] == []


def test_a_torchscript_file_needs_no_trust(tmp_path):
    torch = pytest.importorskip("torch")
    (tmp_path / "people.csv").write_bytes(PEOPLE.read_bytes())
    torch.jit.save(torch.jit.script(torch.nn.Sequential(torch.nn.Linear(6, 1))), str(tmp_path / "m.pt"))
    spec = tmp_path / "s.fair"
    spec.write_text(_TORCH.replace("TRUST", ""))
    assert _errors(spec) == []
