"""Columnar reading of the data sets a spec declares, with pyarrow.

CSV (``csv("...")``) and Parquet (``parquet("...")``) files are read by pyarrow into
record batches; each column becomes either

* a :class:`Coded` column — category codes (int32 per row) into a small array of distinct,
  whitespace-stripped strings (text columns: every CSV column, Parquet strings), or
* a numeric column — float64 per row (Parquet's numeric columns).

A CSV number column is held as codes too: its numbers are parsed once per distinct value
(``Table.numeric``), never once per cell.  No Python object is made per cell.

pyarrow was chosen over polars by measurement (bench/reader_choice.py, results in
bench/results/reader_choice.json): on Adult repeated 10x pyarrow read in 0.76 s, polars in 1.28 s;
at 100x, on a machine at load 11, 16.3 s against 13.3 s (noise at that load); polars counted
Adult's blank last line as a row (10 rows too many at 10x); and pyarrow reads Parquet too.
It is imported only here, so ``fairspec lint`` on a CSV spec never loads it.
"""

from __future__ import annotations

import os
from typing import Iterator

import numpy as np

from fairspec import ir
from fairspec.runtime.data import DataError, Table, check_path, column_names, is_number, ragged

# Rows per record batch when data is streamed, and the size below which a data set is read
# into memory once (larger ones are streamed batch by batch for every property that can).
# 65,536 rows: Adult at 3 M rows took 10.9 s / 852 MiB peak with it, 9.2 s / 1.3 GiB with 262,144
# (the encoded model input of a batch is rows x width floats; bench/scale.py, load 8-9).
BATCH_ROWS = int(os.environ.get("FAIRSPEC_BATCH_ROWS", 1 << 16))
STREAM_ROWS = int(os.environ.get("FAIRSPEC_STREAM_ROWS", 1_000_000))


class Coded:
    """A text column: per-row codes into ``categories`` (distinct stripped strings)."""

    __slots__ = ("codes", "categories")

    def __init__(self, codes: np.ndarray, categories: np.ndarray):
        self.codes = codes
        self.categories = categories

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, mask_or_index) -> "Coded":
        return Coded(self.codes[mask_or_index], self.categories)

    def strings(self) -> np.ndarray:
        return self.categories[self.codes]


def _pa():
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    return pa, pc, pcsv


# ------------------------------------------------------------------ arrow -> columns

def _dictionary_column(arr) -> tuple[Coded, "np.ndarray | None"]:
    """A (chunked) dictionary or string array as codes into stripped distinct strings."""
    pa, pc, _ = _pa()
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            arr = arr.chunk(0)
        else:
            arr = pa.chunked_array(arr.chunks, type=arr.type)
            if not pa.types.is_dictionary(arr.type):
                arr = pc.dictionary_encode(arr).combine_chunks()
            else:
                arr = arr.unify_dictionaries().combine_chunks() if hasattr(arr, "unify_dictionaries") \
                    else pa.table({"c": arr}).unify_dictionaries().column("c").combine_chunks()
    if not pa.types.is_dictionary(arr.type):
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = pc.cast(arr, pa.string())  # binary: decoded as UTF-8 (ArrowInvalid when it is not)
        arr = pc.dictionary_encode(arr)
    elif not (pa.types.is_string(arr.type.value_type) or pa.types.is_large_string(arr.type.value_type)):
        arr = pc.cast(arr, pa.dictionary(arr.type.index_type, pa.string()))
    dictionary = pc.utf8_trim_whitespace(arr.dictionary)
    idx = arr.indices
    null = np.asarray(idx.is_null()) if idx.null_count else None
    codes = np.asarray(idx.fill_null(0) if idx.null_count else idx).astype(np.int32, copy=False)
    cats = np.asarray(dictionary.to_pylist() + [""], dtype=object)  # the last one stands for a null
    if null is not None:
        codes = np.where(null, len(cats) - 1, codes).astype(np.int32)
    uniq, inv = np.unique(cats.astype(str), return_inverse=True)  # stripping can merge two strings
    if len(uniq) < len(cats):
        codes = inv.astype(np.int32)[codes]
        cats = uniq.astype(object)
    return Coded(codes, cats), null


def _column(arr):
    """(column, null mask or None) from one arrow column."""
    pa, pc, _ = _pa()
    t = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t):
        if pa.types.is_dictionary(arr.type):
            arr = pc.cast(arr, t)
        null = np.asarray(arr.is_null()) if arr.null_count else None
        # safe=False: an integer past 2**53 (uint64's 2**64 - 1) is rounded as a CSV cell's number is,
        # and then lies outside the declared domain (the row dropped, as lint's FS410 says), never an error
        num = pc.cast(arr, pa.float64(), safe=False)
        num = np.asarray(num.fill_null(np.nan) if arr.null_count else num, dtype=np.float64)
        return num, null
    return _dictionary_column(arr)


def _is_decimal(t) -> bool:
    pa = _pa()[0]
    return pa.types.is_decimal(t.value_type if pa.types.is_dictionary(t) else t)


# a decimal of at most this many significant digits is the shortest decimal of its nearest float64
# (DBL_DIG): read as that float, it compares with every threshold as the decimal does
_FLOAT_DIGITS = 15


def _faithful_decimals(d: ir.Data, arr, name: str) -> None:
    """Raise the DataError naming a decimal cell that its float64 (how every number is read) does not stand
    for: a value of more than 15 significant digits whose float's shortest decimal is another number
    (500.499999999999999999 reads as 500.5, so ``x >= 500.5`` held of it; session 36, h7)."""
    from decimal import Decimal

    from fairspec.runtime.data import DataError

    pa, pc, _ = _pa()
    t = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
    if t.precision <= _FLOAT_DIGITS:
        return
    text = pc.cast(pc.cast(arr, t) if pa.types.is_dictionary(arr.type) else arr, pa.string())
    digits = pc.utf8_rtrim(pc.utf8_ltrim(pc.replace_substring(pc.replace_substring(text, "-", ""), ".", ""),
                                         characters="0"), characters="0")
    long = pc.filter(text, pc.greater(pc.utf8_length(digits), _FLOAT_DIGITS))
    for cell in long.to_pylist():
        exact = Decimal(cell)
        if Decimal(repr(float(exact))) != exact:
            raise DataError(f"data file {d.path}: column {name!r} holds the decimal {cell}, which fairspec reads as "
                            f"the 64-bit float {float(exact)!r}, another number: a comparison with a threshold "
                            f"between them would be decided on the wrong value; store the column with at most "
                            f"{_FLOAT_DIGITS} significant digits (or as float64)", d.path)


def _read_column(d: ir.Data, arr, name: str, used: set | None):
    """_column, or the sentence naming the column: a nested column the spec reads (one it never reads
    is held as empty text), binary bytes that are not UTF-8."""
    from fairspec.runtime.data import nested_column, nested_kind, not_utf8_column

    pa = _pa()[0]
    kind = nested_kind(arr.type)
    if kind is not None:
        if used is None or name in used:
            raise nested_column(d.path, name, kind)
        return Coded(np.zeros(len(arr), dtype=np.int32), np.array([""], dtype=object)), None
    try:
        if (used is None or name in used) and _is_decimal(arr.type):
            _faithful_decimals(d, arr, name)
        return _column(arr)
    except pa.ArrowInvalid as e:
        if "utf8" in str(e).lower():
            raise not_utf8_column(d.path, name) from None
        raise


def table_from_arrow(d: ir.Data, tab, names: list[str], n_read_before: int = 0) -> Table:
    """A Table of the rows of an arrow table/batch that have no missing value."""
    cols, missing = {}, np.zeros(tab.num_rows, dtype=bool)
    used = None if d.used is None else set(d.used)
    for j, name in enumerate(names):
        c, null = _read_column(d, tab.column(j), name, used)
        cols[name] = c
        if used is not None and name not in used:
            continue  # a column the spec never reads: its missing values keep the row
        if null is not None:
            missing |= null
        marks = set(d.markers(name))
        if isinstance(c, Coded):
            bad = np.fromiter((v in marks for v in c.categories), dtype=bool, count=len(c.categories))
            if "" in c.categories and not bad[list(c.categories).index("")] and _numbers_but_empty(c, bad):
                bad[list(c.categories).index("")] = True  # an empty cell of a number column is missing
            if bad.any():
                missing |= bad[c.codes]
        elif marks:
            num_marks = [float(m) for m in marks if is_number(m)]
            if num_marks:
                missing |= np.isin(c, num_marks)
                if any(m != m for m in num_marks):   # "nan" listed as missing: a NaN is equal to no number
                    missing |= np.isnan(c)
    n = tab.num_rows
    if missing.any():
        keep = ~missing
        cols = {k: (v.take(keep) if isinstance(v, Coded) else v[keep]) for k, v in cols.items()}
    pa = _pa()[0]
    types = [tab.column(j).type for j in range(len(names))]
    booleans = frozenset(n for n, t in zip(names, types)
                         if pa.types.is_boolean(t.value_type if pa.types.is_dictionary(t) else t))
    return Table(d.name, d.path, cols, int(n - missing.sum()), n, int(missing.sum()), 0, booleans=booleans)


def _numbers_but_empty(c: Coded, marked: np.ndarray) -> bool:
    """Whether every value of a text column that is not empty and not a missing marker is a number
    (the column is a number column with empty cells, as sema types it)."""
    rest = [v for v, m in zip(c.categories, marked) if v != "" and not m]
    return bool(rest) and all(is_number(v) for v in rest)


# ------------------------------------------------------------------ readers

class _BadRow(Exception):
    pass


def read_names(d: ir.Data, names: list[str]) -> list[str]:
    """The columns of ``names`` that are converted: those the spec reads (``d.used``), in the file's order;
    every column when ``used`` is None. A wide file (60,000 columns, a handful read) is parsed whole, its
    rows' field counts checked as before, but only these columns become arrays. At least one column:
    pyarrow reads every column for an empty ``include_columns``, and the rows are counted from it."""
    if d.used is None:
        return list(names)
    used = set(d.used)
    return [n for n in names if n in used] or list(names[:1])


def _csv_options(d: ir.Data, names: list[str], stream: bool):
    pa, _, pcsv = _pa()
    bad: list = []

    def on_invalid(row):
        text = row.text or ""
        if row.actual_columns <= 1 and (not text.strip() or text.startswith("|")):
            return "skip"  # blank lines and comment-like trailers (adult.test's first line)
        bad.append(row)
        return "error"

    # a quoted field may hold a line break, as the csv module lint reads with allows (RFC 4180):
    # newlines_in_values, else pyarrow cuts its blocks at the last line break of each, inside quotes
    # or not, and a quoted line break at a block's end split a row in two ("line N has 1 field");
    # and the header is skipped as a row (skip_rows_after_names), not as a line (skip_rows), so a
    # quoted line break in a header name does not make its second half a row
    ro = pcsv.ReadOptions(column_names=names, skip_rows_after_names=1 if d.header else 0,
                          autogenerate_column_names=False, block_size=(8 << 20) if stream else None)
    po = pcsv.ParseOptions(delimiter=d.sep, invalid_row_handler=on_invalid, newlines_in_values=True)
    # every CSV column is read as dictionary-encoded text: a number column is parsed once per
    # distinct value later, and a missing marker in it ("?") cannot break type inference
    read = read_names(d, names)
    co = pcsv.ConvertOptions(null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False,
                             include_columns=read,
                             column_types={c: pa.dictionary(pa.int32(), pa.string()) for c in read})
    return ro, po, co, bad


def _names(d: ir.Data) -> list[str]:
    """The column names: the spec's, or the header line's (read with the csv module, like lint)."""
    if d.columns is not None:
        return list(d.columns)
    return column_names(d, sample=0)[0]


def _raise_arrow(d: ir.Data, e: Exception, bad: list, header_lines: int, block: int = 1 << 20) -> None:
    if bad:
        row = bad[0]
        # a quoted field may hold line breaks (one never closed reads the lines after it): the row's
        # text spans lines, and the sentence names its first and last, as lint's csv module counts them
        lines = (row.text or "").splitlines() or [""]
        line = _line_of(d.path, lines[0], header_lines)
        raise ragged(d.path, line, row.actual_columns, row.expected_columns,
                     line + len(lines) - 1 if line else None) from None
    msg = str(e)
    if "straddling object" in msg:  # a row longer than pyarrow's blocks hold (between one and two blocks)
        raise DataError(f"data file {d.path} has a line too long to read (fairspec's CSV reader takes lines of up "
                        f"to {block >> 20} MiB)") from None
    if "UTF8" in msg or "utf8" in msg.lower():
        raise DataError(f"data file {d.path} is not UTF-8 text") from None
    if isinstance(e, OSError) and not msg.startswith(("CSV", "Parquet")):
        raise DataError(f"data file {d.path} cannot be read: {msg}") from None
    first = msg.splitlines()[0] if msg else type(e).__name__
    raise DataError(f"data file {d.path} cannot be read as {d.format.upper() if d.format == 'csv' else 'Parquet'}: "
                    f"{first}") from None


def _line_of(path: str, text: str, header_lines: int) -> int | None:
    """The 1-based line of the first line equal to ``text`` after the header (error path only)."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            for i, line in enumerate(f, 1):
                if i > header_lines and line.rstrip("\r\n") == text:
                    return i
    except OSError:
        return None
    return None


def read_table(d: ir.Data) -> Table:
    """Every row of the data set in memory, as codes and typed arrays."""
    check_path(d)
    tabs = list(iter_arrow(d, stream=False))
    return _merge(d, tabs)


def _merge(d: ir.Data, parts: list[Table]) -> Table:
    if len(parts) == 1:
        t = parts[0]
    else:
        t = concat_tables(d, parts)
    if t.n_read == 0:
        from fairspec.runtime.data import no_rows

        raise no_rows(d)
    return t


def concat_tables(d: ir.Data, parts: list[Table]) -> Table:
    cols = {}
    for name in parts[0].columns:
        vals = [p.columns[name] for p in parts]
        if isinstance(vals[0], Coded):
            cats = np.unique(np.concatenate([v.categories for v in vals]).astype(str))
            codes = np.concatenate([np.searchsorted(cats, v.categories.astype(str)).astype(np.int32)[v.codes]
                                    for v in vals])
            cols[name] = Coded(codes, cats.astype(object))
        else:
            cols[name] = np.concatenate(vals)
    return Table(d.name, d.path, cols, sum(p.n_rows for p in parts), sum(p.n_read for p in parts),
                 sum(p.n_missing for p in parts), 0, booleans=frozenset().union(*(p.booleans for p in parts)))


def estimated_rows(d: ir.Data) -> int:
    """A cheap estimate of the row count (Parquet metadata; CSV size / a sampled line length)."""
    if d.format == "parquet":
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(d.path).metadata.num_rows
        except Exception:  # noqa: BLE001 - read_table says what is wrong with the file
            return 0
    try:
        size = os.path.getsize(d.path)
        with open(d.path, "rb") as f:
            head = f.read(1 << 16)
        lines = max(1, head.count(b"\n"))
        return int(size / (len(head) / lines)) if head else 0
    except OSError:
        return 0


def iter_arrow(d: ir.Data, stream: bool = True, batch_rows: int | None = None) -> Iterator[Table]:
    """The data set as Tables of at most about ``batch_rows`` rows (one Table when not streaming)."""
    check_path(d)
    names = _names(d) if d.format == "csv" else (list(d.columns) if d.columns else None)
    if d.format == "parquet":
        yield from _iter_parquet(d, names, stream, batch_rows or BATCH_ROWS)
        return
    pa, _, pcsv = _pa()
    ro, po, co, bad = _csv_options(d, names, stream)
    names = list(co.include_columns)  # the columns converted (read_names), in the file's order
    header_lines = 1 if d.header else 0
    try:
        if not stream:
            tab = pcsv.read_csv(d.path, read_options=ro, parse_options=po, convert_options=co)
            yield table_from_arrow(d, tab, names)
            return
        reader = pcsv.open_csv(d.path, read_options=ro, parse_options=po, convert_options=co)
        # re-cut pyarrow's blocks (sized in bytes) into batches of exactly `size` rows: the same
        # batches as a file held in memory, so sums accumulate in the same order
        size = batch_rows or BATCH_ROWS
        pending, count = [], 0
        for batch in reader:
            pending.append(batch)
            count += batch.num_rows
            while count >= size:
                t = pa.Table.from_batches(pending, schema=reader.schema)
                yield table_from_arrow(d, t.slice(0, size), names)
                rest = t.slice(size)
                pending, count = rest.to_batches(), rest.num_rows
        if count:
            yield table_from_arrow(d, pa.Table.from_batches(pending, schema=reader.schema), names)
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow's errors become one sentence naming the file
        _raise_arrow(d, e, bad, header_lines, ro.block_size)


def _iter_parquet(d: ir.Data, names, stream: bool, batch_rows: int) -> Iterator[Table]:
    import pyarrow.parquet as pq

    try:
        import pyarrow as pa

        schema = pq.read_schema(d.path)
        # text columns come back dictionary-encoded as stored: codes without a per-batch re-encoding
        text = [fld.name for fld in schema if pa.types.is_string(fld.type) or pa.types.is_large_string(fld.type)]
        f = pq.ParquetFile(d.path, read_dictionary=text)
        file_names = f.schema_arrow.names
        if names is not None and len(names) != len(file_names):
            raise DataError(f"data file {d.path} has {len(file_names)} columns, but the spec names {len(names)}")
        got = names or file_names
        columns = None  # the file's columns read: those the spec reads (read_names), each name once in the file
        if len(set(file_names)) == len(file_names):
            read = read_names(d, got)
            keep = set(read)
            columns = [file_names[i] for i, n in enumerate(got) if n in keep]
            got = read
        if not stream:
            yield table_from_arrow(d, f.read(columns=columns), got)
            return
        # re-cut the row groups' batches into batches of exactly `batch_rows` rows, as for CSV: the
        # same batches as the file held in memory, and few enough that per-batch work stays small
        pending, count = [], 0
        for batch in f.iter_batches(batch_size=batch_rows, columns=columns):
            if not batch.num_rows:
                continue
            pending.append(batch)
            count += batch.num_rows
            while count >= batch_rows:
                t = pa.Table.from_batches(pending)
                yield table_from_arrow(d, t.slice(0, batch_rows), got)
                rest = t.slice(batch_rows)
                pending, count = rest.to_batches(), rest.num_rows
        if count:
            yield table_from_arrow(d, pa.Table.from_batches(pending), got)
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001
        _raise_arrow(d, e, [], 0)
