"""Reading tables from files for the command line (CSV or Parquet)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import pandas as pd

from .encoding import discretize

__all__ = ["read_table", "align_labels"]


def read_table(path: str | os.PathLike, bins: int | None = None) -> pd.DataFrame:
    """Read a CSV (optionally gzip-compressed) or Parquet file as a DataFrame.

    Parameters
    ----------
    path : str or path-like
        ``.csv``, ``.csv.gz``, ``.tsv`` or ``.parquet``.
    bins : int, optional
        When given, numeric columns are binned with :func:`bnfisher.discretize`
        (quantile bins); otherwise a float column is an error at encoding time.

    Raises
    ------
    FileNotFoundError, ValueError
        For a missing file or an unknown extension.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    lower = path.lower()
    if lower.endswith(".parquet") or lower.endswith(".pq"):
        frame = pd.read_parquet(path)
    elif lower.endswith((".csv", ".csv.gz", ".txt")):
        frame = pd.read_csv(path, keep_default_na=True)
    elif lower.endswith((".tsv", ".tsv.gz")):
        frame = pd.read_csv(path, sep="\t", keep_default_na=True)
    else:
        raise ValueError(f"Cannot read {path!r}: use a .csv, .csv.gz, .tsv or .parquet file.")
    if bins is not None:
        frame = discretize(frame, bins=bins)
    return frame


def align_labels(frame: pd.DataFrame, states: Mapping) -> pd.DataFrame:
    """Map each column's values onto a model's state labels by their text.

    A CSV gives ``"1"`` or ``1`` where the model may hold ``1`` or ``"1"``; values
    are matched on ``str(value)``.  Columns the model does not know are dropped;
    values that match no state are kept as they are (encoding then names them).
    """
    out = {}
    for column, labels in states.items():
        if column not in frame.columns:
            continue  # encoding reports absent columns with the model's full list
        by_text = pd.Series(list(labels), index=[str(label) for label in labels], dtype=object)
        original = frame[column].astype(object)
        mapped = original.astype(str).map(by_text)
        out[column] = mapped.where(mapped.notna() | original.isna(), original)
    return pd.DataFrame(out, index=frame.index)
