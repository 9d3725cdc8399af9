"""The monitoring dashboard: one self-contained HTML page drawn from a store's newest windows (no script, no network).

The verdict first, then a timeline (each window's p-value on a log scale against its time,
the alarm level drawn, alarms in red; an inline SVG drawn by matplotlib), then one row per
window, newest first, each with its sentence (:func:`~bnfisher.jobs.monitor_result.window_sentence`,
the one every output shows).  The page shows the store's newest windows in full and counts the
older ones, so that its size does not grow with the store's age.  Every string from the data
or the store (labels, mechanisms, cells, sentences, the store's location) is escaped.
"""

from __future__ import annotations

import html
import io
import re

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.comparison.spending import WindowLevels
from bnfisher.data.io import write_text

__all__ = ["dashboard_html", "write_dashboard"]

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1240px;margin:1.5em auto;padding:0 1em;color:#222}
h1{font-size:1.4em;margin:.2em 0;overflow-wrap:anywhere}h2{font-size:1.1em;margin:1.2em 0 .4em}
.headline{font-size:1.05em;padding:.6em .8em;border-left:4px solid #4a6fa5;background:#f4f6fa}
.alarm{border-color:#c0392b;background:#fbeeec}
table{border-collapse:collapse;width:100%;font-size:.9em}td,th{padding:.25em .5em;border-bottom:1px solid #ddd;
text-align:left;vertical-align:top;white-space:nowrap}td.text{white-space:normal;overflow-wrap:anywhere}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.alarm td{background:#fbeeec}
.scroll{overflow-x:auto}.note{color:#555;font-size:.9em}svg{max-width:100%;height:auto}
"""


def _text(value) -> str:
    """Return a stored value as escaped text (missing: an empty string)."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return ""
    return html.escape(str(value))


def _number(value, digits: str = ".3g") -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "—"
    return format(number, digits) if np.isfinite(number) else "—"


def _times(history: pd.DataFrame):
    """Each window's time for the axis (its start; else its end), or None when the windows have no times."""
    for column in ("start", "end"):
        if column in history and history[column].notna().all():
            times = pd.to_datetime(history[column], errors="coerce", utc=True, format="mixed")
            if times.notna().all():
                return times.dt.tz_localize(None)
    return None


def _timeline(history: pd.DataFrame) -> str:
    """Return an inline SVG: the windows' p-values (log scale) over time, the alarm level, alarms in red."""
    if len(history) == 0:
        return ""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except ImportError:
        return "<p class='note'>The timeline needs matplotlib: pip install 'bnfisher[plot]'.</p>"
    p = pd.to_numeric(history["p_value"], errors="coerce").to_numpy(dtype=float)
    alarm = history["alarm"].astype(bool).to_numpy()
    times = _times(history)
    x = np.arange(len(history)) if times is None else times.to_numpy()
    figure = Figure(figsize=(11.8, 2.8))
    axes = figure.add_subplot()
    level = pd.to_numeric(history["threshold"], errors="coerce").to_numpy(dtype=float)
    floor = min(np.nanmin(p, initial=1.0), np.nanmin(level, initial=1.0)) / 3
    axes.set_yscale("log")
    axes.set_ylim(floor, 1.5)
    if np.nanmax(level, initial=0.0) > np.nanmin(level, initial=0.0):  # each window at its own level
        axes.step(x, level, where="mid", color="#c0392b", linestyle="--", linewidth=1, label="alarm level")
    else:
        axes.axhline(level[0], color="#c0392b", linestyle="--", linewidth=1, label=f"alarm level {level[0]:.3g}")
    axes.plot(x, np.where(np.isfinite(p), p, np.nan), color="#9aa9c4", linewidth=0.8)
    axes.scatter(x[~alarm], p[~alarm], s=14, color="#4a6fa5", label="window", zorder=3)
    axes.scatter(x[alarm], p[alarm], s=36, color="#c0392b", label="alarm", zorder=4)
    axes.set_ylabel("p-value (log)")
    axes.set_xlabel("window start" if times is not None else "window (oldest to newest)")
    if times is None and len(history) <= 30:
        axes.set_xticks(x, [str(label)[:16] for label in history["label"]], rotation=30, ha="right", fontsize=7)
    axes.legend(loc="lower left", fontsize=8, frameon=False, ncols=3)
    axes.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]  # no XML prolog or doctype inside HTML
    return re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)


def _headline(history: pd.DataFrame, totals: tuple, *, levels: WindowLevels) -> str:
    windows, alarms = totals
    if windows == 0:
        return "<p class='headline'>No window stored yet.</p>"
    shown = history[history["alarm"].astype(bool)] if len(history) else history
    if alarms and len(shown):
        last = shown.iloc[-1]
        return (f"<p class='headline alarm'><b>{alarms} alarm{'s' if alarms != 1 else ''}</b> in {windows} windows. "
                f"Latest: {_text(last['label'])} — {_text(last['verdict'])}</p>")
    if alarms:
        return (f"<p class='headline alarm'><b>{alarms} alarm{'s' if alarms != 1 else ''}</b> in {windows} windows, "
                "none among the newest shown here.</p>")
    promise = (f"alpha {levels.alpha:g} over every window" if levels.unbounded else
               f"each tested at alpha / horizon = {levels.alpha:g} / {levels.horizon}")
    return f"<p class='headline'>No alarm in {windows} windows ({promise}).</p>"


def _row(w, most) -> str:
    stopped = ""
    n = w.get("permutations")
    if most is not None and n is not None and np.isfinite(float(n)) and int(n) < most:
        stopped = f"<span class='note'> (stopped after {int(n)} permutations)</span>"
    return (f"<tr class='{'alarm' if w['alarm'] else ''}'><td>{_text(w['label'])}</td><td>{_text(w['start'])}</td>"
            f"<td class='num'>{_number(w['rows'], '.0f')}</td>"
            f"<td class='num'>{_number(w['p_value'])}{stopped}</td><td class='num'>{_number(w['mmd2_u'])}</td>"
            f"<td>{'ALARM' if w['alarm'] else ''}</td><td class='text'>{_text(w['verdict']) or 'No change.'}</td>"
            f"<td>{_text(w['started'])}</td></tr>")


def dashboard_html(history: pd.DataFrame, *, levels: WindowLevels, store: str, totals: tuple | None = None) -> str:
    """Return the dashboard page of a store's windows.

    Parameters
    ----------
    history : DataFrame
        The windows to show (:meth:`bnfisher.store.Store.windows`, the newest of them), each
        with its level (``threshold``).
    levels : WindowLevels
        The guarantee the windows were tested under.
    store : str
        The store's location as shown (its password hidden).
    totals : tuple of (int, int), optional
        The windows and alarms the whole store holds (default: those of ``history``).

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> from bnfisher.comparison.spending import WindowLevels
    >>> page = dashboard_html(pd.DataFrame(columns=["label", "alarm"]), levels=WindowLevels(0.05, 52), store="h.db")
    >>> "No window stored yet" in page
    True
    """
    alarm = history["alarm"].astype(bool) if len(history) else pd.Series(dtype=bool)
    totals = totals if totals is not None else (len(history), int(alarm.sum()))
    permutations = pd.to_numeric(history.get("permutations", pd.Series(dtype=float)), errors="coerce")
    most = int(permutations.max()) if permutations.notna().any() else None
    ordered = pd.concat([history[alarm].iloc[::-1], history[~alarm].iloc[::-1]]) if len(history) else history
    rows = "".join(_row(w, most) for _, w in ordered.iterrows())
    table = ("<div class='scroll'><table><tr><th>window</th><th>start</th><th>rows</th><th>p</th><th>MMD²_u</th>"
             "<th>alarm</th><th>verdict</th><th>tested</th></tr>" + rows + "</table></div>")
    older = totals[0] - len(history)
    more = (f"<p class='note'>{older} older windows are not listed here; <code>bnfisher history --store "
            f"{html.escape(store)}</code> lists every window.</p>") if older > 0 else ""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>bnfisher monitor</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_STYLE}</style></head><body>"
            f"<h1>Monitoring: {html.escape(store)}</h1>{_headline(history, totals, levels=levels)}"
            f"<h2>Timeline{' (the newest ' + str(len(history)) + ' windows)' if older > 0 else ''}</h2>"
            f"{_timeline(history)}"
            f"<p class='note'>Each window is tested against the reference by an exact permutation test at "
            f"{html.escape(levels.describe())} (the dashed line).</p>"
            f"<h2>Windows (alarms first, newest first)</h2>{table}{more}</body></html>")


def write_dashboard(history: pd.DataFrame, path, *, levels: WindowLevels, store: str,
                    totals: tuple | None = None) -> None:
    """Write :func:`dashboard_html` to ``path`` (atomically: a reader never sees half a page).

    Parameters
    ----------
    history : DataFrame
    path : str or path-like
    levels : WindowLevels
    store : str
    totals : tuple of (int, int), optional
    """
    write_text(path, dashboard_html(history, levels=levels, store=store, totals=totals))
