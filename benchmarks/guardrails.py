"""The input checks every job runs (identifiers, undeclared missing markers) beside a per-column pandas pass.

``bnfisher.data.guardrails.check_tables`` counts each column's values once and then looks for missing-value
look-alikes (``?``, ``NA``, ...) among the column's distinct values with a set.  The reference, measured in the
same run: the same checks with the look-alikes found by a pandas pass per column (a Series of the counts, its
index stripped, ``isin``, ``groupby``, ``sort_values``), as ``check_tables`` did before 2026-11-30.  Both must give
the same messages (nothing declared missing: the reference does not take ``na_values``).  Tables: andes (223
columns, 10,000 rows, categorical as a CSV reads them) and the bundled nursery table with a ``?`` planted in one
column.

Run:  python benchmarks/guardrails.py   (a few seconds; andes needs ../shared/data/bif)
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import bnfisher as bf
from bnfisher.data import guardrails
from bnfisher.datasets import load
from kernel import best_of  # benchmarks/kernel.py: the best of 3 wall times

HERE = Path(__file__).resolve().parent


def reference(frames: list) -> list:
    """The former checks: each column's counts, then the look-alikes found by a pandas pass over them."""
    messages = []
    pooled = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    for column in pooled.columns:
        values = pooled[column]
        counts = values.value_counts(dropna=True, sort=False)
        counts = counts[counts > 0]
        if (len(pooled) >= 20 and not pd.api.types.is_float_dtype(values.dtype)
                and len(counts) >= guardrails.IDENTIFIER_SHARE * len(pooled)):
            messages.append(f"Column {column!r} has {len(counts)} distinct values in {len(pooled)} rows (an "
                            "identifier?): it makes almost every row a category of its own, and the kernel sees "
                            "nothing else. Drop it.")
        dtype = values.dtype
        if not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
                or isinstance(dtype, pd.CategoricalDtype)):
            continue
        text = pd.Series(np.asarray(counts.to_numpy(), dtype=np.int64),
                         index=pd.Index(counts.index.astype(str)).str.strip())
        found = text[text.index.isin(guardrails.MISSING_LOOKALIKES)]
        found = found.groupby(level=0, sort=False).sum().sort_values(ascending=False, kind="stable")
        messages += [f"Column {column!r} holds {marker!r} in {count} rows: if it marks a missing value, declare it "
                     f"(na_values=[{marker!r}], --na-values {marker!r}); as it is, it is a category of its own."
                     for marker, count in found.items()]
    return messages


def tables() -> dict:
    out = {}
    sys.path.insert(0, str(HERE))
    from mechanisms import SHARED

    if (SHARED / "andes.bif").exists():
        net = bf.read_bif(SHARED / "andes.bif")
        rows = net.sample(10_000, random_state=0).astype("category")
        out["andes (223 columns, 10,000 rows)"] = [rows.iloc[:5000], rows.iloc[5000:]]
    nursery = load("nursery").astype(object)
    nursery.loc[::7, "health"] = "?"
    out["nursery (9 columns, 12,960 rows, '?' planted)"] = [nursery]
    return out


def main() -> None:
    lines = [f"Command: `python benchmarks/guardrails.py` ({datetime.date.today().isoformat()}, bnfisher "
             f"{bf.__version__}).", "",
             "| table | check_tables (s) | per-column pandas pass (s) | ratio | same messages |",
             "|---|---|---|---|---|"]
    for name, frames in tables().items():
        now, messages = best_of(guardrails.check_tables, frames)
        before, expected = best_of(reference, frames)
        lines.append(f"| {name} | {now:.3f} | {before:.3f} | {before / now:.1f}x | {messages == expected} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
