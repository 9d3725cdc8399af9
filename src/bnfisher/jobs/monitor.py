"""The monitor job: test the windows a store has not seen, keep them in the store, raise alarms with a stated rate.

Each run cuts the data into windows, skips the windows already stored (a window is known
by its bounds, a digest of its rows and a digest of the reference), tests the others
against the reference with :func:`bnfisher.drift`'s exact test, and appends them with their
results to the store in one transaction.

**An error rate that holds over time.**  Windows accumulate run after run, so Holm over
"the windows" has no fixed meaning.  Each window is tested on its own at level
``alpha / horizon``: by Bonferroni's inequality, the probability that *any* of ``horizon``
windows without drift raises an alarm is at most ``alpha``, whatever the dependence between
their tests (they share the reference) and however the runs are spread.  With the defaults
(``alpha=0.05``, ``horizon=52``: weekly windows) a year without change raises an alarm with
probability at most 0.05; ``benchmarks/monitor_year.py`` measures it, and how fast a change is caught.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import urllib.request
import warnings
from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_positive_int
from bnfisher.data.profile import ReferenceProfile, tables_of
from bnfisher.data.windows import split_windows
from bnfisher.exceptions import DataWarning, OptionError
from bnfisher.jobs.drift import canonical_rows, drift
from bnfisher.jobs.result import JobResult
from bnfisher.store.database import Store

__all__ = ["HistoryResult", "MonitorResult", "frame_digest", "history", "monitor"]


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


@dataclass(repr=False)
class MonitorResult(JobResult):
    """What one :func:`monitor` run did: the windows it tested, the alarms, the store's history after it.

    Attributes
    ----------
    windows : DataFrame
        The windows tested in this run: ``label``, ``start``, ``end``, ``rows``, ``p_value``,
        ``threshold``, ``alarm``, ``mmd2_u`` (with ``mmd2_u_low``, ``mmd2_u_high``),
        ``mechanism``, ``family``, ``cell``, ``verdict``.
    skipped : int
        Windows of the data already in the store (not tested again).
    history : DataFrame
        Every window in the store after this run (:meth:`bnfisher.store.Store.windows`).
    store : str
    alpha, horizon : float, int
        The guarantee: at most ``alpha`` chance of a false alarm over ``horizon`` windows.
    notes, advice : list of str
    webhook : str or None
        What became of the alarm message (``"sent"``, or why it failed), None when none was due.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> data = load("nursery")
    >>> run = monitor(data.iloc[:3000], data.iloc[3000:4000], window=1000, horizon=1,
    ...               store=pathlib.Path(tempfile.mkdtemp()) / "h.db")
    >>> run.verdict().startswith(("No alarm", "ALARM")), run.to_dict()["kind"]
    (True, 'monitor')
    """

    windows: pd.DataFrame
    skipped: int
    history: pd.DataFrame
    store: str
    alpha: float
    horizon: int
    notes: list = field(default_factory=list)
    advice: list = field(default_factory=list)
    webhook: str | None = None

    @property
    def alarms(self) -> pd.DataFrame:
        """Return this run's windows that raised an alarm."""
        return self.windows[self.windows["alarm"]] if len(self.windows) else self.windows

    def verdict(self) -> str:
        """One sentence: windows tested, alarms, and the clearest change of the first alarm.

        Returns
        -------
        str
        """
        level = self.alpha / self.horizon
        tested = f"{len(self.windows)} new window{'s' if len(self.windows) != 1 else ''} tested"
        skipped = f" ({self.skipped} already in the store)" if self.skipped else ""
        if self.alarms.empty:
            return (f"No alarm: {tested}{skipped}, none with p ≤ {level:.3g} (alpha {self.alpha:g} over "
                    f"{self.horizon} windows).")
        first = self.alarms.iloc[0]
        where = f"; the mechanism that changed is {first['mechanism']}'s" if first["mechanism"] else ""
        return (f"ALARM: {len(self.alarms)} of {tested}{skipped} drifted (p ≤ {level:.3g}: alpha {self.alpha:g} over "
                f"{self.horizon} windows). First: {first['label']} (p = {first['p_value']:.3g}, MMD²_u = "
                f"{first['mmd2_u']:.3g}){where}.")

    def to_text(self, *, notes: bool = True, advice: bool = True) -> str:
        """Return the result as text: notes, verdict, this run's windows.

        Parameters
        ----------
        notes, advice : bool, default=True

        Returns
        -------
        str
        """
        lines = (list(self.notes) if notes else []) + (
            [f"Warning: {message}" for message in self.advice] if advice else []) + [self.verdict()]
        if len(self.windows):
            shown = self.windows.assign(alarm=np.where(self.windows["alarm"], "ALARM", ""))
            with pd.option_context("display.width", 160, "display.max_colwidth", 40):
                lines += ["", shown[["label", "rows", "p_value", "threshold", "alarm", "mmd2_u", "mechanism",
                                     "family"]].to_string(index=False)]
        lines.append(f"Store {self.store}: {len(self.history)} windows, {int(self.history['alarm'].sum())} alarms.")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Return the result as JSON-serialisable content.

        Returns
        -------
        dict
        """
        return {"kind": "monitor", "verdict": self.verdict(), "store": self.store, "alpha": self.alpha,
                "horizon": self.horizon, "threshold": self.alpha / self.horizon, "skipped": self.skipped,
                "notes": list(self.notes), "warnings": list(self.advice), "webhook": self.webhook,
                "windows": json.loads(self.windows.drop(columns=["result"], errors="ignore").to_json(
                    orient="records", double_precision=15)),
                "history": {"windows": len(self.history), "alarms": int(self.history["alarm"].sum())}}

    def _figures(self) -> dict:
        return {}

    def _title(self) -> str:
        return "Monitoring run"


def monitor(reference, data, *, store, time: str | None = None, window=None, alpha: float = 0.05,
            horizon: int = 52, min_effect: float | None = None, n_permutations: int | None = None,
            early_stop: bool = False, structure: str = "chow-liu", bins: int | None = None, bin_columns=None,
            categorical=None, na_values=(),
            webhook: str | None = None, dashboard=None, random_state=0) -> MonitorResult:
    """Test the windows of ``data`` that ``store`` has not seen against ``reference``; store them; raise alarms.

    Parameters
    ----------
    reference : DataFrame or ReferenceProfile
    data : DataFrame, or a list or dict of DataFrames (one window each)
        Cut into windows as :func:`bnfisher.drift` cuts it (``time`` and ``window``).
    store : str or path-like
        An SQLite file (created when absent) or a ``postgresql://`` URL (:class:`bnfisher.store.Store`).
    time : str, optional
    window : str, pandas offset or int, optional
    alpha : float, default=0.05
        The chance of any false alarm over ``horizon`` windows without change, at most.
    horizon : int, default=52
        Windows the guarantee spans; each window is tested at ``alpha / horizon``.
    min_effect : float, optional
        A window alarms only when its MMD²_u is at least this, too.
    n_permutations : int, optional
        Per window; default ``max(2999, 4 horizon / alpha - 1)`` (the level must be reachable).
    early_stop : bool, default=False
        Stop a window's permutations where its p-value is plainly large (as in
        :func:`bnfisher.drift`, at the level ``alpha / horizon``): an unchanged window then
        runs 199 permutations in most runs, and its stored p-value rests on those.
    structure, bins, bin_columns, categorical, na_values
        As in :func:`bnfisher.drift`.
    webhook : str, optional
        A URL that gets one JSON message (HTTP POST) when the run raises an alarm; a failed
        post is a DataWarning, and the alarm stands.
    dashboard : str or path-like, optional
        Write the store's dashboard (one self-contained HTML page) here.
    random_state : None, int or Generator, default=0

    Returns
    -------
    MonitorResult

    Raises
    ------
    OptionError
        For ``alpha`` outside (0, 1), a ``horizon`` below 1, a bad store location.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> data = load("nursery")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "history.db"
    >>> first = monitor(data.iloc[:3000], data.iloc[3000:5000], window=1000, store=path, n_permutations=99)
    >>> again = monitor(data.iloc[:3000], data.iloc[3000:5000], window=1000, store=path, n_permutations=99)
    >>> len(first.windows), len(again.windows), again.skipped, len(again.history)
    (2, 0, 2, 2)
    """
    if not 0 < alpha < 1:
        raise OptionError(f"`alpha` must be in (0, 1); got {alpha!r}.")
    horizon = check_positive_int(horizon, "horizon")
    threshold = alpha / horizon
    if n_permutations is None:
        n_permutations = max(2999, int(np.ceil(4 * horizon / alpha)) - 1)
    elif 1.0 / (n_permutations + 1) > threshold:
        warnings.warn(f"With {n_permutations} permutations no p-value can reach the level alpha / horizon = "
                      f"{threshold:.3g}, so no window can alarm; use at least {int(np.ceil(1 / threshold))} "
                      "(the default gives 4 / level).", DataWarning, stacklevel=2)
    (table,) = tables_of([reference], bins=bins) if isinstance(reference, ReferenceProfile) else (reference,)
    reference_digest = frame_digest(table)
    windows, how = split_windows(data, time=time, window=window)
    digests = [frame_digest(frame) for *_, frame in windows]
    keyed = [(_key(reference_digest, label, start, end, digest), label, start, end, frame, digest)
             for (label, start, end, frame), digest in zip(windows, digests)]
    with Store(store) as history:
        known = history.known([key for key, *_ in keyed])
        new = [w for w in keyed if w[0] not in known]
        records = _test(reference, new, reference_digest, threshold=threshold, min_effect=min_effect,
                        n_permutations=n_permutations, random_state=random_state,
                        options=dict(early_stop=early_stop, structure=structure, bins=bins, bin_columns=bin_columns,
                                     categorical=categorical,
                                     na_values=na_values)) if new else []
        run = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "reference": getattr(reference, "name", None) or "reference", "reference_digest": reference_digest,
               "alpha": alpha, "horizon": horizon, "min_effect": min_effect}
        history.append(run, records)
        stored = history.windows()
    notes = [f"Windows: {how}; {len(new)} new, {len(keyed) - len(new)} already stored; each tested at "
             f"alpha / horizon = {alpha:g} / {horizon} = {threshold:.3g} with {n_permutations} permutations."]
    table_new = pd.DataFrame(records, columns=[c for c in stored.columns if c not in ("started",)]) \
        .drop(columns=["window_key", "run_id", "digest", "reference_digest"])
    result = MonitorResult(windows=table_new, skipped=len(keyed) - len(new), history=stored, store=str(store),
                           alpha=alpha, horizon=horizon, notes=notes)
    if webhook and not result.alarms.empty:
        result.webhook = _post(webhook, result)
    if dashboard is not None:
        from bnfisher.viz.dashboard import write_dashboard

        write_dashboard(stored, dashboard, alpha=alpha, horizon=horizon, store=str(store))
    return result


def _key(reference_digest: str, label, start, end, digest: str) -> str:
    """Return a window's identity: a digest of the reference, its bounds and its rows (``digest``)."""
    text = "\x1f".join([reference_digest, str(label), str(start), str(end), digest])
    return hashlib.sha256(text.encode()).hexdigest()


def _test(reference, new: list, reference_digest: str, *, threshold: float, min_effect, n_permutations: int,
          random_state, options: dict) -> list:
    """Test the new windows against the reference; return one store record per window."""
    result = drift(reference, {str(label): frame for _, label, _, _, frame, _ in new}, n_permutations=n_permutations,
                   alpha=threshold, min_effect=min_effect, random_state=random_state, **options)
    records: list = []
    for (key, label, start, end, _, digest), (_, row) in zip(new, result.windows.iterrows()):
        comparison = result.comparisons[len(records)]
        large = min_effect is None or (np.isfinite(row["mmd2_u"]) and row["mmd2_u"] >= min_effect)
        alarm = bool(np.isfinite(row["p_value"]) and row["p_value"] <= threshold and large)
        cell = comparison.mechanism_cell["text"] if comparison is not None and comparison.mechanism_cell else None
        records.append({"window_key": key, "label": str(label), "start": None if start is None else str(start),
                        "end": None if end is None else str(end), "rows": int(row["rows"]),
                        "digest": digest, "reference_digest": reference_digest,
                        "p_value": row["p_value"], "threshold": threshold, "alarm": alarm, "mmd2_u": row["mmd2_u"],
                        "mmd2_u_low": row["mmd2_u_low"], "mmd2_u_high": row["mmd2_u_high"],
                        "mechanism": row["mechanism"] or None, "family": row["family"] or None, "cell": cell,
                        "verdict": comparison.verdict(alpha=threshold) if comparison is not None else None,
                        "result": comparison.to_json() if comparison is not None else None})
    return records


def _post(url: str, result: MonitorResult) -> str:
    """POST the alarms as one JSON message; return "sent" or why it failed (a DataWarning says so too)."""
    message = {"kind": "bnfisher-alarm", "store": result.store, "verdict": result.verdict(),
               "alarms": [{k: (None if pd.isna(v) else v) for k, v in row.items()} for row in json.loads(
                   result.alarms[["label", "start", "end", "rows", "p_value", "threshold", "mmd2_u", "mechanism",
                                  "family", "cell"]].to_json(orient="records"))]}
    request = urllib.request.Request(url, data=json.dumps(message).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the user's own URL
            if response.status >= 300:
                raise OSError(f"HTTP {response.status}")
    except (OSError, ValueError) as exc:
        text = f"the alarm could not be posted to {url} ({exc}); the alarm stands (exit status 1)."
        warnings.warn(text, DataWarning, stacklevel=3)
        return f"failed: {exc}"
    return "sent"


@dataclass(repr=False)
class HistoryResult(JobResult):
    """What a monitoring store holds: every window, oldest first (:func:`history`).

    Attributes
    ----------
    windows : DataFrame
        :meth:`bnfisher.store.Store.windows`.
    store : str

    Examples
    --------
    >>> import tempfile, pathlib
    >>> found = history(pathlib.Path(tempfile.mkdtemp()) / "h.db")
    >>> len(found.windows), found.to_dict()["kind"]
    (0, 'history')
    """

    windows: pd.DataFrame
    store: str

    def verdict(self) -> str:
        """One sentence: how many windows, how many alarms, the latest alarm.

        Returns
        -------
        str
        """
        alarms = self.windows[self.windows["alarm"]] if len(self.windows) else self.windows
        latest = f"; latest alarm: {alarms['label'].iloc[-1]}" if len(alarms) else ""
        return f"Store {self.store}: {len(self.windows)} windows, {len(alarms)} alarms{latest}."

    def to_text(self, *, notes: bool = True, advice: bool = True) -> str:
        """Return the verdict and one line per window.

        Parameters
        ----------
        notes, advice : bool, default=True
            Unused (a history has neither).

        Returns
        -------
        str
        """
        lines = [self.verdict()]
        if len(self.windows):
            shown = self.windows.assign(alarm=np.where(self.windows["alarm"], "ALARM", ""))
            with pd.option_context("display.width", 160, "display.max_colwidth", 40, "display.max_rows", 10_000):
                lines += ["", shown[["label", "start", "rows", "p_value", "alarm", "mmd2_u", "mechanism", "started"]]
                          .to_string(index=False)]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Return the windows as JSON-serialisable content (without each window's full result).

        Returns
        -------
        dict
        """
        return {"kind": "history", "verdict": self.verdict(), "store": self.store,
                "windows": json.loads(self.windows.drop(columns=["result"]).to_json(orient="records",
                                                                                     double_precision=15))}

    def _figures(self) -> dict:
        return {}

    def _title(self) -> str:
        return "Monitoring history"


def history(store, *, dashboard=None) -> HistoryResult:
    """Return what a monitoring store holds (and write its dashboard when asked).

    Parameters
    ----------
    store : str or path-like
        An SQLite file or a ``postgresql://`` URL.
    dashboard : str or path-like, optional

    Returns
    -------
    HistoryResult

    Examples
    --------
    >>> import tempfile, pathlib
    >>> history(pathlib.Path(tempfile.mkdtemp()) / "new.db").verdict().endswith("0 windows, 0 alarms.")
    True
    """
    with Store(store) as opened:
        windows = opened.windows()
        last = opened.last_run()
    if dashboard is not None:
        from bnfisher.viz.dashboard import write_dashboard

        alpha, horizon = last if last is not None else (0.05, 52)
        write_dashboard(windows, dashboard, alpha=alpha, horizon=horizon, store=str(store))
    return HistoryResult(windows=windows, store=str(store))
