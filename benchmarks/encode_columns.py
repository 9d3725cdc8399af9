"""Encoding a table's labels into codes, beside the per-column pandas indexes it built before.

``Schema.encode`` numbers each column's distinct values (``pd.factorize``, or a categorical's categories) and then
finds each distinct value among the column's states. For a column's few labels this lookup is now a dict
(``bnfisher.data.labels._positions``); the reference, measured in the same run, is the former lookup: a pandas
object index of the states and ``get_indexer`` over an index of the values, for every column (swapped in for the
reference run only). Both must give the same codes. Small tables are what this changes: every job encodes its
inputs, every drift window encodes its rows, and the test suite encodes about 15,000 columns.

Tables: the bundled nursery table (its first 500 rows; text, pandas' Arrow-backed strings and categoricals) and
200 rows of a 37-column alarm sample as categoricals. Best of 3 over 200 encodes each.

Run:  python benchmarks/encode_columns.py   (a few seconds)
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher.data import labels
from bnfisher.datasets import load
from kernel import best_of  # benchmarks/kernel.py: the best of 3 wall times

HERE = Path(__file__).resolve().parent
REPEATS = 200


def former_positions(values, states: tuple) -> np.ndarray:
    """The lookup before 2026-11-30: two pandas object indexes and ``get_indexer``, whatever the number of values."""
    return pd.Index(list(states), dtype=object).get_indexer(pd.Index(values, dtype=object))


def encode_many(schema, frame) -> np.ndarray:
    for _ in range(REPEATS - 1):
        schema.encode(frame)
    return schema.encode(frame).codes


def main() -> None:
    sys.path.insert(0, str(HERE))
    from mechanisms import network

    nursery = load("nursery").iloc[:500]
    alarm = network("alarm").sample(200, random_state=0)
    tables = {"nursery, text (object)": nursery.astype(object),
              "nursery, Arrow strings": nursery.astype("string[pyarrow]"),
              "nursery, categorical": nursery.astype("category"),
              "alarm, categorical": alarm.astype("category")}
    lines = [f"Command: `python benchmarks/encode_columns.py` ({datetime.date.today().isoformat()}, "
             f"bnfisher {bf.__version__}); {REPEATS} encodes of each table, best of 3.", "",
             "| table | rows x columns | per encode, now (ms) | per encode, the former lookup (ms) | ratio | "
             "same codes |", "|---|---|---|---|---|---|"]
    for name, frame in tables.items():
        schema = bf.Schema.from_data(frame)
        now, ours = best_of(encode_many, schema, frame)
        with mock.patch.object(labels, "_positions", former_positions):
            before, theirs = best_of(encode_many, schema, frame)
        lines.append(f"| {name} | {frame.shape[0]} x {frame.shape[1]} | {1e3 * now / REPEATS:.3f} | "
                     f"{1e3 * before / REPEATS:.3f} | {before / now:.1f}x | {np.array_equal(ours, theirs)} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
