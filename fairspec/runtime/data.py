"""Reading the data sets a spec declares (CSV, Parquet) into column arrays.

Errors are :class:`DataError`: one sentence naming the file and the problem.
Nothing here writes files.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from fairspec import ir
from fairspec import filecache

if TYPE_CHECKING:  # numpy stays out of `fairspec lint`, which only reads headers
    import numpy as np


class DataError(Exception):
    """One sentence naming a data file that cannot be used; ``path``: that file (the run-time context
    sets it for what it reads, so that the error is located at the file's declaration)."""

    def __init__(self, message: str, path=None):
        super().__init__(message)
        self.path = path


@dataclass
class Table:
    """The columns of the rows that survive the missing-value (and where) filters.

    A column is a ``Coded`` text column (int32 codes into distinct whitespace-stripped strings,
    see fairspec/runtime/columnar.py) or a float64 array (a typed numeric source column).
    """

    name: str
    path: str
    columns: dict[str, object]
    n_rows: int
    n_read: int = 0
    n_missing: int = 0
    n_filtered: int = 0
    _numeric: dict | None = None
    # the Parquet boolean columns (read as 1.0 / 0.0): runtime.frame refuses one a number feature or category
    # codes read, as lint's FS404 does from the schema (a file replaced after lint is read as it is now)
    booleans: frozenset = frozenset()

    def numeric(self, col: str) -> "np.ndarray | None":
        """The column as float64, or None when some value is not a number (parsed once per distinct value)."""
        if self._numeric is None:
            self._numeric = {}
        if col not in self._numeric:
            import numpy as np

            c = self.columns[col]
            if isinstance(c, np.ndarray):
                self._numeric[col] = c
            else:
                used = np.bincount(c.codes, minlength=len(c.categories)) > 0
                if not all(_numeric_text(str(v)) for v in c.categories[used]):
                    self._numeric[col] = None       # "0_5", "５": text to pandas, though float() reads 5
                    return None
                try:
                    lut = np.where(used, c.categories, "nan").astype(np.float64)
                except (ValueError, TypeError):
                    self._numeric[col] = None
                else:
                    self._numeric[col] = lut[c.codes]
        return self._numeric[col]

    def coded(self, col: str) -> tuple["np.ndarray", "np.ndarray"]:
        """(codes per row, distinct values as strings): a numeric column's values as their text, a Parquet
        boolean column's "False" / "True"."""
        import numpy as np

        c = self.columns[col]
        if not isinstance(c, np.ndarray):
            return c.codes, c.categories
        if col in self.booleans:    # a Parquet boolean: its text True / False, as lint samples it (not "1" / "0")
            return (c == 1).astype(np.int32), np.array(["False", "True"], dtype=object)
        uniq, inv = np.unique(c, return_inverse=True)
        text = np.array([str(int(v)) if float(v).is_integer() else repr(float(v)) for v in uniq], dtype=object)
        return inv.astype(np.int32), text

    def strings(self, col: str, mask: "np.ndarray | None" = None, limit: int = 1000) -> list[str]:
        """The text of (up to ``limit``) rows of a column, for messages."""
        import numpy as np

        codes, cats = self.coded(col)
        if mask is not None:
            codes = codes[mask]
        return [str(v) for v in cats[np.asarray(codes[:limit])]]

    def subset(self, mask: "np.ndarray") -> "Table":
        import numpy as np

        cols = {k: (v[mask] if isinstance(v, np.ndarray) else v.take(mask)) for k, v in self.columns.items()}
        return Table(self.name, self.path, cols, int(mask.sum()), self.n_read, self.n_missing,
                     self.n_filtered + int((~mask).sum()), booleans=self.booleans)


def check_path(d: ir.Data) -> None:
    """A data file that cannot be read at all (missing, a folder, a device, a name too long,
    unreadable): one sentence naming it as what it is."""
    from fairspec.files import PathError, require_file

    try:
        require_file(Path(d.path), "data file")
    except PathError as e:
        raise DataError(str(e)) from None


def dedupe_names(names: list[str]) -> tuple[list[str], list[tuple[str, str, int]]]:
    """A header's names with the later duplicates renamed by position, as pandas does: the second
    'x' becomes 'x.1', the third 'x.2' (skipping names the header already has).
    Returns (names, [(name, new name, 1-based column), ...])."""
    seen: set[str] = set(names)
    count: dict[str, int] = {}
    out, renames = [], []
    for i, n in enumerate(names):
        if n not in count:
            count[n] = 0
            out.append(n)
            continue
        k = count[n] + 1
        while f"{n}.{k}" in seen:
            k += 1
        count[n] = k
        new = f"{n}.{k}"
        seen.add(new)
        out.append(new)
        renames.append((n, new, i + 1))
    return out, renames


def is_number(v: str) -> bool:
    """Whether a cell's text reads as a number (Python's float(): also "nan", "inf", "1e3"), as pandas and
    pyarrow read it: not text float() alone reads ("1_000", non-ASCII digits such as a full-width "５")."""
    if not _numeric_text(v):
        return False
    try:
        float(v)
        return True
    except ValueError:
        return False


def _numeric_text(v: str) -> bool:
    """False for text Python's float() reads as a number but pandas / pyarrow read as text: an underscore
    between digits ("0_5" is 5 to float()), a non-ASCII digit or space."""
    return "_" not in v and v.isascii()


# A logged decision column (predictions(DATA, decision = "col")) read with no positive = ...: these values
# and the numbers 1 / 0 say the decision themselves; any other value (approve / deny, -1, 2, an empty
# cell of a text column) leaves which decision is positive unsaid: FS431 at lint, a DataError at check.
DECISION_YES = ("1", "true", "yes", "t", "y")
DECISION_NO = ("0", "false", "no", "f", "n")


def decision_word(v: str) -> bool | None:
    """True / False for a value of a logged decision column that says itself which it is, else None."""
    w = v.strip().lower()
    if w in DECISION_YES:
        return True
    if w in DECISION_NO:
        return False
    if is_number(w) and float(w) in (0.0, 1.0):
        return float(w) == 1.0
    return None


def unstated_decision(path, column: str, bad) -> DataError:
    """The sentence lint (FS431) and check say for a decision column holding values other than 1/0,
    yes/no, true/false when the spec names no positive decision."""
    shown = ", ".join(repr(v) for v in sorted(bad)[:4]) + (", ..." if len(bad) > 4 else "")
    return DataError(f"data file {path} column {column!r} holds {shown}, not 1/0, yes/no or true/false, "
                     f"so which decision is the positive one is not stated")


def check_names(d: ir.Data, names) -> None:
    """A column named twice in a Parquet file's schema: an error naming it."""
    seen = set()
    for n in names:
        if n in seen:
            raise DataError(f"data file {d.path} names the column {n!r} twice in its Parquet schema")
        seen.add(n)


def no_rows(d: ir.Data) -> DataError:
    """A file with no data row (a Parquet file has no header line to mention)."""
    header = d.header and d.format == "csv"
    return DataError(f"data file {d.path} has no rows" + (" (only a header line)" if header else ""))


def nested_column(path: str, name: str, kind: str) -> DataError:
    """A Parquet column of nested values (struct, list, map) that the spec reads: the same sentence
    from lint (sema's FS404) and from check (fairspec.runtime.columnar)."""
    return DataError(f"data file {path} column {name!r} is a {kind} column (nested values), where one number or "
                     f"text per row is expected")


def not_utf8_column(path: str, name: str) -> DataError:
    """A Parquet binary column whose bytes are not UTF-8: binary is read as text, as a CSV file is."""
    return DataError(f"data file {path} column {name!r} holds bytes that are not UTF-8 text")


def nested_kind(t) -> str | None:
    """'struct', 'list' or 'map' for a nested arrow type (a dictionary's value type looked through), else None."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_union(t):
        return "union"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or \
            getattr(pa.types, "is_list_view", lambda _: False)(t) or \
            getattr(pa.types, "is_large_list_view", lambda _: False)(t):
        return "list"
    return None


@filecache.by_file(lambda d: d.path)
def _parquet_fields(d: ir.Data) -> list:
    """[(column name as the spec names it, arrow type)] of a Parquet file (empty for CSV, or when the
    file's schema cannot be read: column_names says why)."""
    if d.format != "parquet":
        return []
    try:
        import pyarrow.parquet as pq

        schema = pq.read_schema(d.path)
    except Exception:  # noqa: BLE001 - column_names says what is wrong with the file
        return []
    names = list(d.columns) if d.columns is not None and len(d.columns) == len(schema) else schema.names
    return [(n, fld.type) for n, fld in zip(names, schema)]


def parquet_types(d: ir.Data) -> dict[str, str]:
    """{column name (as the spec names it): its type in the Parquet file's schema, as pyarrow writes it}
    (empty for CSV, whose cells are text, or when the schema cannot be read); cached per file state."""
    return {n: str(t) for n, t in _parquet_fields(d)}


def parquet_nested(d: ir.Data) -> dict[str, str]:
    """{column name (as the spec names it): 'struct' | 'list' | 'map' | 'union'} of a Parquet file's
    nested columns."""
    return {n: k for n, t in _parquet_fields(d) if (k := nested_kind(t)) is not None}


def parquet_empty(d: ir.Data) -> tuple[dict[str, int], int]:
    """({column name (as the spec names it): ...} of a Parquet file's columns that hold no value in any row,
    the file's row count), read from the file's metadata (a column of type null, or whose null count in
    every row group's statistics is that group's row count); a column without statistics is not known empty."""
    fields = _parquet_fields(d)
    if not fields:
        return {}, 0
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(d.path).metadata
    except Exception:  # noqa: BLE001 - column_names says what is wrong with the file
        return {}, 0
    n = meta.num_rows
    if n == 0:
        return {}, 0
    leaves = [meta.schema.column(j).path for j in range(meta.num_columns)]
    empty = {}
    for k, (name, typ) in enumerate(fields):
        if pa.types.is_null(typ):
            empty[name] = n
            continue
        if nested_kind(typ) is not None or len(leaves) != len(fields):
            continue
        counts = []
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(k).statistics
            counts.append(stats.null_count if stats is not None and stats.has_null_count else None)
        if None not in counts and sum(counts) == n:
            empty[name] = n
    return empty, n


def empty_column(path: str, name: str, n_rows: int) -> DataError:
    return DataError(f"data file {path}: column {name!r}, which the spec reads, is empty (a missing value in all "
                     f"{n_rows} rows); a row missing a value the spec reads is dropped, so no row would be left", path)


def parquet_booleans(d: ir.Data) -> set[str]:
    """The Parquet file's boolean columns (a dictionary's value type looked through): check reads one
    as 1/0, so sema refuses it to a number feature as a CSV column of true/false is (FS404)."""
    fields = _parquet_fields(d)
    if not fields:  # a CSV file: pyarrow is not loaded (lint stays light)
        return set()
    import pyarrow as pa

    return {n for n, t in fields if pa.types.is_boolean(t.value_type if pa.types.is_dictionary(t) else t)}


def _open_rows(d: ir.Data, limit: int | None = None):
    from fairspec.files import os_error

    check_path(d)
    path = Path(d.path)
    try:
        f = open(path, newline="", encoding="utf-8-sig")  # -sig: a byte-order mark is not part of a name
    except OSError as e:
        raise DataError(f"data file {os_error(d.path, e)}") from None
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
        except OSError as e:
            raise DataError(f"data file {os_error(d.path, e)}") from None
    return rows


def header_renames(d: ir.Data) -> list[tuple[str, str, int]]:
    """The header names a CSV file repeats, as dedupe_names renames them (empty when none)."""
    if d.format != "csv" or not d.header or d.columns is not None:
        return []
    rows = _open_rows(d, limit=1)
    return dedupe_names([c.strip() for c in rows[0]])[1] if rows else []


@filecache.by_file(lambda d, *a, **kw: d.path)
def column_names(d: ir.Data, sample: int = 200) -> tuple[list[str], list[list[str | None]]]:
    """The column names (a repeated header name renamed by position, see dedupe_names) and the
    first rows, read cheaply (for lint). A cell is text, or None for a Parquet null (a missing value)."""
    if d.format == "parquet":
        return _parquet_head(d, sample)
    rows = _open_rows(d, limit=sample + 1)
    if d.header:
        if not rows:
            raise DataError(f"data file {d.path} is empty")
        if not any(c.strip() for c in rows[0]):    # names read from it would be none, or one ''
            raise DataError(f"data file {d.path} line 1 is blank, where the header line (the column names) is "
                            f"expected")
        _header_fits(d, len(rows[0]))
        names = [c.strip() for c in rows[0]]
        if d.columns is None:  # a name the header repeats: the later ones renamed by position (FS430)
            names = dedupe_names(names)[0]
        body = rows[1:]
    else:
        body = rows
        if d.columns is None:
            raise DataError(f"data file {d.path} has no header line and the spec gives no column names")
        names = list(d.columns)
    if d.header and d.columns is not None:
        names = list(d.columns)
    if sample and not any(r and any(c.strip() for c in r) for r in body):
        raise no_rows(d)
    return names, body


def other_separator(d: ir.Data, names: list[str], body: list[list[str | None]]) -> str | None:
    """The separator a CSV file read as one column looks written with: ';', a tab or '|' held the same
    number of times (at least once) by its header and every sampled row; else None."""
    if d.format != "csv" or not d.header or d.columns is not None or len(names) != 1:
        return None
    rows = [r[0] for r in body if len(r) == 1 and r[0] is not None and r[0].strip()]
    if not rows or len(rows) != sum(1 for r in body if any((c or "").strip() for c in r)):
        return None
    for c in (";", "\t", "|"):
        k = names[0].count(c)
        if k and all(r.count(c) == k for r in rows):
            return c
    return None


# The bytes of a CSV file lint reads for a row of the wrong number of fields (check reads every row
# and refuses such a file with the same sentence): a longer file is read up to here only.
RAGGED_BYTES = 64 << 20


def _skipped_row(n: int, text: str) -> bool:
    """A row check's CSV reader skips whatever its field count (columnar._csv_options: a blank line,
    a comment-like trailer such as adult.test's '|1x3 Cross validator')."""
    return n <= 1 and (not text.strip() or text.startswith("|"))


def ragged(path, line: int | None, n: int, expected: int, last: int | None = None) -> DataError:
    """The sentence lint and check say for a CSV row of ``n`` fields where ``expected`` are: the row
    starts on ``line`` and, when a quoted field holds line breaks, ends on ``last`` (both readers
    count lines alike: the csv module and pyarrow read a quoted line break as part of its field)."""
    where = f" line {line}" if line else ""
    why = ""
    if line and last and last > line:
        why = (f"; a quoted field on it holds a line break, so the row runs to line {last} (a quote (\") "
               "never closed reads the lines after it into one field)")
    return DataError(f"data file {path}{where} has {n} field{'' if n == 1 else 's'}, expected {expected}{why}")


@filecache.by_file(lambda d, *a, **kw: d.path)
def ragged_row(d: ir.Data, expected: int) -> DataError | None:
    """The sentence check says for the first CSV row (after the header) whose field count is not
    ``expected``, read cheaply for lint (no pyarrow): a file without a quote character line by line,
    one with quotes through the csv module; None when every row read fits (or the file cannot be
    read: the reader says why). Only the first RAGGED_BYTES of a longer file are read."""
    import io

    if d.format != "csv":
        return None
    try:
        with open(d.path, "rb") as f:
            raw = f.read(RAGGED_BYTES + 1)
    except OSError:
        return None
    cut = len(raw) > RAGGED_BYTES
    if cut:
        raw = raw[:raw.rfind(b"\n", 0, RAGGED_BYTES) + 1]     # whole lines only
    first = 1 if d.header else 0
    if b'"' not in raw:
        sep = d.sep.encode()
        for i, line in enumerate(raw.splitlines()[first:], first + 1):     # \n, \r\n or \r, as check
            n = line.count(sep) + 1
            if n != expected and not _skipped_row(n, line.decode("utf-8", "replace")):
                return ragged(d.path, i, n, expected)
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None                                       # lint's sample read says "not UTF-8"
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=d.sep)
    last, k = text.count("\n"), 0
    prev = 0
    try:
        for row in reader:
            line, prev, k = prev + 1, reader.line_num, k + 1
            n = len(row)
            if k <= first or n == expected or _skipped_row(n, row[0] if row else ""):
                continue
            if cut and prev >= last:
                return None                               # a record the cut may have split
            return ragged(d.path, line, n, expected, prev)     # prev > line: a quoted field read lines after it
    except csv.Error:
        return None
    return None


# The longest header line (its line break included) check's CSV reader takes: pyarrow finds the
# header in its first block of 1 MiB (pyarrow.csv.ReadOptions' default block_size, which check keeps
# for a file it reads at once; a streamed file's blocks are larger). Lint says the same (FS404).
HEADER_BYTES = 1 << 20


def _header_fits(d: ir.Data, columns: int) -> None:
    """A header line longer than HEADER_BYTES: one sentence naming the file (pyarrow said 'Could not
    skip initial 1 rows ... header is larger than block size')."""
    try:
        with open(d.path, "rb") as f:
            line = f.readline(HEADER_BYTES + 1)
    except OSError:
        return  # _open_rows has read it; a file that vanished since is said by the reader
    if len(line) > HEADER_BYTES or (len(line) == HEADER_BYTES and not line.endswith(b"\n")):
        raise DataError(f"data file {d.path} has a header line longer than {HEADER_BYTES >> 20} MiB ({columns:,} "
                        f"columns), the longest header line fairspec reads")


def _parquet_head(d: ir.Data, sample: int) -> tuple[list[str], list[list[str | None]]]:
    check_path(d)
    try:
        import pyarrow.parquet as pq

        f = pq.ParquetFile(d.path)
        names = list(f.schema_arrow.names)
        check_names(d, names)
        rows: list[list[str | None]] = []
        if sample and not f.metadata.num_rows:
            raise no_rows(d)
        if sample:
            shown = list(d.columns) if d.columns is not None and len(d.columns) == len(names) else names
            batch = next(f.iter_batches(batch_size=sample))
            cols = [_sampled_text(d, shown[j], batch.column(j)) for j in range(batch.num_columns)]
            rows = [list(r) for r in zip(*cols)]
    except DataError:
        raise
    except ImportError:
        raise DataError(f"data file {d.path} is Parquet, which needs pyarrow (pip install pyarrow)") from None
    except Exception as e:  # noqa: BLE001 - pyarrow's error, as one sentence naming the file
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise DataError(f"data file {d.path} cannot be read as Parquet: {first}") from None
    if d.columns is not None:
        if len(d.columns) != len(names):
            raise DataError(f"data file {d.path} has {len(names)} columns, but the spec names {len(d.columns)}")
        names = list(d.columns)
    return names, rows


def _sampled_text(d: ir.Data, name: str, arr) -> list[str | None]:
    """A sampled Parquet column's values as check reads them: binary decoded as UTF-8 text (as
    fairspec.runtime.columnar casts it), a nested column's values as empty (sema says FS404 when the
    spec reads it, parquet_nested), a null as None (check reads it as a missing value in every
    column, text ones included: not as the text "", which lint took for a category outside the
    domain, FS410); a whole float as its integer's text ("1" for 1.0), as check's Table.coded writes it."""
    if nested_kind(arr.type) is not None:
        return [""] * len(arr)
    out = []
    for v in arr.to_pylist():
        if isinstance(v, bytes):
            try:
                v = v.decode("utf-8")
            except UnicodeDecodeError:
                raise not_utf8_column(d.path, name) from None
        elif isinstance(v, float) and v.is_integer():
            v = int(v)                # 1.0 as "1": the text check's Table.coded gives a number column's value
        out.append(None if v is None else str(v))
    return out

