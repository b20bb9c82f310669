"""The editor walked as a user of VS Code / Neovim would, one real stdio client session per case
(fairspec/lsp/client.py): hover on a `column "x"` of a features block without `from`, ... Waits are
guards, never speed requirements."""

from __future__ import annotations

import asyncio
import shutil

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp.client import Session, apply_edits  # noqa: E402

DECISIONS = EXAMPLES / "predictions" / "decisions.csv"


def run(scenario):
    asyncio.run(scenario())


FROMLESS = """{data}
features Applicant {{
  age  : int in [17, 90] column "age"
  sex  : {{Female, Male}} protected column "sex"
}}

model clf = rule(age >= 40)

property p {{
  statistical_parity(clf, groups sex, data = log) <= 0.15
}}
"""


@pytest.mark.parametrize("data, said", [
    ('data log = csv("decisions.csv")\n',
     "- read by feature `age` of `Applicant` as `int in [17, 90]` (no `from`: `log` is the only data set declared)"),
    ('data log = csv("decisions.csv")\ndata old = csv("decisions.csv")\n',
     "`Applicant` has no `from`, so the data set is the one a property passes (`data = ...`); 2 are declared: "
     "`log`, `old`"),
    ('data log = csv("gone.csv")\n', "`log`, the only data set declared, cannot be read"),
])
def test_a_column_of_a_features_block_without_from_names_its_data_set_or_says_it_is_not_one(tmp_path, data, said):
    shutil.copy(DECISIONS, tmp_path / "decisions.csv")
    spec = tmp_path / "s.fair"
    spec.write_text(FROMLESS.format(data=data), encoding="utf-8")

    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(spec)
            got = (await s.hover(uri, s.pos(text, 'column "age"', 9))).contents.value
            assert said in got, got
            if "only data set declared)" in said:
                assert got.startswith("**column** `age` of `log` (column 2 of 8)\n- whole numbers in the first"), got
            else:
                assert got.startswith("**column** `age`, read by feature `age` of `Applicant`: "), got
    run(scenario)
