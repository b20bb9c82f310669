"""Assigning rows to (compound) groups."""

from __future__ import annotations

import numpy as np

from fairspec import ir
from fairspec.runtime.evaluate import evaluate


def _atom_labels(atom: ir.GroupAtom, fs: ir.FeatureSet) -> list[str]:
    if atom.feature is not None:
        f = fs.get(atom.feature)
        if isinstance(f.domain, ir.Boolean):
            return [f"not {f.name}", f.name]
        return [f"{f.name}={c}" for c in atom.values]
    return list(atom.values)


def assign(groups: ir.Groups, fs: ir.FeatureSet, values: dict, n: int) -> tuple[np.ndarray, list[str]]:
    """Index of each row's compound group, and the group names in index order."""
    idx = np.zeros(n, dtype=np.int64)
    names = [""]
    for atom in groups.atoms:
        labels = _atom_labels(atom, fs)
        if atom.feature is not None:
            codes = values[atom.feature].astype(np.int64)
        else:
            def lookup(e):
                return values[e.feature]
            codes = evaluate(atom.predicate, lookup, n).astype(np.int64)
        idx = idx * len(labels) + codes
        names = [f"{a} x {b}" if a else b for a in names for b in labels]
    return idx, names
