"""The README's commands and example output that no other test runs, run as a reader runs them.

The Diagnostics section shows a session, ``$ fairspec lint bad.fair`` and its ``--format concise``
form, with the Adult example's model and data: the spec below is that ``bad.fair`` (an encode block
3 columns wide for a model of 46 inputs, and a misspelt group), and each command's output is what
the README prints, line for line (the README's block is read here, so an edit to either is caught).
"""

from __future__ import annotations

import shlex
import shutil

from conftest import EXAMPLES, REPO, run_cli

BAD = """\
data adult = csv("data/adult.data", header = false, missing = ["?"], label = income == ">50K",
  columns = [age, workclass, fnlwgt, education, "education-num", "marital-status", occupation,
             relationship, race, sex, "capital-gain", "capital-loss", "hours-per-week",
             "native-country", income])
features Applicant from adult {
  age  : int in [17, 90]
  race : {"Amer-Indian-Eskimo", "Asian-Pac-Islander", Black, Other, White}
  sex  : {Female, Male} protected
}
model mlp = onnx("models/mlp.onnx", output = "logit")
encode Applicant for mlp {
  age : minmax
  sex, race : code
}
property di {
  disparate_impact(mlp, groups sex x rase) >= 0.8
}
"""


def _session(first: str) -> list[tuple[str, str]]:
    """The README's fenced block that starts with the command ``first``: (command, output) pairs."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text[text.index(f"```\n$ {first}\n") + 4:]
    block = block[:block.index("```")]
    out: list[tuple[str, str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            out.append((line[2:].strip(), ""))
        else:
            out[-1] = (out[-1][0], out[-1][1] + line)
    return [(cmd, got.rstrip("\n") + "\n") for cmd, got in out]


def test_the_readmes_lint_session_prints_what_the_readme_shows(tmp_path):
    adult = EXAMPLES / "adult"
    for part in ("data/adult.data", "models/mlp.onnx"):
        (tmp_path / part).parent.mkdir(exist_ok=True)
        shutil.copyfile(adult / part, tmp_path / part)
    (tmp_path / "bad.fair").write_text(BAD, encoding="utf-8")
    session = _session("fairspec lint bad.fair")
    assert [cmd for cmd, _ in session] == ["fairspec lint bad.fair", "fairspec lint bad.fair --format concise"]
    for cmd, shown in session:
        argv = shlex.split(cmd)
        assert argv[0] == "fairspec"
        r = run_cli(*argv[1:], cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (cmd, r.stdout, r.stderr)  # an error: exit 2
        assert r.stdout == shown, cmd
