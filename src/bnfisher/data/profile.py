"""Reference profiles: a table's schema and its distinct rows with their counts, in one versioned file.

A profile holds everything a later comparison needs from a reference table, without the
table: its labels (the schema) and its rows, kept once per distinct row with a count
(compressed).  Profiles merge: the profile of a union of tables equals the merge of the
tables' profiles, so partitions (or Dask workers) can each build one.  :func:`bnfisher.drift`
and :func:`bnfisher.compare` accept a profile wherever they accept a reference table.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.memory import check_allocation
from bnfisher.data.counts import _pack, _unpack, _words, distinct_rows
from bnfisher.data.profile_file import FORMAT, FORMAT_VERSION, read_profile_file, write_profile_file
from bnfisher.data.providers import backend_for
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError, OptionError, OptionTypeError, SchemaError

__all__ = ["FORMAT", "FORMAT_VERSION", "ReferenceProfile", "merge_profiles", "profile", "read_profile"]


@dataclass(frozen=True)
class ReferenceProfile:
    """A reference table as its schema and its distinct rows with counts.

    Attributes
    ----------
    schema : Schema
        The labels of every column, and the bin edges of the numeric columns it binned
        (later tables are binned with the same edges).
    codes : ndarray of shape (n_distinct, n_variables)
        Each distinct row once, as codes (-1: missing), in a canonical (sorted) order.
    counts : ndarray of int64, shape (n_distinct,)
        How many rows of the table are each distinct row.

    Examples
    --------
    >>> reference = bf.profile(data)
    >>> reference.n_rows
    648
    """

    schema: Schema
    codes: np.ndarray
    counts: np.ndarray
    source: str | None = field(default=None, compare=False)

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
            One categorical column per variable over its declared labels (unused ones
            included; binned columns ordered, in increasing order), missing cells NaN,
            rows in the profile's canonical order (not the table's original order, which
            a profile does not keep).
        """
        name = f"The profile {self.source}" if self.source else "The profile"
        check_allocation(float(self.n_rows) * (8 + 48 * len(self.schema.variables)),
                         f"{name} stands for {self.n_rows:,} rows; its table of labels",
                         "compare and drift expand a profile to its rows, so profile a sample of the reference "
                         "(fewer rows) instead.")
        rows = np.repeat(np.arange(len(self.counts)), self.counts)
        # Categoricals over the declared labels, unused ones included: a table and its profile learn one schema
        # (binned columns ordered, in increasing order, as Schema.discretize gives them).
        columns = {variable: pd.Categorical.from_codes(self.codes[rows, i], categories=pd.Index(
                       list(self.schema.states[variable])), ordered=variable in self.schema.bin_edges)
                   for i, variable in enumerate(self.schema.variables)}
        return pd.DataFrame(columns)

    def discretize(self, data: pd.DataFrame) -> pd.DataFrame:
        """Return ``data`` with the numeric columns the profile binned replaced by their bins (the same edges).

        Parameters
        ----------
        data : DataFrame
            A later table (not modified).

        Returns
        -------
        DataFrame
            A copy; ``data`` itself when the profile binned nothing.

        Examples
        --------
        >>> import pandas as pd
        >>> reference = profile(pd.DataFrame({"age": [21.0, 35.5, 48.0, 62.0]}), bins=2)
        >>> reference.discretize(pd.DataFrame({"age": [30.0, 70.0]}))["age"].tolist()
        ['21~35.5', '35.5~62']
        """
        return self.schema.discretize(data) if self.schema.bin_edges else data

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
        write_profile_file(path, self.schema, self.codes, self.counts)


def profile(*data, bins: int | None = None, bin_columns=None, categorical=None, na_values=()) -> ReferenceProfile:
    """Profile a table, or several together: the schema and the distinct rows with their counts.

    Parameters
    ----------
    *data : DataFrame, or one Dask DataFrame
        The table, or tables whose union to profile (labels and bin edges learned over
        all of them).  A Dask DataFrame is profiled where it lies: one pass learns the
        labels (and bin edges), a distributed group-by its distinct rows and counts.
    bins, bin_columns, categorical, na_values
        As :class:`~bnfisher.Binning` documents them. Quantile bins for numeric columns (at most this many), edges over
        the whole table; the edges are kept, and :func:`bnfisher.drift` and :func:`bnfisher.compare` bin later tables
        with them.

    Returns
    -------
    ReferenceProfile

    Raises
    ------
    DataError
        For a float column without ``bins``, missing values in a column to bin, mixed
        label types or bad column names.

    Examples
    --------
    >>> import pandas as pd
    >>> p = profile(pd.DataFrame({"a": ["x", "y", "x"], "b": ["u", "u", "u"]}))
    >>> p.n_rows, p.counts.tolist()
    (3, [2, 1])
    >>> binned = profile(pd.DataFrame({"age": [21.0, 35.5, 48.0, 62.0]}), bins=2)
    >>> binned.schema.states["age"]
    ('21~35.5', '35.5~62')
    """
    na = tuple(na_values or ())
    if not data:
        raise OptionTypeError("profile() needs a table.")
    if all(isinstance(frame, pd.DataFrame) for frame in data):
        schema = Schema.from_data(*data, bins=bins, columns=bin_columns, categorical=categorical, na_values=na,
                                  missing="allow")
        codes = [schema.encode(frame, missing="allow").codes for frame in data]
        return _from_codes(schema, codes[0] if len(codes) == 1 else np.vstack(codes))
    backend = backend_for(data[0])
    if backend is None or len(data) > 1:
        raise OptionTypeError(f"`data` must be pandas DataFrames or one Dask DataFrame; got "
                              f"{', '.join(type(frame).__name__ for frame in data)}.")
    if bin_columns is not None or categorical is not None:
        raise OptionError("`bin_columns` and `categorical` apply to tables in memory; a Dask table is binned by the "
                          "rule (float columns, and integer columns with more than max(bins, 30) values).")
    provider = backend.provider(data[0], None, "allow", bins=bins, na_values=na)
    return _from_codes(provider.schema, *provider.distinct())


def merge_profiles(profiles) -> ReferenceProfile:
    """Merge profiles: the profile of the union of their tables (labels united, counts added).

    Parameters
    ----------
    profiles : sequence of ReferenceProfile
        With the same columns, in the same order, the same missing-value markers and
        the same bin edges (a profile keeps bins, not numbers, so it cannot be re-binned).

    Returns
    -------
    ReferenceProfile
        Equal to :func:`profile` of the concatenated tables.

    Raises
    ------
    SchemaError
        Naming the columns, markers or bin edges that differ.

    Examples
    --------
    >>> merged = bf.merge_profiles([bf.profile(data.iloc[:300]), bf.profile(data.iloc[300:])])
    >>> merged.n_rows == bf.profile(data).n_rows
    True
    """
    profiles = list(profiles)
    _check_mergeable(profiles)
    first = profiles[0].schema
    counts = np.concatenate([p.counts for p in profiles])
    if all(p.schema.states == first.states for p in profiles[1:]):  # one schema: its codes mean the same labels
        return _merge_rows(first, np.vstack([p.codes for p in profiles]), counts)
    schema = _merged_schema(profiles)
    found = [_recode(p, schema) for p in profiles]
    recoded = [codes for codes in found if codes is not None]
    if len(recoded) < len(found):  # labels that do not map one to one: through the tables' labels
        recoded = [schema.encode(_distinct_frame(p), missing="allow").codes for p in profiles]
    return _merge_rows(schema, np.vstack(recoded), counts)


def _merged_schema(profiles: list) -> Schema:
    """Return the schema of the union of the profiles' tables.

    It is learned from the labels each profile uses (a few rows each) as from the tables. Binned columns keep every
    bin of the edges, in order (the labels alone would lose the edges); a column whose labels every profile declares
    alike keeps them, unused ones included, as ``profile()`` of the union does (pandas keeps a categorical's
    categories when every table has the same).
    """
    first = profiles[0].schema
    labels = Schema.from_data(*map(_used_labels, profiles), na_values=tuple(first.na_values), missing="allow")
    same = {v for v in labels.variables if all(p.schema.states[v] == first.states[v] for p in profiles)}
    return Schema({v: first.states[v] if v in first.bin_edges or v in same else labels.states[v]
                   for v in labels.variables},
                  bin_edges=dict(first.bin_edges), na_values=tuple(first.na_values))


def _check_mergeable(profiles: list) -> None:
    """Refuse profiles of different tables: other columns, other missing markers, other bin edges."""
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
        if dict(other.schema.bin_edges) != dict(first.bin_edges):
            binned = sorted(map(str, set(other.schema.bin_edges) | set(first.bin_edges)))
            raise SchemaError(f"Profile {k} bins {', '.join(binned)} with other edges than profile 1: a profile keeps "
                              "bins, not numbers, so the rows cannot be re-binned. Profile the tables together, or "
                              "bin them with the same edges first (Schema.discretize).")


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
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> bf.profile(data).save(folder / "reference.bnfp")
    >>> bf.read_profile(folder / "reference.bnfp").n_rows
    648
    """
    name = os.fspath(path)
    schema, codes, counts = read_profile_file(name)
    return ReferenceProfile(schema, codes.astype(np.int64, copy=False), counts.astype(np.int64), source=name)


def tables_of(tables, *, bins: int | None) -> list:
    """Return the tables, profiles replaced by theirs, numeric columns binned by a binned profile's edges.

    Parameters
    ----------
    tables : sequence of DataFrame or ReferenceProfile
    bins : int or None
        The caller's ``bins`` (refused beside a binned profile: its edges decide).

    Returns
    -------
    list of DataFrame

    Raises
    ------
    OptionError
        For ``bins`` beside a binned profile.
    SchemaError
        For two profiles binned with different edges.
    """
    binned = [t for t in tables if isinstance(t, ReferenceProfile) and t.schema.bin_edges]
    if binned and bins is not None:
        raise OptionError(f"`bins={bins}` beside a profile whose columns are binned already "
                          f"({', '.join(map(str, binned[0].schema.bin_edges))}): leave out `bins`; the profile's edges "
                          "bin the other tables.")
    if any(dict(t.schema.bin_edges) != dict(binned[0].schema.bin_edges) for t in binned[1:]):
        raise SchemaError("The two profiles bin their numeric columns with different edges: profile the tables "
                          "together (`bnfisher profile A B -o both.bnfp`), or bin them with the same edges first.")
    return [t.to_frame() if isinstance(t, ReferenceProfile) else binned[0].discretize(t) if binned else t
            for t in tables]


def _distinct_frame(p: ReferenceProfile) -> pd.DataFrame:
    """Each distinct row of a profile once, as labels."""
    return ReferenceProfile(p.schema, p.codes, np.ones(len(p.counts), dtype=np.int64)).to_frame()


def _used_labels(p: ReferenceProfile) -> pd.DataFrame:
    """Return a few rows holding every label (and missing cell) each column of ``p`` uses, as :meth:`to_frame` does."""
    used = [np.flatnonzero(np.bincount(p.codes[:, j] + 1, minlength=len(p.schema.states[v]) + 1)) - 1
            for j, v in enumerate(p.schema.variables)]
    height = max(len(u) for u in used)
    codes = np.column_stack([np.resize(u, height) for u in used])  # repeated to one height: the same label sets
    return ReferenceProfile(p.schema, codes, np.ones(height, dtype=np.int64)).to_frame()


def _recode(p: ReferenceProfile, schema: Schema) -> np.ndarray | None:
    """``p``'s codes in ``schema``'s labels, a lookup per column (None when a used label has no match)."""
    out: np.ndarray = np.empty(p.codes.shape, dtype=schema.code_dtype)  # as Schema.encode gives them
    for j, variable in enumerate(p.schema.variables):
        position = {label: i for i, label in enumerate(schema.states[variable])}
        lookup = np.array([position.get(label, -2) for label in p.schema.states[variable]] + [-1], dtype=np.int64)
        column = lookup[p.codes[:, j]]  # code -1 (missing) reads the last entry, -1
        if (column == -2).any():
            return None
        out[:, j] = column
    return out


def _merge_rows(schema: Schema, codes: np.ndarray, counts: np.ndarray) -> ReferenceProfile:
    """Add up the counts of equal rows and return them in canonical order: the profile of rows already distinct.

    Each row becomes a string of bytes that sorts as :func:`_from_codes` orders the rows (first column first,
    missing, -1, first): its codes in the smallest signed type that holds them, big-endian with the sign bit
    flipped, padded to whole 64-bit words. The profiles arrive as sorted runs, and NumPy's stable sort of such
    strings (a timsort) merges the runs instead of sorting from scratch; equal neighbours are then found one
    64-bit word at a time.
    """
    n_rows, n_columns = codes.shape
    largest = max((len(schema.states[v]) for v in schema.variables), default=0)
    kind = np.dtype(">i1" if largest < 2**7 else ">i2" if largest < 2**15 else ">i4")
    width = n_columns * kind.itemsize
    sign = np.zeros(width, dtype=np.uint8)
    sign[::kind.itemsize] = 0x80  # the sign bits flipped: unsigned byte order is then the codes' order
    strings = np.zeros((n_rows, -(-width // 8) * 8), dtype=np.uint8)
    np.bitwise_xor(codes.astype(kind, copy=False).view(np.uint8).reshape(n_rows, width), sign,
                   out=strings[:, :width])
    order = np.argsort(strings.view(np.dtype((np.void, strings.shape[1]))).ravel(), kind="stable")
    new = np.zeros(n_rows, dtype=bool)
    new[:1] = True
    for word in strings.view(np.uint64).T:  # one word of every row at a time, in sorted order
        ordered = word[order]
        new[1:] |= ordered[1:] != ordered[:-1]
    start = np.flatnonzero(new)
    return ReferenceProfile(schema, np.ascontiguousarray(codes[order[start]]),
                            np.add.reduceat(counts[order], start).astype(np.int64))


def _from_codes(schema: Schema, codes: np.ndarray, counts: np.ndarray | None = None) -> ReferenceProfile:
    """Aggregate rows (with optional counts) into distinct rows in canonical (lexicographic) order.

    When a row packs into one 64-bit word (radix: a column's states, one more where it has missing cells), one sort
    of the words gives the distinct rows in canonical order with their copies, and the rows are read back from
    the words (10^6 alarm rows: 0.03 s against 0.25 s for numbering them by first occurrence and sorting).
    """
    codes = np.asarray(codes)
    if len(codes) == 0:
        raise DataError("The table has 0 rows: there is nothing to profile.")
    shift = (codes.min(axis=0) < 0).astype(int)
    words = _words([len(schema.states[v]) + int(s) for v, s in zip(schema.variables, shift)], shift)
    weights = None if counts is None else np.asarray(counts, dtype=np.int64)
    if len(words) == 1:
        keys = _pack(codes, words)[:, 0]
        if weights is None:
            unique, summed = np.unique(keys, return_counts=True)
        else:
            unique, position = np.unique(keys, return_inverse=True)
            summed = np.bincount(position, weights=weights, minlength=unique.size)
        return ReferenceProfile(schema, _unpack(unique, words[0], codes.dtype), summed.astype(np.int64))
    first, inverse, copies = distinct_rows(codes, with_inverse=weights is not None)
    if weights is not None and inverse is not None:
        copies = np.bincount(inverse, weights=weights, minlength=len(first))
    rows = codes[first]
    order = np.lexsort(rows.T[::-1])
    return ReferenceProfile(schema, np.ascontiguousarray(rows[order]), copies[order].astype(np.int64))
