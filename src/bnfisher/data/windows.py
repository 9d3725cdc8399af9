"""Cut a table into windows: by time (a pandas frequency), by a fixed number of rows, or a list of tables.

The boundary of :func:`bnfisher.drift`: every check of ``time`` and ``window`` is here, and
what comes out is a list of ``(label, start, end, frame)`` that inner code trusts.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError, OptionError, OptionTypeError, ResourceError

__all__ = ["MAX_CALENDAR_WINDOWS", "HeldRows", "TimeGrid", "WindowRows", "check_window", "group_rows", "parse_times",
           "split_windows"]


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


@runtime_checkable
class HeldRows(Protocol):
    """A window of data beyond memory held where it lies (a backend's worker): what drift needs of it.

    :attr:`bnfisher.data.providers.Backend.windows` returns windows so held, and
    :attr:`~bnfisher.data.providers.Backend.hold` sends a reference's rows to the backend
    (:class:`bnfisher.dask.windows.HeldWindow` is Dask's).

    Attributes
    ----------
    schema : Schema
    n_rows, n_distinct, missing_cells, unseen_cells : int
    variables : tuple of str
    """

    schema: Schema
    n_rows: int
    n_distinct: int
    missing_cells: int
    unseen_cells: int

    @property
    def variables(self) -> tuple:
        """The schema's variables (the columns of the held codes)."""

    def run(self, function, *args):
        """Return ``function(*args, rows)`` computed where the rows lie (held rows among ``args``: theirs).

        Parameters
        ----------
        function : callable
            Takes :class:`WindowRows` last.
        *args

        Returns
        -------
        object
        """

    def counts(self, families) -> list:
        """Return available-case count tables of ``families`` (column indices in :attr:`variables` order).

        Parameters
        ----------
        families : sequence of sequence of int

        Returns
        -------
        list of ndarray
        """

    def gather(self) -> WindowRows:
        """Return the distinct rows in memory.

        Returns
        -------
        WindowRows
        """


#: A week without an anchor ("W", "1W", "2W"): bnfisher reads it as ISO weeks, Monday to Sunday (pandas' "W" is
#: "W-SUN": weeks from Sunday, which cut a Monday-to-Sunday extract in two).  "W-SUN" and the like keep their anchor.
_UNANCHORED_WEEK = re.compile(r"\s*\d*\s*[Ww]\s*")


def check_window(time: str | None, window) -> tuple:
    """Check ``window`` for ``time``: return ``(frequency, None)`` for time windows, ``(None, rows)`` otherwise.

    A week without an anchor (``"1W"``, ``"2W"``) is an ISO week, Monday to Sunday
    (``"W-MON"``); give ``"W-SUN"`` (or another day) for weeks from another day.

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
            frequency = pd.tseries.frequencies.to_offset(window)
        except (TypeError, ValueError):
            raise OptionError(f"`window` {window!r} is not a pandas frequency; use e.g. '1D', '1W', '2W', 'MS' "
                              "(month start) or 'QS'.") from None
        if frequency.n <= 0:
            raise OptionError(f"`window` {window!r} is not a positive frequency; use e.g. '1D', '1W' or 'MS'.")
        if isinstance(window, str) and _UNANCHORED_WEEK.fullmatch(window):
            frequency = pd.offsets.Week(frequency.n, weekday=0)  # ISO weeks: Monday to Sunday, not pandas' W-SUN
        return frequency, None
    if window is None:
        raise OptionError("Say how to cut `data` into windows: window=<rows per window> (an int), or time=<column> "
                          "with window=<frequency> such as '1W'; or pass a list of tables.")
    if isinstance(window, (bool, np.bool_)) or not isinstance(window, (int, np.integer)) or window < 1:
        raise OptionError(f"Without `time`, `window` is a number of rows (a positive int); got {window!r}. "
                          "For time windows, give the time column: time='date'.")
    return None, int(window)


@dataclass(frozen=True)
class TimeGrid:
    """The time windows of one frequency from a first time on: each time's window start, without listing the span.

    Windows are closed on the left (``[start, next start)``) and aligned as pandas
    resamples them (fixed frequencies from midnight of the first day; calendar frequencies
    on their calendar boundaries).  A fixed frequency (days, hours, ...) finds each
    time's start by arithmetic, so two rows ten years apart in windows of a second cost
    two windows, not 3 * 10^8; a calendar frequency (weeks, months, business days) lists its
    starts over the span, at most :data:`MAX_CALENDAR_WINDOWS`.  The windows depend only
    on the first and last time, so a partition of the data finds its rows' windows from
    the grid and agrees with the whole table.

    Parameters
    ----------
    first, last : Timestamp
        The first and last time of all the data (naive, or in UTC).
    frequency : pandas offset
        Positive (checked by :func:`check_window`).

    Examples
    --------
    >>> second = pd.tseries.frequencies.to_offset("1s")
    >>> grid = TimeGrid(pd.Timestamp("2020-01-01 10:00"), pd.Timestamp("2030-01-01"), second)
    >>> times = pd.to_datetime(["2020-01-01 10:00:00.5", "2030-01-01"], format="ISO8601")
    >>> [str(pd.Timestamp(k)) for k in grid.keys(times)]
    ['2020-01-01 10:00:00', '2030-01-01 00:00:00']
    """

    first: pd.Timestamp
    last: pd.Timestamp
    frequency: Any

    def keys(self, stamps) -> np.ndarray:
        """Return each time's window, as its start in nanoseconds since the epoch (UTC for aware times).

        Parameters
        ----------
        stamps : Series or DatetimeIndex
            Times between ``first`` and ``last``, of the same kind (naive, or UTC).

        Returns
        -------
        ndarray of int64
        """
        values = pd.DatetimeIndex(stamps).as_unit("ns").asi8
        step = _fixed_step(self.frequency)
        if step:
            origin = self.first.normalize().as_unit("ns").value  # resample's origin="start_day"
            return origin + (values - origin) // step * step
        starts = self._calendar_starts
        return starts[np.searchsorted(starts, values, side="right") - 1]

    @functools.cached_property
    def _calendar_starts(self) -> np.ndarray:
        first, last = self.first.as_unit("ns"), self.last.as_unit("ns")
        span = last.value - first.value  # integers: a span of centuries overflows a Timedelta
        nominal = (first + self.frequency).as_unit("ns").value - first.value  # one window's length near the start
        if nominal <= 0:
            raise OptionError(f"`window` {self.frequency.freqstr!r} does not move forward in time; use a positive "
                              "frequency such as '1D' or '1W'.")
        if span / nominal > MAX_CALENDAR_WINDOWS:
            raise ResourceError(f"`window` {self.frequency.freqstr!r} cuts the time from {first} to {last} into "
                                f"about {span / nominal:.3g} windows (at most {MAX_CALENDAR_WINDOWS:,} calendar "
                                "windows); use a longer window.")
        ends = pd.Series([0, 0], index=pd.DatetimeIndex([first, last]))
        try:
            return ends.resample(self.frequency, label="left", closed="left").size().index.as_unit("ns").asi8
        except ValueError:  # pandas cannot resample some offsets (business hours): their dates from the one before
            anchor = self.frequency.rollback(first.normalize())
            return pd.date_range(anchor, last, freq=self.frequency).as_unit("ns").asi8

    @functools.cached_property
    def daily(self) -> bool:
        """Whether every window starts at midnight (then a window is labelled by its date)."""
        step = _fixed_step(self.frequency)
        starts = np.array([step]) if step else self._calendar_starts
        return bool(np.all(starts % _DAY == 0))

    def label(self, key: int) -> str:
        """Return a window's label: its start (its date, when every window starts at midnight).

        Parameters
        ----------
        key : int
            From :meth:`keys`.

        Returns
        -------
        str
        """
        start = pd.Timestamp(int(key), unit="ns", tz=self.first.tz)
        return str(start.date()) if self.daily else str(start)


#: The most windows a calendar frequency (weeks, months, business days) may cut a span into.
MAX_CALENDAR_WINDOWS = 100_000

_DAY = 86_400_000_000_000  # nanoseconds


def _fixed_step(frequency) -> int:
    """Nanoseconds of a fixed-length frequency (hours, ..., and days: times are naive or UTC); 0 for calendar ones."""
    if isinstance(frequency, pd.tseries.offsets.Tick):
        return int(frequency.nanos)
    if type(frequency) is pd.tseries.offsets.Day:  # no daylight saving in naive or UTC times: n * 24 hours
        return int(frequency.n) * _DAY
    return 0


def _to_datetime(values: pd.Series, **options) -> pd.Series:
    try:
        stamps = pd.to_datetime(values, errors="coerce", **options)
        if pd.api.types.is_datetime64_any_dtype(stamps.dtype):
            return stamps
    except (ValueError, TypeError):
        pass
    # Mixed UTC offsets (pandas >= 2.1 raises, 2.0 returns objects): one instant each, converted to UTC ...
    stamps = pd.to_datetime(values, errors="coerce", utc=True, **options)
    # ... unless some times have no offset at all: UTC would be a guess.
    for position, value in zip(*np.unique(values.astype(str).to_numpy(), return_index=True)[::-1]):
        try:
            naive = not pd.isna(stamps.iloc[position]) and pd.Timestamp(value).tzinfo is None
        except (ValueError, TypeError):  # a cell of another format: judged (and named) by the caller
            continue
        if naive:
            raise DataError(f"Column {values.name!r} mixes times with a UTC offset and times without one (row "
                            f"{position}: {value!r} has none): give every time an offset, or none.")
    return stamps


def parse_times(values: pd.Series, column) -> pd.Series:
    """Return a time column as times (UTC where the times carry offsets), refusing what is not a time.

    Parameters
    ----------
    values : Series
        The column as read.
    column
        Its name (for the messages).

    Returns
    -------
    Series of datetime64[ns] or datetime64[ns, UTC]
        Times with UTC offsets converted to UTC (mixed offsets included).

    Raises
    ------
    DataError
        For numbers (epoch seconds would be read as nanoseconds), cells that are not
        times, empty cells, times with and without an offset in one column, and times
        beyond 1677-2262.

    Examples
    --------
    >>> parse_times(pd.Series(["2020-01-01T00:00+01:00", "2020-01-01T00:00+02:00"]), "t").tolist()
    [Timestamp('2019-12-31 23:00:00+0000', tz='UTC'), Timestamp('2019-12-31 22:00:00+0000', tz='UTC')]
    """
    if pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values):
        raise DataError(f"Time column {column!r} holds numbers ({values.dtype}), not dates or times: numbers would be "
                        "read as nanoseconds since 1970. Convert it first, e.g. pd.to_datetime(data[column], "
                        "unit='s') for seconds since 1970, or write the times as ISO dates (2024-05-31T12:00).")
    stamps = _to_datetime(values)
    bad = stamps.isna() & values.notna()
    if bad.any():  # pandas infers one format from the first cell: read cells of other formats one by one
        stamps = _to_datetime(values, format="mixed")
        bad = stamps.isna() & values.notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        if getattr(stamps.dt, "tz", None) is not None and not pd.isna(
                pd.to_datetime(values.iloc[[row]], errors="coerce").iloc[0]):
            raise DataError(f"Column {column!r} mixes times with a UTC offset and times without one (row {row}: "
                            f"{values.iloc[row]!r} has none): give every time an offset, or none.")
        raise DataError(f"Column {column!r}, row {row}: {values.iloc[row]!r} is not a date or time; fix or drop such "
                        "rows.")
    if stamps.isna().any():
        row = int(np.flatnonzero(stamps.isna().to_numpy())[0])
        raise DataError(f"Column {column!r} has {int(stamps.isna().sum())} empty cell(s) (first at row {row}): a row "
                        "without a time belongs to no window; drop such rows or fill in their time.")
    if getattr(stamps.dt, "tz", None) is not None:
        stamps = stamps.dt.tz_convert("UTC")
    try:
        return stamps.dt.as_unit("ns")
    except (OverflowError, ValueError, pd.errors.OutOfBoundsDatetime):
        raise DataError(f"Column {column!r} holds times before 1677 or after 2262, which pandas cannot hold in "
                        "nanoseconds; fix or drop such rows.") from None


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


def split_windows(data, *, time: str | None = None, window=None) -> tuple[list, str]:
    """Return the windows of ``data`` and one sentence saying how they were cut.

    Parameters
    ----------
    data : DataFrame, sequence of DataFrame or mapping of name to DataFrame
        One table to cut (with ``time`` and ``window``, or ``window`` alone; with neither it
        is one window), or the windows themselves (in order; a mapping names them; with
        ``time``, each is labelled by the span of its times).
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
    if len(data) == 0:
        raise DataError("`data` has no rows: there is no window to test (an empty extract?); give the rows to test.")
    if window is None:
        return _tables({"all rows": data}, time=time, window=None)
    if time is not None:
        return _by_time(data, time, window)
    _, size = check_window(None, window)
    out = [(f"rows {start}-{min(start + size, len(data)) - 1}", None, None, data.iloc[start:start + size])
           for start in range(0, len(data), size)]
    return out, f"{len(out)} windows of {size} consecutive rows"


def _tables(data, *, time, window) -> tuple[list, str]:
    """Each table one window: labelled by its name, or (with ``time``) by the span of its times."""
    if window is not None:
        raise OptionError("`window` cuts one table; with a list (or dict) of tables, each table is a window: leave "
                          "it out.")
    items = list(data.items()) if isinstance(data, Mapping) else [
        (f"window {k + 1}", frame) for k, frame in enumerate(data)]
    for name, frame in items:
        if not isinstance(frame, pd.DataFrame):
            raise OptionTypeError(f"Window {name!r} must be a DataFrame; got {type(frame).__name__}.")
        if len(frame) == 0:
            raise DataError(f"Window {name!r} has no rows; leave it out.")
    if not items:
        raise OptionError("`data` is an empty list: give at least one window.")
    if time is None:
        return [(str(name), None, None, frame) for name, frame in items], _each(len(items))
    out = []
    for name, frame in items:
        if time not in frame.columns:
            raise DataError(f"Time column {time!r} is not in window {name!r}.")
        stamps = parse_times(frame[time], time)
        first, last = stamps.min(), stamps.max()
        out.append((_span(first, last), first, last, frame.drop(columns=[time])))
    return out, f"{_each(len(items))}, labelled by the span of column {time!r}"


def _each(n: int) -> str:
    return f"{n} table{'s' if n != 1 else ''}, one window each"


def _span(first, last) -> str:
    """Return a window's label from its first and last time: dates when both are at midnight."""
    if pd.isna(first):
        return "no time"
    daily = first == first.normalize() and last == last.normalize()
    show = (lambda t: t.strftime("%Y-%m-%d")) if daily else (lambda t: t.isoformat())
    return show(first) if first == last else f"{show(first)} to {show(last)}"


def _by_time(data: pd.DataFrame, time: str, window) -> tuple[list, str]:
    if time not in data.columns:
        raise DataError(f"Time column {time!r} is not in the data (columns: {', '.join(map(str, data.columns[:8]))}"
                        f"{', ...' if data.shape[1] > 8 else ''}).")
    frequency, _ = check_window(time, window)
    stamps = parse_times(data[time], time)
    features = data.drop(columns=[time])
    out = []
    if len(stamps):
        grid = TimeGrid(stamps.min(), stamps.max(), frequency)
        for key, rows in group_rows(grid.keys(stamps)):
            times = stamps.iloc[rows]
            out.append((grid.label(key), times.min(), times.max(), features.iloc[rows]))
    utc = " (times with UTC offsets, in UTC)" if getattr(stamps.dt, "tz", None) is not None else ""
    return out, f"{len(out)} non-empty windows of {frequency.freqstr} on column {time!r}{utc}"
