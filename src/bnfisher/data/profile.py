"""Reference profiles: a table's schema and its distinct rows with their counts, in one versioned file.

A profile holds everything a later comparison needs from a reference table, without the
table: its labels (the schema) and its rows, kept once per distinct row with a count
(compressed).  Profiles merge: the profile of a union of tables equals the merge of the
tables' profiles, so partitions (or Dask workers) can each build one.  :func:`bnfisher.drift`
and :func:`bnfisher.compare` accept a profile wherever they accept a reference table.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass

import numpy as np

from bnfisher._lazy import pandas as pd
from bnfisher._version import __version__
from bnfisher.data.counts import distinct_rows
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError, OptionTypeError, SchemaError

__all__ = ["FORMAT", "FORMAT_VERSION", "ReferenceProfile", "merge_profiles", "profile", "read_profile"]

#: The file's format name and the version this bnfisher writes and reads.
FORMAT, FORMAT_VERSION = "bnfisher-profile", 1


@dataclass(frozen=True)
class ReferenceProfile:
    """A reference table as its schema and its distinct rows with counts.

    Attributes
    ----------
    schema : Schema
        The labels of every column (no bins: bin numeric columns first).
    codes : ndarray of shape (n_distinct, n_variables)
        Each distinct row once, as codes (-1: missing), in a canonical (sorted) order.
    counts : ndarray of int64, shape (n_distinct,)
        How many rows of the table are each distinct row.

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> reference = bf.profile(data)
    >>> reference.n_rows
    648
    """

    schema: Schema
    codes: np.ndarray
    counts: np.ndarray

    @property
    def n_rows(self) -> int:
        """Rows of the table the profile stands for."""
        return int(self.counts.sum())

    def __repr__(self) -> str:
        return (f"ReferenceProfile({self.n_rows} rows, {len(self.counts)} distinct, "
                f"{len(self.schema.variables)} columns)")

    def to_frame(self) -> pd.DataFrame:
        """Return the table the profile stands for: every distinct row repeated by its count (labels, NaN missing).

        Returns
        -------
        DataFrame
            One column per variable, rows in the profile's canonical order (not the
            table's original order, which a profile does not keep).
        """
        rows = np.repeat(np.arange(len(self.counts)), self.counts)
        columns = {}
        for i, variable in enumerate(self.schema.variables):
            labels = np.empty(len(self.schema.states[variable]) + 1, dtype=object)
            labels[:-1] = list(self.schema.states[variable])
            labels[-1] = np.nan  # code -1
            columns[variable] = labels[self.codes[rows, i]]
        return pd.DataFrame(columns)

    def merge(self, *others: ReferenceProfile) -> ReferenceProfile:
        """Return the profile of the union of the tables (see :func:`merge_profiles`).

        Parameters
        ----------
        *others : ReferenceProfile

        Returns
        -------
        ReferenceProfile
        """
        return merge_profiles([self, *others])

    def save(self, path: str | os.PathLike) -> None:
        """Write the profile to one compressed, versioned file (``.bnfp``), atomically.

        Parameters
        ----------
        path : str or path-like
        """
        from bnfisher.data.io import write_bytes

        header = {"format": FORMAT, "format_version": FORMAT_VERSION, "bnfisher": __version__,
                  "rows": self.n_rows, "schema": self.schema.to_dict()}
        buffer = io.BytesIO()
        np.savez_compressed(buffer, codes=self.codes, counts=self.counts,
                            header=np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8))
        write_bytes(path, buffer.getvalue())


def profile(data: pd.DataFrame, *, na_values=()) -> ReferenceProfile:
    """Profile a table: its schema and its distinct rows with their counts.

    Parameters
    ----------
    data : DataFrame
        Labels (bin numeric columns first, e.g. with :func:`bnfisher.discretize`).
    na_values : sequence, default=()
        Extra missing-value markers (e.g. ``"?"``).

    Returns
    -------
    ReferenceProfile

    Raises
    ------
    DataError
        For a float column (bin it first), mixed label types or bad column names.

    Examples
    --------
    >>> import pandas as pd
    >>> p = profile(pd.DataFrame({"a": ["x", "y", "x"], "b": ["u", "u", "u"]}))
    >>> p.n_rows, p.counts.tolist()
    (3, [2, 1])
    """
    if not isinstance(data, pd.DataFrame):
        raise OptionTypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
    schema = Schema.from_data(data, na_values=tuple(na_values or ()), missing="allow")
    return _from_codes(schema, schema.encode(data, missing="allow").codes)


def merge_profiles(profiles) -> ReferenceProfile:
    """Merge profiles: the profile of the union of their tables (labels united, counts added).

    Parameters
    ----------
    profiles : sequence of ReferenceProfile
        With the same columns, in the same order, and the same missing-value markers.

    Returns
    -------
    ReferenceProfile
        Equal to :func:`profile` of the concatenated tables.

    Raises
    ------
    SchemaError
        Naming the columns or markers that differ.

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> merged = bf.merge_profiles([bf.profile(data.iloc[:300]), bf.profile(data.iloc[300:])])
    >>> merged.n_rows == bf.profile(data).n_rows
    True
    """
    profiles = list(profiles)
    if not profiles or not all(isinstance(p, ReferenceProfile) for p in profiles):
        raise OptionTypeError("`profiles` must be a non-empty sequence of ReferenceProfile.")
    first = profiles[0].schema
    for k, other in enumerate(profiles[1:], start=2):
        if tuple(other.schema.variables) != tuple(first.variables):
            raise SchemaError(f"Profile {k} has columns {list(other.schema.variables)}, profile 1 has "
                              f"{list(first.variables)}: profiles of different tables cannot be merged.")
        if set(other.schema.na_values) != set(first.na_values):
            raise SchemaError(f"Profile {k} treats {sorted(map(str, other.schema.na_values))} as missing, profile 1 "
                              f"{sorted(map(str, first.na_values))}: profile both with the same na_values.")
    distinct = [_distinct_frame(p) for p in profiles]
    schema = Schema.from_data(*distinct, na_values=tuple(first.na_values), missing="allow")
    codes = np.vstack([schema.encode(frame, missing="allow").codes for frame in distinct])
    counts = np.concatenate([p.counts for p in profiles])
    return _from_codes(schema, codes, counts)


def read_profile(path: str | os.PathLike) -> ReferenceProfile:
    """Read a profile written by :meth:`ReferenceProfile.save`.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    ReferenceProfile

    Raises
    ------
    DataError
        When the file is not a bnfisher profile, or was written in a format version this
        bnfisher does not read (naming both versions and the fix).

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> bf.profile(data).save(folder / "reference.bnfp")
    >>> bf.read_profile(folder / "reference.bnfp").n_rows
    648
    """
    name = os.fspath(path)
    try:
        with np.load(name, allow_pickle=False) as content:
            header = json.loads(bytes(content["header"]).decode("utf-8"))
            codes, counts = content["codes"], content["counts"]
    except (zipfile.BadZipFile, ValueError, KeyError, UnicodeDecodeError, json.JSONDecodeError):
        raise DataError(f"{name} is not a bnfisher profile (make one with `bnfisher profile TABLE -o "
                        f"{os.path.basename(name)}`).") from None
    if header.get("format") != FORMAT:
        raise DataError(f"{name} is not a bnfisher profile (its format is {header.get('format')!r}).")
    if header.get("format_version") != FORMAT_VERSION:
        raise DataError(f"{name} is a profile of format version {header.get('format_version')} (written by bnfisher "
                        f"{header.get('bnfisher')}); this bnfisher ({__version__}) reads version {FORMAT_VERSION}: "
                        "use a matching bnfisher, or profile the table again.")
    schema = Schema.from_dict(header["schema"])
    if codes.ndim != 2 or codes.shape[1] != len(schema.variables) or counts.shape != (codes.shape[0],):
        raise DataError(f"{name}: its rows do not match its schema ({codes.shape} codes, {counts.shape} counts, "
                        f"{len(schema.variables)} columns); the file is damaged.")
    return ReferenceProfile(schema, codes, counts.astype(np.int64))


def _distinct_frame(p: ReferenceProfile) -> pd.DataFrame:
    """Each distinct row of a profile once, as labels."""
    return ReferenceProfile(p.schema, p.codes, np.ones(len(p.counts), dtype=np.int64)).to_frame()


def _from_codes(schema: Schema, codes: np.ndarray, counts: np.ndarray | None = None) -> ReferenceProfile:
    """Aggregate rows (with optional counts) into distinct rows in canonical (lexicographic) order."""
    codes = np.asarray(codes)
    if len(codes) == 0:
        raise DataError("The table has 0 rows: there is nothing to profile.")
    first, inverse, _ = distinct_rows(codes)
    weights = np.ones(len(codes), dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    summed = np.bincount(inverse, weights=weights, minlength=len(first)).astype(np.int64)
    rows = codes[first]
    order = np.lexsort(rows.T[::-1])
    return ReferenceProfile(schema, np.ascontiguousarray(rows[order]), summed[order])
