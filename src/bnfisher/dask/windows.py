"""Windows of Dask data in one pass, held by the workers: each window's distinct rows with their counts.

A window of later data matters to :func:`bnfisher.drift` only through how many copies of
each distinct row it holds (and its first and last time, its missing and unseen cells).
One pass over the partitions encodes their rows with the reference's schema, assigns each
row its window, and reduces the rows of every window to distinct rows with counts; the
pieces of a window are merged on a worker and kept there (:class:`HeldWindow`).  The
client receives a few numbers per window: the window's refit, test, family tables and
witness are computed where its rows lie (:mod:`bnfisher.dask.permutations`).  A worker's
memory is bounded by a partition's rows and the windows' distinct rows; the client's by
neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.dask.client import active_client, read_dask
from bnfisher.dask.counts import _compute, _persist
from bnfisher.data.counts import distinct_rows
from bnfisher.data.providers import NumpyCounts
from bnfisher.data.schema import Schema
from bnfisher.data.windows import TimeGrid, WindowRows, check_window, group_rows, parse_times
from bnfisher.exceptions import DataError

__all__ = ["HeldWindow", "dask_windows"]


@dataclass(frozen=True)
class HeldWindow:
    """A window of data beyond memory held by a Dask worker: its distinct rows with their copies.

    Attributes
    ----------
    schema : Schema
        The schema its rows are encoded with (the reference's).
    piece : Delayed or Future
        The persisted :class:`~bnfisher.data.windows.WindowRows` (on a worker; a
        reference's on every worker).
    n_rows, n_distinct : int
        Rows, and distinct rows, of the window.
    missing_cells, unseen_cells : int
        Its missing cells, and its cells holding labels the schema lacks.
    source : str
        Where the data came from (for messages).
    left_out, left_out_cells : int, default=0
        Rows holding a label the reference lacks, left out of the held rows (not in ``n_rows``;
        :func:`dask_windows`), and their cells with a label the schema lacks (in ``unseen_cells``).

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> from bnfisher.dask import dask_windows
    >>> data = load("nursery").iloc[:1000]
    >>> windows, _ = dask_windows(dd.from_pandas(data, npartitions=3), bf.Schema.from_data(data), window=600)
    >>> held = windows[0][3]
    >>> held.n_rows, held.n_distinct == len(data.iloc[:600].drop_duplicates()), held.gather().n_rows
    (600, True, 600)
    """

    schema: Schema
    piece: Any
    n_rows: int
    n_distinct: int
    missing_cells: int
    unseen_cells: int
    source: str
    left_out: int = 0
    left_out_cells: int = 0

    @property
    def variables(self) -> tuple:
        """The schema's variables (the columns of the held codes)."""
        return tuple(self.schema.variables)

    @classmethod
    def of(cls, rows: WindowRows, *, source: str) -> HeldWindow:
        """Send distinct rows in memory (a reference) to a worker, once.

        Parameters
        ----------
        rows : WindowRows
        source : str

        Returns
        -------
        HeldWindow
        """
        import dask


        client = active_client()
        if client is not None:  # sent once to every worker: a window's tasks run where the window lies
            piece = client.scatter(rows, broadcast=True)
        else:
            (piece,) = _persist(source, dask.delayed(rows, traverse=False))
        return cls(rows.schema, piece, rows.n_rows, int(rows.counts.size), rows.missing_cells, rows.unseen_cells,
                   source)

    def run(self, function, *args):
        """Return ``function(*args, rows)``, computed where the rows lie (a HeldWindow among ``args``: its rows).

        Parameters
        ----------
        function : callable
        *args
            Passed first; a :class:`HeldWindow` is passed as its :class:`~bnfisher.data.windows.WindowRows`.

        Returns
        -------
        object
            What ``function`` returns (it should be small: it comes to the client).
        """
        import dask


        args = tuple(arg.piece if isinstance(arg, HeldWindow) else arg for arg in args)
        (out,) = _compute(self.source, dask.delayed(function)(*args, self.piece))
        return out

    def counts(self, families) -> list:
        """Return the count tables of ``families`` over the rows where each family is observed (on the worker).

        Parameters
        ----------
        families : sequence of sequence of int
            Column indices in :attr:`variables` order, child last.

        Returns
        -------
        list of ndarray
        """
        return self.run(_count_window, [tuple(f) for f in families])

    def code_tasks(self, function, *args) -> list:
        """Return ``[delayed function(rows, *args)]``, ``rows`` the held :class:`~bnfisher.data.windows.WindowRows`.

        Parameters
        ----------
        function : callable
        *args
            Passed on.

        Returns
        -------
        list of Delayed
        """
        import dask

        return [dask.delayed(function)(self.piece, *args)]

    def gather(self) -> WindowRows:
        """Return the window's distinct rows on the client (for steps that need them in memory).

        Returns
        -------
        WindowRows
        """
        import dask


        (rows,) = _compute(self.source, dask.delayed(_same)(self.piece))
        return rows


def _same(rows: WindowRows) -> WindowRows:
    return rows


def _count_window(families: list, rows: WindowRows) -> list:
    return NumpyCounts(rows.codes, rows.schema, weights=rows.counts.astype(np.float64),
                       missing="available-case").counts(families)


def _window_partition(frame: pd.DataFrame, schema: Schema, time: str | None, grid: TimeGrid | None, offset: int,
                      size: int | None, shared: dict | None) -> dict:
    """One partition: ``{key: (codes, counts, missing, unseen cells, first, last time, left out rows and cells)}``."""
    features = frame[list(schema.variables)]
    codes = schema.encode(features, missing="allow", handle_unknown="marginalize").codes
    missing = (features.isna() | features.isin(list(schema.na_values))).to_numpy() if len(frame) else \
        np.zeros(codes.shape, dtype=bool)
    out_rows = np.zeros(len(frame), dtype=bool)  # a label the reference lacks: the row is left out of the tests
    if shared is not None:
        for j, v in enumerate(schema.variables):
            unseen = (codes[:, j] < 0) & ~missing[:, j]
            if unseen.any():
                out_rows |= unseen & ~features[v].isin(list(shared.get(v, ()))).to_numpy()
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
        block, absent, dropped = codes[rows], int(missing[rows].sum()), out_rows[rows]
        unseen = int((block < 0).sum()) - absent
        first, _, counts = distinct_rows(block[~dropped], schema.cardinalities, with_inverse=False)
        times = stamps.iloc[rows] if time is not None else None
        out[key] = (block[~dropped][first], counts, absent, unseen, None if times is None else times.min(),
                    None if times is None else times.max(), int(dropped.sum()),
                    int(((block[dropped] < 0) & ~missing[rows][dropped]).sum()))
    return out


def _piece(part: dict, key):
    return part[key]


def _merge_window(schema: Schema, *pieces) -> tuple:
    """Merge one window's pieces (one per partition it spans): ``(WindowRows, first time, last time)``."""
    codes = np.vstack([p[0] for p in pieces])
    first, inverse, _ = distinct_rows(codes, schema.cardinalities)
    counts = np.bincount(inverse, weights=np.concatenate([p[1] for p in pieces]), minlength=first.size)
    rows = WindowRows(schema, np.asfortranarray(codes[first]), counts.astype(np.int64), sum(p[2] for p in pieces),
                      sum(p[3] for p in pieces))
    times = [p[4] for p in pieces if p[4] is not None]
    return (rows, min(times) if times else None, max(p[5] for p in pieces) if times else None,
            sum(p[6] for p in pieces), sum(p[7] for p in pieces))


def _summary(merged: tuple) -> tuple:
    rows, first, last, *left_out = merged
    return (rows.n_rows, int(rows.counts.size), rows.missing_cells, rows.unseen_cells, first, last, *left_out)


def _rows(merged: tuple) -> WindowRows:
    return merged[0]


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


    spans = [span for span in _compute(source, *[dask.delayed(_partition_span)(part, time) for part in parts])
             if span is not None]
    if not spans:
        raise DataError(f"Column {time!r} holds no date or time: the data has no rows.")
    if len({span[0].tz is None for span in spans}) > 1:
        raise DataError(f"Column {time!r} holds times with a UTC offset in some partitions and without one in others: "
                        "give every time an offset, or none.")
    return min(span[0] for span in spans), max(span[1] for span in spans)


def _selected(data, columns: list, time):
    """Return the data's ``columns`` (the schema's, and the time column), naming any that is absent."""
    absent = [c for c in columns if c not in data.columns]
    if absent:
        what = "Time column" if absent == [time] else "Column(s)"
        raise DataError(f"{what} {', '.join(map(repr, absent))} not in the data (columns: "
                        f"{', '.join(map(str, list(data.columns)[:8]))}).")
    return data[columns]


def _held_window(schema, source: str, key, piece, summary: tuple, grid, size) -> tuple:
    """Return a merged window as ``(label, start, end, HeldWindow)``: labelled by its time grid, or by its rows."""
    import dask

    n_rows, n_distinct, missing, unseen, start, end, *left_out = summary
    rows = HeldWindow(schema, dask.delayed(_rows)(piece), n_rows, n_distinct, missing, unseen, source, *left_out)
    if grid is not None:
        return grid.label(key), start, end, rows
    return f"rows {key * size}-{key * size + n_rows + left_out[0] - 1}", None, None, rows


def dask_windows(data, schema: Schema, *, time: str | None = None, window=None, shared: dict | None = None
                 ) -> tuple[list, str]:
    """Cut Dask data (or Parquet/CSV paths) into windows in one pass, each as its distinct rows held by a worker.

    Parameters
    ----------
    data : Dask DataFrame, or path(s) of Parquet/CSV files
    schema : Schema
        The reference's schema: every window is encoded with it (labels it lacks are
        marginalized, like missing cells, and counted).
    shared : dict, optional
        The labels the schema lacks that the reference's test part holds, by column: with it,
        a row holding another label the schema lacks is left out of the held rows (counted in
        ``left_out``), as :func:`bnfisher.drift` does in memory.
    time : str, optional
        Column holding each row's time; with a pandas frequency ``window``.
    window : str or int
        A pandas frequency with ``time``, else rows per window (rows in the data's order).

    Returns
    -------
    windows : list of tuple
        ``(label, start, end, HeldWindow)`` per non-empty window, in order: its distinct
        rows stay on a worker.
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

    source = "the Dask DataFrame"
    if not hasattr(data, "to_delayed"):
        source = repr(str(data))
        data = read_dask(data, na_values=schema.na_values or None)
    frequency, size = check_window(time, window)
    parts = _selected(data, list(schema.variables) + ([time] if time is not None else []), time).to_delayed()
    grid, offsets = None, np.zeros(len(parts), dtype=np.int64)
    if time is not None:  # the windows follow from the first and last time of all the data
        first, last = _time_span(source, parts, time)
        grid = TimeGrid(first, last, frequency)
    else:
        (lengths,) = _compute(source, [dask.delayed(len)(part) for part in parts])
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    parts = _persist(source, *[dask.delayed(_window_partition)(part, schema, time, grid, int(offset), size, shared)
                               for part, offset in zip(parts, offsets)])
    keys = _compute(source, *[dask.delayed(sorted)(part) for part in parts])
    held = {}
    for key in sorted({key for part in keys for key in part}):
        pieces = [dask.delayed(_piece)(part, key) for part, known in zip(parts, keys) if key in known]
        held[key] = dask.delayed(_merge_window)(schema, *pieces)
    merged = dict(zip(held, _persist(source, *held.values())))
    del parts  # the partitions' pieces are released once every window is merged
    summaries = _compute(source, *[dask.delayed(_summary)(piece) for piece in merged.values()])
    windows = [_held_window(schema, source, key, piece, summary, grid, size)
               for (key, piece), summary in zip(merged.items(), summaries)]
    how = (f"{len(windows)} non-empty windows of {frequency.freqstr} on column {time!r}" if time is not None
           else f"{len(windows)} windows of {size} consecutive rows")
    return windows, how + f", from {source} in one pass (each window as its distinct rows, held by the workers)"
