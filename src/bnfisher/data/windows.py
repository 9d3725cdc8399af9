"""Cut a table into windows: by time (a pandas frequency), by a fixed number of rows, or a list of tables.

The boundary of :func:`bnfisher.drift`: every check of ``time`` and ``window`` is here, and
what comes out is a list of ``(label, start, end, frame)`` that inner code trusts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bnfisher._lazy import pandas as pd
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError, OptionError, OptionTypeError

__all__ = ["WindowRows", "split_windows", "check_window", "time_bins", "window_of", "window_label", "group_rows"]


@dataclass(frozen=True)
class WindowRows:
    """A window known by its distinct rows with their counts, not by its rows (windows of data beyond memory).

    Attributes
    ----------
    schema : Schema
        The schema the rows are encoded with (the reference's).
    codes : ndarray of shape (n_distinct, n_variables)
        Each distinct row once (-1: missing, or a label the schema lacks).
    counts : ndarray of int64, shape (n_distinct,)
    missing_cells, unseen_cells : int
        The window's missing cells, and its cells holding labels the schema lacks.
    """

    schema: Schema
    codes: np.ndarray
    counts: np.ndarray
    missing_cells: int = 0
    unseen_cells: int = 0

    @property
    def n_rows(self) -> int:
        """Rows of the window."""
        return int(self.counts.sum())

    def to_frame(self) -> pd.DataFrame:
        """Return the distinct rows as labels (NaN: missing or unseen), one row each.

        Returns
        -------
        DataFrame
            Categorical columns over the codes (a byte per cell, not a Python object).
        """
        return pd.DataFrame({variable: pd.Categorical.from_codes(self.codes[:, i], categories=list(
            self.schema.states[variable])) for i, variable in enumerate(self.schema.variables)})


def check_window(time: str | None, window) -> tuple:
    """Check ``window`` for ``time``: return ``(frequency, None)`` for time windows, ``(None, rows)`` otherwise.

    Parameters
    ----------
    time : str or None
    window : str, pandas offset or int

    Returns
    -------
    tuple

    Raises
    ------
    OptionError
        Naming the value and the fix.
    """
    if time is not None:
        if window is None or isinstance(window, (int, np.integer)):
            raise OptionError(f"With `time`, `window` is a pandas frequency such as '1W', '7D' or 'MS'; got "
                              f"{window!r}.")
        try:
            return pd.tseries.frequencies.to_offset(window), None
        except (TypeError, ValueError):
            raise OptionError(f"`window` {window!r} is not a pandas frequency; use e.g. '1D', '1W', '2W', 'MS' "
                              "(month start) or 'QS'.") from None
    if window is None:
        raise OptionError("Say how to cut `data` into windows: window=<rows per window> (an int), or time=<column> "
                          "with window=<frequency> such as '1W'; or pass a list of tables.")
    if isinstance(window, (bool, np.bool_)) or not isinstance(window, (int, np.integer)) or window < 1:
        raise OptionError(f"Without `time`, `window` is a number of rows (a positive int); got {window!r}. "
                          "For time windows, give the time column: time='date'.")
    return None, int(window)


def time_bins(first, last, frequency) -> pd.DatetimeIndex:
    """Return the starts of the time windows from ``first`` to ``last`` (closed on the left, as pandas resamples).

    The windows depend only on the first and last time, so a partition of the data
    finds its rows' windows from these starts (``searchsorted``) and agrees with the
    whole table.

    Parameters
    ----------
    first, last : Timestamp
    frequency : pandas offset

    Returns
    -------
    DatetimeIndex
    """
    ends = pd.Series([0, 0], index=pd.DatetimeIndex([first, last]))
    return ends.resample(frequency, label="left", closed="left").size().index


def window_of(stamps, starts: pd.DatetimeIndex) -> np.ndarray:
    """Each time's window: the position in ``starts`` of the last start at or before it.

    Parameters
    ----------
    stamps : Series or DatetimeIndex
    starts : DatetimeIndex
        From :func:`time_bins`.

    Returns
    -------
    ndarray of int
    """
    return np.searchsorted(starts.asi8, pd.DatetimeIndex(stamps).as_unit(starts.unit).asi8, side="right") - 1


def group_rows(keys: np.ndarray) -> list:
    """Return ``(key, positions)`` for every distinct key, in increasing key order, from one stable sort.

    Parameters
    ----------
    keys : ndarray of int, shape (n_rows,)
        Each row's window.

    Returns
    -------
    list of tuple
        Positions in increasing order within each key.

    Examples
    --------
    >>> [(k, p.tolist()) for k, p in group_rows(np.array([2, 0, 2, 1]))]
    [(0, [1]), (1, [3]), (2, [0, 2])]
    """
    order = np.argsort(keys, kind="stable")
    unique, starts = np.unique(keys[order], return_index=True)
    return [(int(k), positions) for k, positions in zip(unique, np.split(order, starts[1:]))]


def window_label(start, frequency) -> str:
    """Return a time window's label: its start (its date, for windows of a day or more).

    Parameters
    ----------
    start : Timestamp
    frequency : pandas offset

    Returns
    -------
    str
    """
    return str(pd.Timestamp(start).date()) if _daily(frequency) else str(pd.Timestamp(start))


def split_windows(data, *, time: str | None = None, window=None) -> tuple[list, str]:
    """Return the windows of ``data`` and one sentence saying how they were cut.

    Parameters
    ----------
    data : DataFrame, sequence of DataFrame or mapping of name to DataFrame
        One table to cut (with ``time`` and ``window``, or ``window`` alone), or the
        windows themselves (in order; a mapping names them).
    time : str, optional
        Column of ``data`` holding each row's time (anything :func:`pandas.to_datetime`
        reads).  It is dropped from the windows.
    window : str, pandas offset or int
        With ``time``: a pandas frequency (``"1W"``, ``"7D"``, ``"MS"``, ...), windows
        aligned to calendar boundaries as :class:`pandas.Grouper` aligns them; empty
        windows are left out.  Without ``time``: a number of consecutive rows (the last
        window may be shorter).  A time window is labelled by its start: windows are
        closed on the left (``[start, next start)``); its rows keep the table's order.

    Returns
    -------
    windows : list of tuple
        ``(label, start, end, frame)`` per window, in order; ``start`` and ``end`` are the
        first and last time in the window (None for row windows and tables).
    how : str

    Raises
    ------
    OptionError, OptionTypeError, DataError
        Naming the argument, the column or the value, and the fix.
    """
    if isinstance(data, Mapping) or (isinstance(data, Sequence) and not isinstance(data, str)):
        return _tables(data, time=time, window=window)
    if not isinstance(data, pd.DataFrame):
        raise OptionTypeError(f"`data` must be a DataFrame, or a list or dict of DataFrames (one per window); got "
                              f"{type(data).__name__}.")
    if time is not None:
        return _by_time(data, time, window)
    _, size = check_window(None, window)
    out = [(f"rows {start}-{min(start + size, len(data)) - 1}", None, None, data.iloc[start:start + size])
           for start in range(0, len(data), size)]
    return out, f"{len(out)} windows of {size} consecutive rows"


def _tables(data, *, time, window) -> tuple[list, str]:
    if time is not None or window is not None:
        raise OptionError("`time` and `window` cut one table; with a list (or dict) of tables, each table is a "
                          "window: leave them out.")
    items = list(data.items()) if isinstance(data, Mapping) else [
        (f"window {k + 1}", frame) for k, frame in enumerate(data)]
    for name, frame in items:
        if not isinstance(frame, pd.DataFrame):
            raise OptionTypeError(f"Window {name!r} must be a DataFrame; got {type(frame).__name__}.")
        if len(frame) == 0:
            raise DataError(f"Window {name!r} has no rows; leave it out.")
    if not items:
        raise OptionError("`data` is an empty list: give at least one window.")
    return [(str(name), None, None, frame) for name, frame in items], f"{len(items)} tables, one window each"


def _by_time(data: pd.DataFrame, time: str, window) -> tuple[list, str]:
    if time not in data.columns:
        raise DataError(f"Time column {time!r} is not in the data (columns: {', '.join(map(str, data.columns[:8]))}"
                        f"{', ...' if data.shape[1] > 8 else ''}).")
    frequency, _ = check_window(time, window)
    stamps = pd.to_datetime(data[time], errors="coerce")
    bad = stamps.isna() & data[time].notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"Column {time!r}, row {row}: {data[time].iloc[row]!r} is not a date or time; fix or drop "
                        "such rows.")
    if stamps.isna().any():
        row = int(np.flatnonzero(stamps.isna().to_numpy())[0])
        raise DataError(f"Column {time!r} has {int(stamps.isna().sum())} empty cell(s) (first at row {row}): a row "
                        "without a time belongs to no window; drop such rows or fill in their time.")
    features = data.drop(columns=[time])
    out = []
    starts = time_bins(stamps.min(), stamps.max(), frequency)
    for key, rows in group_rows(window_of(stamps, starts)):
        times = stamps.iloc[rows]
        out.append((window_label(starts[key], frequency), times.min(), times.max(), features.iloc[rows]))
    return out, f"{len(out)} non-empty windows of {frequency.freqstr} on column {time!r}"


def _daily(frequency) -> bool:
    """Whether windows of this frequency start at midnight (then a window is labelled by its date)."""
    try:
        return pd.Timedelta(frequency) >= pd.Timedelta("1D")
    except ValueError:  # calendar frequencies (weeks anchored on a day, months, quarters, years)
        return True
