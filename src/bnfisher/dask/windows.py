"""Windows of Dask data in one pass: each window's distinct rows with their counts (the Dask shell of drift).

A window of later data matters to :func:`bnfisher.drift` only through how many copies of
each distinct row it holds (and its first and last time, its missing and unseen cells).
One pass over the partitions encodes their rows with the reference's schema, assigns each
row its window, and reduces the rows of every window to distinct rows with counts; the
client adds up the partitions' counts.  Memory is bounded by a partition's rows and the
windows' distinct rows, never the data.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.data.counts import distinct_rows
from bnfisher.data.schema import Schema
from bnfisher.data.windows import TimeGrid, WindowRows, check_window, group_rows, parse_times
from bnfisher.exceptions import DataError

__all__ = ["dask_windows"]


def _window_partition(frame: pd.DataFrame, schema: Schema, time: str | None, grid: TimeGrid | None, offset: int,
                      size: int | None) -> dict:
    """One partition: ``{window key: (distinct codes, counts, missing cells, unseen cells, first, last time)}``."""
    features = frame[list(schema.variables)]
    codes = schema.encode(features, missing="allow", handle_unknown="marginalize").codes
    missing = (features.isna() | features.isin(list(schema.na_values))).to_numpy() if len(frame) else \
        np.zeros(codes.shape, dtype=bool)
    if time is not None:
        try:
            stamps = parse_times(frame[time], time)
        except DataError as exc:
            raise DataError(f"In a partition: {exc}") from None
        assert grid is not None  # time windows
        keys = grid.keys(stamps)
    else:
        assert size is not None  # rows windows
        keys = (offset + np.arange(len(frame))) // size
    out = {}
    for key, rows in group_rows(keys):
        block, absent = codes[rows], int(missing[rows].sum())
        first, _, counts = distinct_rows(block, schema.cardinalities, with_inverse=False)
        times = stamps.iloc[rows] if time is not None else None
        out[key] = (block[first], counts, absent, int((block < 0).sum()) - absent,
                    None if times is None else times.min(), None if times is None else times.max())
    return out


def _partition_span(frame: pd.DataFrame, time: str) -> tuple | None:
    """Return one partition's first and last time (None for an empty partition), checked as the table's would be."""
    try:
        stamps = parse_times(frame[time], time)
    except DataError as exc:
        raise DataError(f"In a partition: {exc}") from None
    return (stamps.min(), stamps.max()) if len(stamps) else None


def _time_span(source: str, parts: list, time: str) -> tuple:
    """Return the first and last time of all the partitions (refusing times with an offset beside times without)."""
    import dask

    from bnfisher.dask.counts import _compute

    spans = [span for span in _compute(source, *[dask.delayed(_partition_span)(part, time) for part in parts])
             if span is not None]
    if not spans:
        raise DataError(f"Column {time!r} holds no date or time: the data has no rows.")
    if len({span[0].tz is None for span in spans}) > 1:
        raise DataError(f"Column {time!r} holds times with a UTC offset in some partitions and without one in others: "
                        "give every time an offset, or none.")
    return min(span[0] for span in spans), max(span[1] for span in spans)


def dask_windows(data, schema: Schema, *, time: str | None = None, window=None) -> tuple[list, str]:
    """Cut Dask data (or Parquet/CSV paths) into windows in one pass; each window as its distinct rows.

    Parameters
    ----------
    data : Dask DataFrame, or path(s) of Parquet/CSV files
    schema : Schema
        The reference's schema: every window is encoded with it (labels it lacks are
        marginalized, like missing cells, and counted).
    time : str, optional
        Column holding each row's time; with a pandas frequency ``window``.
    window : str or int
        A pandas frequency with ``time``, else rows per window (rows in the data's order).

    Returns
    -------
    windows : list of tuple
        ``(label, start, end, WindowRows)`` per non-empty window, in order.
    how : str

    Raises
    ------
    OptionError, DataError
        As :func:`bnfisher.data.windows.split_windows`.

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> from bnfisher.dask import dask_windows
    >>> data = load("nursery").iloc[:1000]
    >>> windows, how = dask_windows(dd.from_pandas(data, npartitions=3), bf.Schema.from_data(data), window=400)
    >>> [(label, rows.n_rows) for label, _, _, rows in windows]
    [('rows 0-399', 400), ('rows 400-799', 400), ('rows 800-999', 200)]
    """
    import dask

    from bnfisher.dask.client import read_dask
    from bnfisher.dask.counts import _compute

    source = "the Dask DataFrame"
    if not hasattr(data, "to_delayed"):
        source = repr(str(data))
        data = read_dask(data, na_values=schema.na_values or None)
    frequency, size = check_window(time, window)
    columns = list(schema.variables) + ([time] if time is not None else [])
    absent = [c for c in columns if c not in data.columns]
    if absent:
        what = "Time column" if absent == [time] else "Column(s)"
        raise DataError(f"{what} {', '.join(map(repr, absent))} not in the data (columns: "
                        f"{', '.join(map(str, list(data.columns)[:8]))}).")
    frame = data[columns]
    parts = frame.to_delayed()
    grid, offsets = None, np.zeros(len(parts), dtype=np.int64)
    if time is not None:  # the windows follow from the first and last time of all the data
        first, last = _time_span(source, parts, time)
        grid = TimeGrid(first, last, frequency)
    else:
        (lengths,) = _compute(source, [dask.delayed(len)(part) for part in parts])
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    results = _compute(source, *[dask.delayed(_window_partition)(part, schema, time, grid, int(offset), size)
                                 for part, offset in zip(parts, offsets)])
    merged: dict = {}
    for result in results:
        for key, piece in result.items():
            merged.setdefault(key, []).append(piece)
    windows = []
    for key in sorted(merged):
        pieces = merged[key]
        codes = np.vstack([p[0] for p in pieces])
        first, inverse, _ = distinct_rows(codes, schema.cardinalities)
        counts = np.bincount(inverse, weights=np.concatenate([p[1] for p in pieces]),
                             minlength=first.size).astype(np.int64)
        rows = WindowRows(schema, np.asfortranarray(codes[first]), counts, sum(p[2] for p in pieces),
                          sum(p[3] for p in pieces))
        if time is not None:
            start, end = min(p[4] for p in pieces), max(p[5] for p in pieces)
            assert grid is not None
            label = grid.label(key)
        else:
            assert size is not None
            start = end = None
            label = f"rows {key * size}-{key * size + rows.n_rows - 1}"
        windows.append((label, start, end, rows))
    how = (f"{len(windows)} non-empty windows of {frequency.freqstr} on column {time!r}" if time is not None
           else f"{len(windows)} windows of {size} consecutive rows")
    return windows, how + f", from {source} in one pass (each window as its distinct rows)"
