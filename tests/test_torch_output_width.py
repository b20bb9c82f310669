"""A torch network's output width for lint's FS213 on max_rows (session 36 leftover): ``prob(m(x), 1)`` with
``max_rows`` reads its data rows only for a one-output network (decided as prob(m(x)), its rows flipped first);
a K-output network's softmax branch and bound flips none. Lint read the width of ONNX files only, so a torch
model got no FS213 at all. Now lint reads it from an ``nn.Sequential`` (eager or scripted, inertly:
models.peek_torch.torch_output_columns); any other module's forward may compute anything, so lint stays silent
there, and check's verdict notes say max_rows was unread once the loaded model's width is known
(kinds.multi_pairs)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pd = pytest.importorskip("pandas")

SPEC = """data d = csv("t.csv", label = y == 1)
features F from d {{
  a : real in [0, 100000]
  g : {{A, B}} protected
}}
model m = torch("m.pt", score = logit{trust})
encode F for m {{ a : raw  g : code {{A = 0, B = 1}} }}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |prob(m(x), 1) - prob(m(x'), 1)| <= 0.2
  max_rows = 50
  using milp
}}
"""


class _Own(torch.nn.Module):
    """Not a Sequential: its forward is its own (lint cannot tell its width)."""

    def __init__(self, lin):
        super().__init__()
        self.lin = lin

    def forward(self, x):
        return self.lin(x)


def _hook(module, inputs, output):
    return output[:, :1]


def _linear(k):
    lin = torch.nn.Linear(2, k)
    with torch.no_grad():
        lin.weight[:] = torch.tensor([[0.01, 3.0]] * k)
        lin.bias[:] = torch.tensor([-5.0] + [0.0] * (k - 1))
    return lin


def _write(tmp_path, module, script=True, trust=False):
    if script:
        torch.jit.save(torch.jit.script(module), str(tmp_path / "m.pt"))
    else:
        torch.save(module, str(tmp_path / "m.pt"))
    rng = np.random.default_rng(0)
    n = 200
    pd.DataFrame({"a": rng.integers(0, 1000, n), "g": rng.choice(["A", "B"], n), "y": 1}).to_csv(
        tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(SPEC.format(trust=", trust pickle" if trust else ""))
    return tmp_path / "m.pt"


def _fs213(tmp_path):
    from fairspec import api

    res = api.lint(str(tmp_path / "s.fair"))
    diags = res if isinstance(res, list) else res.diagnostics
    return [d.message for d in diags if d.code == "FS213"]


def test_output_width_read_inertly(tmp_path):
    """Failed before (no torch_output_columns). Only a Sequential's width, behind width-keeping layers."""
    from fairspec.models.peek_torch import torch_output_columns

    seq = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3), torch.nn.Softmax(dim=1))
    assert torch_output_columns(_write(tmp_path, seq)) == 3
    assert torch_output_columns(_write(tmp_path, seq, script=False)) == 3
    assert torch_output_columns(tmp_path / "m.pt", output=1) is None
    nested = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Sigmoid()))
    assert torch_output_columns(_write(tmp_path, nested)) == 1
    assert torch_output_columns(_write(tmp_path, _Own(_linear(3)))) is None
    assert torch_output_columns(_write(tmp_path, torch.nn.Sequential(_linear(3), torch.nn.Flatten()))) is None
    hooked = torch.nn.Sequential(_linear(3))
    hooked.register_forward_hook(_hook)          # its output is one column, whatever the Linear's width
    assert torch_output_columns(_write(tmp_path, hooked, script=False)) is None


def test_lint_says_max_rows_unread_for_a_torch_sequential_of_three_outputs(tmp_path):
    """Failed before: no FS213 for a torch model (its width unknown to lint)."""
    _write(tmp_path, torch.nn.Sequential(_linear(3)))
    fs213 = _fs213(tmp_path)
    assert len(fs213) == 1 and "max_rows" in fs213[0] and "a network's prob(m(x), c)" in fs213[0], fs213
    _write(tmp_path, torch.nn.Sequential(_linear(3)), script=False, trust=True)
    assert len(_fs213(tmp_path)) == 1


def test_one_output_torch_sequential_reads_its_rows(tmp_path):
    """A one-output network's class 1 is prob(m(x)), its data rows flipped first: no FS213."""
    _write(tmp_path, torch.nn.Sequential(_linear(1), torch.nn.Identity()))
    assert _fs213(tmp_path) == []


def test_check_notes_max_rows_unread_where_lint_cannot_tell(tmp_path):
    """A module of its own with 3 outputs: lint is silent (its forward may compute anything); check decides the
    softmax by branch and bound, flipping no data rows, and its notes say max_rows was unread. Failed before
    (no note: the option passed silently)."""
    from fairspec import api

    _write(tmp_path, _Own(_linear(3)))
    assert _fs213(tmp_path) == []
    (p,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    notes = (p.get("details") or {}).get("notes") or []
    assert p["status"] == "holds", p
    assert any("`max_rows` has no effect" in n and "3 output columns" in n for n in notes), notes
    _write(tmp_path, _Own(_linear(1)))          # one output: prob(m(x)), its 50 rows flipped first, no note
    (p,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    assert p["status"] == "violated" and (p.get("details") or {}).get("rows") == 50, p
    assert not any("max_rows" in n for n in (p.get("details") or {}).get("notes") or []), p
