"""What a monitoring run and a store's history show: one sentence per window, written once, shown everywhere.

:func:`window_sentence` writes a window's verdict (no change, or the changed mechanism, its
cell and the effect) from the window's stored fields.  The monitor stores it with the window
(column ``verdict``), and the command line, the JSON, ``history``, the dashboard and the
webhook all show that one sentence.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.jobs.result import JobResult
from bnfisher.jobs.webhook import ALARM_FIELDS, PAYLOAD_VERSION

__all__ = ["RECENT", "HistoryResult", "MonitorResult", "window_sentence"]

#: The newest windows a run reads back from its store and the dashboard shows in full (two years of weeks); older
#: windows are counted, not read, so that a run's cost does not grow with the store's age.
RECENT = 104

#: The columns of a window shown in text and sent by the webhook (the store keeps more).
SHOWN = ["label", "start", "end", "rows", "p_value", "threshold", "alarm", "mmd2_u", "mechanism", "cell", "verdict"]


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def window_sentence(window) -> str:
    """Return a window's verdict in one sentence, from its fields: the one sentence every output shows.

    Parameters
    ----------
    window : mapping
        ``alarm``, ``p_value``, ``threshold``, ``mmd2_u`` and, for an alarm, ``mechanism`` and
        ``cell`` (empty or None when no single variable's mechanism explains the change).

    Returns
    -------
    str

    Examples
    --------
    >>> window_sentence({"alarm": False, "p_value": 0.43, "threshold": 0.00096, "mmd2_u": 0.0})
    'No change: p = 0.43, above the level 0.00096.'
    >>> window_sentence({"alarm": True, "p_value": 0.0002, "threshold": 0.00096, "mmd2_u": 0.012,
    ...                  "mechanism": "BP", "cell": "BP = HIGH given CO = LOW: 30% -> 55%"})
    "Drifted (p = 0.0002, MMD²_u = 0.012): BP's mechanism changed; largest change: BP = HIGH given CO = LOW: ..."
    """
    p, level, effect = _number(window.get("p_value")), _number(window.get("threshold")), _number(window.get("mmd2_u"))
    if not np.isfinite(p):
        return "Not tested (no p-value)."
    if not window.get("alarm"):
        if p <= level:
            return (f"No alarm: p = {p:.3g} is below the level {level:.3g}, but the effect MMD²_u = {effect:.3g} is "
                    "below the smallest that alarms (--min-effect).")
        return f"No change: p = {p:.3g}, above the level {level:.3g}."
    mechanism, cell = window.get("mechanism") or "", window.get("cell") or ""
    found = (f"{mechanism}'s mechanism changed" + (f"; largest change: {cell}" if cell else "")) if mechanism else \
        "no single variable's mechanism explains the change (see the window's families)"
    return f"Drifted (p = {p:.3g}, MMD²_u = {effect:.3g}): {found}."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _records(table: pd.DataFrame) -> list:
    """Return a window table as JSON records (NaN as null), without the stored result."""
    return json.loads(table.drop(columns=["result"], errors="ignore").to_json(orient="records", double_precision=15))


def _shown(table: pd.DataFrame) -> str:
    """Return the windows as text: one line each, then each alarm's sentence."""
    shown = table.assign(alarm=np.where(table["alarm"].astype(bool), "ALARM", ""),
                         mechanism=table["mechanism"].fillna("") if "mechanism" in table else "")
    columns = [c for c in ("label", "rows", "p_value", "alarm", "mmd2_u", "mechanism") if c in shown]
    with pd.option_context("display.width", 200, "display.max_colwidth", 60, "display.max_rows", 10_000):
        lines = [shown[columns].to_string(index=False)]
    alarms = table[table["alarm"].astype(bool)]
    return "\n".join(lines + [f"  {label}: {sentence}" for label, sentence in zip(alarms["label"], alarms["verdict"])])


@dataclass(repr=False)
class MonitorResult(JobResult):
    """What one :func:`~bnfisher.jobs.monitor.monitor` run did: the windows it tested, the alarms, the store after it.

    Attributes
    ----------
    windows : DataFrame
        The windows tested in this run: ``window_key``, ``label``, ``start``, ``end``,
        ``rows``, ``p_value``, ``threshold``, ``alarm``, ``mmd2_u`` (with ``mmd2_u_low``,
        ``mmd2_u_high``), ``mechanism``, ``family``, ``cell``, ``verdict`` (the window's
        sentence, :func:`window_sentence`), ``permutations``.
    pending : DataFrame
        Alarms an earlier run stored but could not signal (it failed after storing them);
        this run signals them.
    skipped : int
        Windows of the data already in the store (not tested again).
    recent : DataFrame
        The store's newest :data:`RECENT` windows after this run (without their full results).
    totals : tuple of (int, int)
        The windows and the alarms the store holds after this run.
    store : str
        The store's location, its password hidden.
    alpha, horizon : float, int
        The guarantee: at most ``alpha`` chance of a false alarm over ``horizon`` windows.
    guarantee : {"horizon", "unbounded"}, default="horizon"
        ``"unbounded"``: at most ``alpha`` over every window, each at its own level
        (:class:`~bnfisher.comparison.spending.WindowLevels`; column ``threshold``).
    notes, advice : list of str
    webhook : str or None
        What became of the alarm message (``"sent"``, or why it failed), None when none was due.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from bnfisher.jobs.monitor import monitor
    >>> data = load("nursery")
    >>> run = monitor(data.iloc[:3000], data.iloc[3000:4000], store=pathlib.Path(tempfile.mkdtemp()) / "h.db",
    ...               horizon=1)
    >>> run.verdict().startswith(("No alarm", "ALARM")), run.to_dict()["kind"]
    (True, 'monitor')
    """

    windows: pd.DataFrame
    pending: pd.DataFrame
    skipped: int
    recent: pd.DataFrame
    totals: tuple
    store: str
    alpha: float
    horizon: int
    guarantee: str = "horizon"
    notes: list = field(default_factory=list)
    advice: list = field(default_factory=list)
    webhook: str | None = None

    @property
    def alarms(self) -> pd.DataFrame:
        """Return the alarms this run signals: its own alarmed windows, then :attr:`pending` ones."""
        own = self.windows[self.windows["alarm"].astype(bool)] if len(self.windows) else self.windows
        return pd.concat([own, self.pending], ignore_index=True) if len(self.pending) else own

    def verdict(self) -> str:
        """One sentence: windows tested, alarms, and the first alarm's sentence.

        Returns
        -------
        str
        """
        tested = f"{len(self.windows)} new window{'s' if len(self.windows) != 1 else ''} tested"
        skipped = f" ({self.skipped} already in the store)" if self.skipped else ""
        earlier = (f" {len(self.pending)} alarm{'s' if len(self.pending) != 1 else ''} stored by an earlier run that "
                   "failed before signalling {}: {}.".format("them" if len(self.pending) != 1 else "it",
                                                             ", ".join(map(str, self.pending["label"])))
                   if len(self.pending) else "")
        own = self.windows[self.windows["alarm"].astype(bool)] if len(self.windows) else self.windows
        if self.guarantee == "unbounded":
            level, promise = "its own level", f"alpha {self.alpha:g} over every window"
        else:
            level, promise = f"{self.alpha / self.horizon:.3g}", f"alpha {self.alpha:g} over {self.horizon} windows"
        if own.empty:
            head = "ALARM" if earlier else "No alarm"
            below = "at its own level" if self.guarantee == "unbounded" else f"with p ≤ {level}"
            return f"{head}: {tested}{skipped}, none {below} ({promise}).{earlier}"
        first = own.iloc[0]
        return (f"ALARM: {len(own)} of {tested}{skipped} drifted (each tested at {level}: {promise}). "
                f"{first['label']}: {first['verdict']}{earlier}")

    def to_text(self, *, notes: bool = True, advice: bool = True) -> str:
        """Return the result as text: notes, verdict, this run's windows, the store.

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
            lines += ["", _shown(self.windows)]
        lines.append(f"Store {self.store}: {_count(self.totals[0], 'window')}, {_count(self.totals[1], 'alarm')}.")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Return the result as JSON-serialisable content.

        Returns
        -------
        dict
        """
        return {"kind": "monitor", "verdict": self.verdict(), "store": self.store, "alpha": self.alpha,
                "horizon": self.horizon, "guarantee": self.guarantee,
                "threshold": self.alpha / self.horizon if self.guarantee == "horizon" else None,
                "skipped": self.skipped,
                "notes": list(self.notes), "warnings": list(self.advice), "webhook": self.webhook,
                "windows": _records(self.windows), "pending": _records(self.pending),
                "history": {"windows": self.totals[0], "alarms": self.totals[1]}}

    def message(self) -> dict:
        """Return the webhook's message (:mod:`bnfisher.jobs.webhook` documents its schema).

        Returns
        -------
        dict
        """
        own = self.windows[self.windows["alarm"].astype(bool)] if len(self.windows) else self.windows
        alarms = []
        for earlier, table in ((False, own), (True, self.pending)):
            for record in _records(table):
                record.update(sentence=record.get("verdict"), earlier_run=earlier)
                alarms.append({name: record.get(name) for name in ALARM_FIELDS})
        return {"kind": "bnfisher-alarm", "version": PAYLOAD_VERSION, "verdict": self.verdict(), "store": self.store,
                "alarms": alarms}

    def _figures(self) -> dict:
        return {}

    def _title(self) -> str:
        return "Monitoring run"


@dataclass(repr=False)
class HistoryResult(JobResult):
    """What a monitoring store holds: every window, oldest first (:func:`~bnfisher.jobs.monitor.history`).

    Attributes
    ----------
    windows : DataFrame
        :meth:`bnfisher.store.Store.windows` (``result`` only when asked for).
    store : str
        The store's location, its password hidden.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from bnfisher.jobs.monitor import history, monitor
    >>> data, path = load("nursery"), pathlib.Path(tempfile.mkdtemp()) / "h.db"
    >>> _ = monitor(data.iloc[:3000], data.iloc[3000:4000], store=path, horizon=1)
    >>> found = history(path)
    >>> len(found.windows), found.to_dict()["kind"]
    (1, 'history')
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
        return f"Store {self.store}: {_count(len(self.windows), 'window')}, {_count(len(alarms), 'alarm')}{latest}."

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
        return "\n".join([self.verdict()] + (["", _shown(self.windows)] if len(self.windows) else []))

    def to_dict(self) -> dict:
        """Return the windows as JSON-serialisable content (without each window's full result).

        Returns
        -------
        dict
        """
        return {"kind": "history", "verdict": self.verdict(), "store": self.store, "windows": _records(self.windows)}

    def _figures(self) -> dict:
        return {}

    def _title(self) -> str:
        return "Monitoring history"
