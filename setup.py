"""Build hook: a wheel carries the top-level grammar/ and specs/ inside the package.

The repository keeps the grammar and the shipped policy files at the top level
(grammar/fairspec.lark, specs/); fairspec/paths.py finds them there in a checkout
or an editable install, and inside the package (fairspec/grammar, fairspec/specs)
in an installed wheel.  Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class build_py_with_data(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "fairspec"
        shutil.copytree(ROOT / "grammar", target / "grammar", dirs_exist_ok=True)
        shutil.copytree(ROOT / "specs", target / "specs", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))


setup(cmdclass={"build_py": build_py_with_data})
