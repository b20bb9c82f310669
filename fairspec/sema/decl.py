"""A declaration as the Checker (fairspec.sema.check and its parts) walks it: the syntax node and the folder
its relative paths resolve against (the folder of the file that declares it, an imported file's own)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fairspec.syntax import ast


@dataclass
class Decl:
    node: ast.Decl
    base: Path  # folder that relative paths in this declaration resolve against
