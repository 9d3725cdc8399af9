"""The monitor job: test the windows a store has not seen, keep them in the store, raise alarms with a stated rate.

Each run cuts the data into windows, skips the windows already stored (a window is known
by its bounds, a digest of its rows and a digest of the reference), tests the others
against the reference with :func:`bnfisher.drift`'s exact test, and appends them with their
results to the store in one transaction.

**An error rate that holds over time.**  Windows accumulate run after run, so Holm over
"the windows" has no fixed meaning.  Each window is tested on its own at a level fixed before
its data are seen (:class:`~bnfisher.comparison.spending.WindowLevels`): by Bonferroni's
inequality, the probability that *any* window without drift raises an alarm is at most the
sum of their levels, whatever the dependence between their tests (they share the reference)
and however the runs are spread.  By default every window is tested at ``alpha / horizon``:
with ``alpha=0.05``, ``horizon=52`` (weekly windows) a year without change raises an alarm with
probability at most 0.05 (``benchmarks/monitor_year.py`` measures it, and how fast a change is
caught).  ``guarantee="unbounded"`` spends ``alpha`` over every window the store will ever hold
(window ``k`` at ``alpha h / ((k + h - 1)(k + h))``), at a cost in power that grows with the
store's age (``benchmarks/monitor_unbounded.py``).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import warnings

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_positive_int
from bnfisher.comparison.anytime import AnytimeTest
from bnfisher.comparison.spending import GUARANTEES, WindowLevels
from bnfisher.data.io import check_outputs
from bnfisher.data.profile import ReferenceProfile, tables_of
from bnfisher.data.windows import split_windows
from bnfisher.exceptions import DataWarning
from bnfisher.jobs.drift import (
    canonical_rows,
    check_level,
    clearest_changes,
    default_permutations,
    drift,
    permutations_used,
    resolve_stopping,
)
from bnfisher.jobs.monitor_result import RECENT, HistoryResult, MonitorResult, window_sentence
from bnfisher.jobs.webhook import check_webhook, post_alarm
from bnfisher.store.database import WINDOW_COLUMNS, Store
from bnfisher.store.location import resolve_store
from bnfisher.viz.dashboard import write_dashboard

__all__ = ["GUARANTEES", "HistoryResult", "MonitorResult", "acknowledge", "frame_digest", "history", "monitor"]


def frame_digest(frame: pd.DataFrame) -> str:
    """Return a SHA-256 digest of a table as a multiset of rows (the rows' order does not change it).

    Parameters
    ----------
    frame : DataFrame

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"x": ["u", "v", "u"]})
    >>> frame_digest(a) == frame_digest(a.iloc[::-1]), frame_digest(a) == frame_digest(a.iloc[:2])
    (True, False)
    """
    rows = canonical_rows(frame.astype(object))
    digest = hashlib.sha256("\x1f".join(map(str, rows.columns)).encode())
    digest.update(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def monitor(reference, data, *, store=None, time: str | None = None, window=None, alpha: float = 0.05,
            horizon: int = 52, guarantee: str = "horizon", min_effect: float | None = None,
            n_permutations: int | None = None,
            stopping: str = "futility", early_stop: bool | None = None, structure: str = "chow-liu",
            bins: int | None = None, bin_columns=None, categorical=None, na_values=(), webhook: str | None = None,
            webhook_timeout: float = 10.0, dashboard=None, acknowledge: bool = True, random_state=0) -> MonitorResult:
    """Test the windows of ``data`` that ``store`` has not seen against ``reference``; store them; raise alarms.

    Parameters
    ----------
    reference : DataFrame or ReferenceProfile
    data : DataFrame, or a list or dict of DataFrames (one window each)
        Cut into windows as :func:`bnfisher.drift` cuts it (``time`` and ``window``); a
        table with neither is one window.
    store : str, path-like or StoreLocation, optional
        An SQLite file (created when absent) or a ``postgresql://`` URL
        (:class:`bnfisher.store.Store`); default ``$BNFISHER_STORE``.  It is opened, and
        proved writable, before any window is tested.
    time : str, optional
        With ``window``: the column of each row's time.  Without ``window``: the table is
        one window, labelled by the span of its times.
    window : str, pandas offset or int, optional
    alpha : float, default=0.05
        The chance of any false alarm over ``horizon`` windows without change (or, with
        ``guarantee="unbounded"``, over every window), at most.
    horizon : int, default=52
        Windows the guarantee spans; each window is tested at ``alpha / horizon``.  With
        ``guarantee="unbounded"``, the pace at which ``alpha`` is spent: the store's first
        ``horizon`` windows spend half of it.
    guarantee : {"horizon", "unbounded"}, default="horizon"
        ``"unbounded"``: the chance of any false alarm over every window the store will ever
        hold is at most ``alpha``; the ``k``-th window of the store is tested at
        ``alpha horizon / ((k + horizon - 1)(k + horizon))`` (about ``alpha / (4 horizon)``
        at ``k = horizon``, :class:`~bnfisher.comparison.spending.WindowLevels`), each
        window's level kept in the store's ``threshold``.
    min_effect : float, optional
        A window alarms only when its MMD²_u is at least this, too.
    n_permutations : int, optional
        Per window, at most; default ``max(2999, 4 / level - 1)`` for the run's smallest
        level (it must be reachable), twice that with ``stopping="anytime"``.
    stopping : {"futility", "anytime", "fixed", "checkpoints"}, default="futility"
        As in :func:`bnfisher.drift`, at the level ``alpha / horizon``: by default a window's
        permutations stop as soon as an alarm has become implausible (an unchanged window after a
        few dozen, its stored p-value then 1), and a window that might alarm runs every
        permutation (the exact p-value); ``"anytime"`` also stops a clear alarm early (after about
        ``1.4 horizon / alpha`` permutations, its p-value a bound) at some power near the level;
        ``"fixed"`` runs every permutation.  The store keeps the permutations each p-value rests on.
    early_stop : bool, optional
        Deprecated: ``stopping="checkpoints"`` (True) or ``"fixed"`` (False).
    structure, bins, bin_columns, categorical, na_values
        As in :func:`bnfisher.drift`.
    webhook : str, optional
        An http:// or https:// URL that gets one JSON message (POST, :mod:`bnfisher.jobs.webhook`)
        when the run signals an alarm; a failed post is a DataWarning, and the alarm stands.
    webhook_timeout : float, default=10.0
        Seconds the whole post may take.
    dashboard : str or path-like, optional
        Write the store's dashboard (one self-contained HTML page) here.
    acknowledge : bool, default=True
        Record this run's alarms (and the :attr:`~MonitorResult.pending` ones) as signalled
        when it returns.  False leaves that to :func:`acknowledge`, called once the caller
        has signalled them (the command line does, after its last output): a run that fails
        after storing an alarm then leaves it to be signalled by the next run.
    random_state : None, int or Generator, default=0

    Returns
    -------
    MonitorResult

    Raises
    ------
    OptionError
        For ``alpha`` outside (0, 1), a ``horizon`` below 1, another ``guarantee``, a bad store
        location or webhook URL.
    StoreError
        For a store that cannot be opened or written (before any window is tested).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> data = load("nursery")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "history.db"
    >>> first = monitor(data.iloc[:3000], data.iloc[3000:5000], window=1000, store=path, n_permutations=99)
    >>> again = monitor(data.iloc[:3000], data.iloc[3000:5000], window=1000, store=path, n_permutations=99)
    >>> len(first.windows), len(again.windows), again.skipped, again.totals
    (2, 0, 2, (2, 0))
    """
    stopping = resolve_stopping(stopping, early_stop)
    spending = WindowLevels(check_level(alpha), horizon, guarantee)
    if n_permutations is not None:
        n_permutations = check_positive_int(n_permutations, "n_permutations")
    check_webhook(webhook, webhook_timeout)
    location = resolve_store(store)
    if dashboard is not None and not location.postgres:
        check_outputs([dashboard], inputs=[location.target])
    (table,) = tables_of([reference], bins=bins) if isinstance(reference, ReferenceProfile) else (reference,)
    reference_digest = frame_digest(table)
    windows, how = split_windows(data, time=time, window=window)
    keyed = _keyed(reference_digest, windows)
    options = dict(structure=structure, bins=bins, bin_columns=bin_columns, categorical=categorical,
                   na_values=na_values)
    with Store(location) as opened:  # opened to write: a store that cannot be written fails here, before the tests
        pending = opened.unsignalled()
        known = opened.known([key for key, *_ in keyed])
        new = [w for w in keyed if w[0] not in known]
        advice = _relabelled(opened, new)
        # Each new window's level, by its place among the store's windows (the same for all under a horizon).
        thresholds = spending.levels(opened.totals()[0] + 1, len(new))
        budget = _permutations(thresholds, n_permutations, stopping)
        records = _test(reference, new, reference_digest, thresholds=thresholds, min_effect=min_effect,
                        n_permutations=budget, random_state=random_state,
                        options=dict(options, stopping=_rule(thresholds, stopping))) if new else []
        run = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "reference": _reference_name(reference), "reference_digest": reference_digest,
               "alpha": alpha, "horizon": horizon, "guarantee": guarantee, "min_effect": min_effect}
        opened.append(run, records)
        result = MonitorResult(
            windows=pd.DataFrame(records, columns=[c for c in WINDOW_COLUMNS if c not in _INNER]).drop(
                columns=["digest", "reference_digest"]),
            pending=pending, skipped=len(keyed) - len(new), recent=opened.windows(last=RECENT),
            totals=opened.totals(), store=location.shown, alpha=alpha, horizon=horizon, guarantee=guarantee,
            advice=advice, notes=[f"Windows: {how}; {len(new)} new, {len(keyed) - len(new)} already stored; "
                                  f"{_levels_note(spending, thresholds)}, with {_budget(stopping, budget)}."])
        if dashboard is not None:
            write_dashboard(result.recent, dashboard, totals=result.totals, levels=spending, store=location.shown)
        result = _signal(result, opened, webhook=webhook, timeout=webhook_timeout, acknowledge=acknowledge)
    return result


def _keyed(reference_digest: str, windows: list) -> list:
    """Return each window as (key, label, start, end, frame, digest); the key names it in the store."""
    digests = [frame_digest(frame) for *_, frame in windows]
    return [(_key(reference_digest, label, start, end, digest), label, start, end, frame, digest)
            for (label, start, end, frame), digest in zip(windows, digests)]


def _reference_name(reference) -> str:
    return getattr(reference, "name", None) or "reference"


def _signal(result: MonitorResult, opened: Store, *, webhook: str | None, timeout: float,
            acknowledge: bool) -> MonitorResult:
    """Post the alarms to the webhook, mark them signalled in the store; return the result with the outcome."""
    if webhook and not result.alarms.empty:
        result = dataclasses.replace(result, webhook=post_alarm(webhook, result.message(), timeout=timeout))
    if acknowledge:
        opened.mark_signalled(result.alarms["window_key"])
    return result


def acknowledge(store, result: MonitorResult) -> None:
    """Record a run's alarms as signalled (for :func:`monitor` called with ``acknowledge=False``).

    Parameters
    ----------
    store : str, path-like or StoreLocation
        The store the run wrote.
    result : MonitorResult

    Examples
    --------
    >>> import tempfile, pathlib
    >>> data, path = load("nursery"), pathlib.Path(tempfile.mkdtemp()) / "h.db"
    >>> changed = data.iloc[3000:4000].assign(finance="inconv")
    >>> run = monitor(data.iloc[:3000], changed, store=path, horizon=1, n_permutations=99, acknowledge=False)
    >>> again = monitor(data.iloc[:3000], changed, store=path, horizon=1, acknowledge=False)
    >>> len(run.alarms), len(again.pending)  # the alarm is stored, not yet signalled: the next run reports it
    (1, 1)
    >>> acknowledge(path, run)
    >>> len(monitor(data.iloc[:3000], changed, store=path, horizon=1).pending)
    0
    """
    if not result.alarms.empty:
        with Store(store) as opened:
            opened.mark_signalled(result.alarms["window_key"])


#: Store columns a run's own table leaves out (the run's id, whether signalled).
_INNER = ("run_id", "signalled", "result")


def _permutations(thresholds: np.ndarray, n_permutations: int | None, stopping) -> int:
    """Return a window's permutations: the default reaches the run's smallest level; warn when a given number cannot."""
    if not thresholds.size:
        return n_permutations or 0
    lowest = float(thresholds.min())
    if n_permutations is None:  # one window at a time, at its own level
        return default_permutations(1, lowest) * (2 if stopping == "anytime" else 1)
    if 1.0 / (n_permutations + 1) > lowest:
        warnings.warn(f"With {n_permutations} permutations no p-value can reach the level {lowest:.3g}, so "
                      f"{'no window' if 1.0 / (n_permutations + 1) > thresholds.max() else 'some windows'} can alarm; "
                      f"use at least {int(np.ceil(1 / lowest))} (the default gives 4 / level).", DataWarning,
                      stacklevel=4)
    return n_permutations


def _rule(thresholds: np.ndarray, stopping):
    """Return the run's stopping rule (one for its windows, whose levels may differ under an unbounded guarantee).

    Futility stops a window once an alarm at the run's *largest* level is implausible, so it never stops one
    that could alarm at its own; an anytime test rejects early only below the *smallest*, where every window alarms.
    """
    if stopping not in ("anytime", "futility") or not thresholds.size:
        return stopping
    anytime = stopping == "anytime"
    return AnytimeTest(float(thresholds.min() if anytime else thresholds.max()), "aggregate", reject_early=anytime)


def _levels_note(spending: WindowLevels, thresholds: np.ndarray) -> str:
    """Return the levels of the run's windows, in words."""
    if not spending.unbounded or not thresholds.size:
        return f"each tested at {spending.describe()}"
    shown = f"{thresholds.max():.3g}" + (f" to {thresholds.min():.3g}" if thresholds.min() < thresholds.max() else "")
    return f"tested at {shown} ({spending.describe()})"


def _budget(stopping, n_permutations: int) -> str:
    """Return a window's permutations, in words."""
    if stopping == "anytime":
        return f"at most {n_permutations} permutations, stopped once settled (anytime-valid)"
    if stopping == "futility":
        return f"{n_permutations} permutations, fewer where an alarm became implausible (stopped for futility)"
    return f"{n_permutations} permutations" + (" (checkpoints: 199, 999)" if stopping == "checkpoints" else "")


def _relabelled(opened: Store, new: list) -> list:
    """Warn of new windows whose label the store holds already, with other rows (windows cut across files)."""
    again = sorted(opened.labels(str(label) for _, label, *_ in new))
    if not again:
        return []
    text = (f"{len(again)} new window{'s' if len(again) != 1 else ''} ({', '.join(again[:3])}"
            f"{', ...' if len(again) > 3 else ''}) carry a label the store holds already, with other rows: a window "
            "cut across two runs' files? Cut the data so that each window is whole in one run (with --window, "
            "windows that match the files: 1W is Monday to Sunday); both are kept.")
    warnings.warn(text, DataWarning, stacklevel=3)
    return [text]


def _key(reference_digest: str, label, start, end, digest: str) -> str:
    """Return a window's identity: a digest of the reference, its bounds and its rows (``digest``)."""
    text = "\x1f".join([reference_digest, str(label), str(start), str(end), digest])
    return hashlib.sha256(text.encode()).hexdigest()


def _test(reference, new: list, reference_digest: str, *, thresholds: np.ndarray, min_effect, n_permutations: int,
          random_state, options: dict) -> list:
    """Test the new windows against the reference, each at its own level; return one store record per window."""
    result = drift(reference, {str(label): frame for _, label, _, _, frame, _ in new}, n_permutations=n_permutations,
                   alpha=float(thresholds.max()), min_effect=min_effect, random_state=random_state, **options)
    records: list = []
    for (key, label, start, end, _, digest), (_, row), threshold in zip(new, result.windows.iterrows(), thresholds):
        threshold = float(threshold)
        large = min_effect is None or (np.isfinite(row["mmd2_u"]) and row["mmd2_u"] >= min_effect)
        alarm = bool(np.isfinite(row["p_value"]) and row["p_value"] <= threshold and large)
        comparison = result.comparisons[len(records)]
        row = _own_level(row, comparison, threshold, alarm)
        record = {"window_key": key, "label": str(label), "start": None if start is None else str(start),
                  "end": None if end is None else str(end), "rows": int(row["rows"]), "digest": digest,
                  "reference_digest": reference_digest, "p_value": row["p_value"], "threshold": threshold,
                  "alarm": alarm, "mmd2_u": row["mmd2_u"], "mmd2_u_low": row["mmd2_u_low"],
                  "mmd2_u_high": row["mmd2_u_high"], "mechanism": (row["mechanism"] or None) if alarm else None,
                  "family": row["family"] or None, **_comparison_fields(comparison, alarm)}
        records.append(dict(record, verdict=window_sentence(record)))
    return records


def _own_level(row: pd.Series, comparison, threshold: float, alarm: bool) -> pd.Series:
    """Return a window's row with its clearest family and mechanism at its own level (blank without an alarm).

    Drift's table blanks them for a window that Holm over the run's windows does not flag; a monitor's window
    alarms at ``threshold`` alone.
    """
    if comparison is None or not alarm:
        return row
    row = row.copy()
    row.update(pd.Series(clearest_changes(comparison, threshold)))
    return row


def _comparison_fields(comparison, alarm: bool) -> dict:
    """Return a window record's fields from its comparison (None: the window was too small to test)."""
    if comparison is None:
        return {"cell": None, "result": None, "permutations": None}
    cell = comparison.mechanism_cell["text"] if comparison.mechanism_cell else None
    return {"cell": cell if alarm else None, "result": comparison.to_json(),
            "permutations": permutations_used(comparison.test)}


def history(store=None, *, dashboard=None, results: bool = False) -> HistoryResult:
    """Return what a monitoring store holds (and write its dashboard when asked); the store is only read.

    Parameters
    ----------
    store : str, path-like or StoreLocation, optional
        An SQLite file or a ``postgresql://`` URL; default ``$BNFISHER_STORE``.  Nothing is
        created, migrated or written.
    dashboard : str or path-like, optional
    results : bool, default=False
        Also each window's full comparison (column ``result``; the costliest part of a large store).

    Returns
    -------
    HistoryResult

    Raises
    ------
    OptionError, StoreError
        For a location that holds no store (a missing file, another application's database).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> try:
    ...     history(pathlib.Path(tempfile.mkdtemp()) / "typo.db")  # nothing is created
    ... except ValueError as error:
    ...     print(str(error).split(": ", 1)[1])
    no such store (nothing is created by a command that reads); check the path, or run bnfisher monitor first.
    """
    location = resolve_store(store, must_exist=True)
    if dashboard is not None and not location.postgres:
        check_outputs([dashboard], inputs=[location.target])
    with Store(location, writable=False) as opened:
        windows = opened.windows(results=results)
        last = opened.last_run()
    if dashboard is not None:
        levels = WindowLevels(*last) if last is not None else WindowLevels(0.05, 52)
        totals = (len(windows), int(windows["alarm"].sum()))
        write_dashboard(windows.iloc[-RECENT:], dashboard, totals=totals, levels=levels, store=location.shown)
    return HistoryResult(windows=windows, store=location.shown)
