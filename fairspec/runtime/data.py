"""Reading the data sets a spec declares (CSV) into column arrays.

Errors are :class:`DataError`: one sentence naming the file and the problem.
Nothing here writes files.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from fairspec import ir

if TYPE_CHECKING:  # numpy stays out of `fairspec lint`, which only reads headers
    import numpy as np


class DataError(Exception):
    pass


@dataclass
class Table:
    """Raw columns (whitespace-stripped strings) of the rows that survive filters."""

    name: str
    path: str
    columns: dict[str, "np.ndarray"]  # object arrays of str
    n_rows: int
    n_read: int = 0
    n_missing: int = 0
    n_filtered: int = 0
    _numeric: dict | None = None

    def numeric(self, col: str) -> "np.ndarray | None":
        """The column as float64, or None when some value is not a number."""
        if self._numeric is None:
            self._numeric = {}
        if col not in self._numeric:
            import numpy as np

            try:
                self._numeric[col] = self.columns[col].astype(np.float64)
            except (ValueError, TypeError):
                self._numeric[col] = None
        return self._numeric[col]

    def subset(self, mask: "np.ndarray") -> "Table":
        cols = {k: v[mask] for k, v in self.columns.items()}
        return Table(self.name, self.path, cols, int(mask.sum()), self.n_read, self.n_missing,
                     self.n_filtered + int((~mask).sum()))


def _open_rows(d: ir.Data, limit: int | None = None):
    path = Path(d.path)
    if not path.is_file():
        raise DataError(f"data file {d.path} does not exist")
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as e:
        raise DataError(f"data file {d.path} cannot be opened: {e.strerror or e}") from None
    with f:
        try:
            reader = csv.reader(f, delimiter=d.sep, skipinitialspace=True)
            rows = []
            for i, row in enumerate(reader):
                if limit is not None and i >= limit:
                    break
                rows.append(row)
        except UnicodeDecodeError:
            raise DataError(f"data file {d.path} is not UTF-8 text") from None
        except csv.Error as e:
            raise DataError(f"data file {d.path} is not valid CSV: {e}") from None
    return rows


def column_names(d: ir.Data, sample: int = 200) -> tuple[list[str], list[list[str]]]:
    """The column names and the first rows, read cheaply (for lint)."""
    rows = _open_rows(d, limit=sample + 1)
    if d.header:
        if not rows:
            raise DataError(f"data file {d.path} is empty")
        names = [c.strip() for c in rows[0]]
        body = rows[1:]
    else:
        body = rows
        if d.columns is None:
            raise DataError(f"data file {d.path} has no header line and the spec gives no column names")
        names = list(d.columns)
    if d.header and d.columns is not None:
        names = list(d.columns)
    return names, body


def read_table(d: ir.Data) -> Table:
    import numpy as np

    rows = _open_rows(d)
    if d.header:
        if not rows:
            raise DataError(f"data file {d.path} is empty")
        names = [c.strip() for c in rows[0]]
        rows = rows[1:]
        if d.columns is not None:
            names = list(d.columns)
    else:
        if d.columns is None:
            raise DataError(f"data file {d.path} has no header line and the spec gives no column names")
        names = list(d.columns)
    width = len(names)
    # Blank lines and comment-like trailers (adult.test's first line) are skipped;
    # any other row of the wrong length is an error naming its line.
    clean = []
    header_lines = 1 if d.header else 0
    for i, r in enumerate(rows):
        if not r or (len(r) == 1 and (not r[0].strip() or r[0].startswith("|"))):
            continue
        if len(r) != width:
            raise DataError(f"data file {d.path} line {i + 1 + header_lines} has {len(r)} fields, expected {width}")
        clean.append([v.strip() for v in r])
    n_read = len(clean)
    if n_read == 0:
        raise DataError(f"data file {d.path} has no data rows")
    arr = np.array(clean, dtype=object)
    missing = np.zeros(n_read, dtype=bool)
    if d.missing:
        marks = set(d.missing)
        # a row with any missing marker is dropped (set.isdisjoint walks the row in C)
        missing = np.fromiter((not marks.isdisjoint(r) for r in clean), dtype=bool, count=n_read)
    keep = ~missing
    cols = {name: arr[keep, j] for j, name in enumerate(names)}
    table = Table(d.name, d.path, cols, int(keep.sum()), n_read, int(missing.sum()), 0)
    return table
