"""Which columnar CSV reader: pyarrow or polars, on Adult repeated 10x and 100x (run niced).

    python bench/reader_choice.py [--out bench/results/reader_choice.json]

Both read every column as text (Adult's ", " separators leave a leading space, and a '?'
marker sits in number columns), strings dictionary-encoded (pyarrow) or categorical
(polars), then strip the distinct values.  Wall time, best of three, same process.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADULT = HERE.parent / "examples" / "adult" / "data" / "adult.data"
NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
         "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
         "income"]


def _pyarrow(path):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    t = pcsv.read_csv(path, read_options=pcsv.ReadOptions(column_names=NAMES),
                      convert_options=pcsv.ConvertOptions(
                          null_values=[], strings_can_be_null=False,
                          column_types={c: pa.dictionary(pa.int32(), pa.string()) for c in NAMES}))
    t = t.unify_dictionaries()
    for c in t.columns:
        pc.utf8_trim_whitespace(c.chunk(0).dictionary)
    return t.num_rows


def _polars(path):
    import polars as pl

    df = pl.read_csv(path, has_header=False, new_columns=NAMES, schema_overrides={c: pl.Categorical for c in NAMES})
    for c in NAMES:
        df[c].unique().cast(pl.String).str.strip_chars()
    return df.height


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE / "results" / "reader_choice.json"))
    args = ap.parse_args()
    out_dir = HERE / "out"
    out_dir.mkdir(exist_ok=True)
    data = ADULT.read_bytes()
    rows = []
    for k in (10, 100):
        path = out_dir / f"adult_x{k}.csv"
        if not path.exists():
            path.write_bytes(data * k)
        row = {"copies": k, "mb": round(path.stat().st_size / 2**20, 1)}
        for name, fn in (("pyarrow", _pyarrow), ("polars", _polars)):
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                n = fn(str(path))
                best = min(best, time.perf_counter() - t0)
            row[name + "_s"] = round(best, 3)
            row[name + "_rows"] = n
        row["polars_over_pyarrow"] = round(row["polars_s"] / row["pyarrow_s"], 2)
        rows.append(row)
        print(row, flush=True)
    res = {"load_average": os.getloadavg(), "cpus": os.cpu_count(), "rows": rows}
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
