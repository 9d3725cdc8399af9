"""The monitoring dashboard: one self-contained HTML page drawn from a store's history (no scripts, no network).

Alarms first, then a timeline of every window's effect (MMD²_u with its interval; alarms in
red), then one row per window, newest first, each with its verdict, changed mechanism and
cell a click away (``<details>``).
"""

from __future__ import annotations

import html

import numpy as np

from bnfisher._utils.lazy import pandas as pd

__all__ = ["dashboard_html", "write_dashboard"]

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1240px;margin:1.5em auto;padding:0 1em;color:#222}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.1em;margin:1.2em 0 .4em}
.headline{font-size:1.05em;padding:.6em .8em;border-left:4px solid #4a6fa5;background:#f4f6fa}
.alarm{border-color:#c0392b;background:#fbeeec}
table{border-collapse:collapse;width:100%;font-size:.9em}td,th{padding:.25em .5em;border-bottom:1px solid #ddd;
text-align:left;vertical-align:top;white-space:nowrap}td.text{white-space:normal;overflow-wrap:normal}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.alarm td{background:#fbeeec}
.scroll{overflow-x:auto}details summary{cursor:pointer}.note{color:#555;font-size:.9em}
"""


def _timeline(history: pd.DataFrame) -> str:
    """Return an inline SVG: MMD²_u per window with its interval, alarms in red."""
    n = len(history)
    if n == 0:
        return ""
    width, height, pad = 1180, 220, 40
    low = np.nan_to_num(history["mmd2_u_low"].to_numpy(dtype=float), nan=0.0)
    high = np.nan_to_num(history["mmd2_u_high"].to_numpy(dtype=float), nan=0.0)
    value = np.nan_to_num(history["mmd2_u"].to_numpy(dtype=float), nan=0.0)
    bottom, top = min(0.0, low.min()), max(high.max(), value.max(), 1e-12)
    x = pad + (np.arange(n) + 0.5) * (width - 2 * pad) / n
    y = lambda v: height - pad - (v - bottom) / (top - bottom) * (height - 2 * pad)  # noqa: E731
    parts = [f"<line x1='{pad}' x2='{width - pad}' y1='{y(0):.1f}' y2='{y(0):.1f}' stroke='#999'/>"]
    for k in range(n):
        colour = "#c0392b" if history["alarm"].iloc[k] else "#4a6fa5"
        label = html.escape(f"{history['label'].iloc[k]}: MMD²_u {value[k]:.3g}, p {history['p_value'].iloc[k]:.3g}")
        parts.append(f"<line x1='{x[k]:.1f}' x2='{x[k]:.1f}' y1='{y(low[k]):.1f}' y2='{y(high[k]):.1f}' "
                     f"stroke='{colour}' stroke-opacity='.35' stroke-width='3'/>")
        parts.append(f"<circle cx='{x[k]:.1f}' cy='{y(value[k]):.1f}' r='{5 if history['alarm'].iloc[k] else 3}' "
                     f"fill='{colour}'><title>{label}</title></circle>")
    parts.append(f"<text x='{pad}' y='16' font-size='12'>MMD²_u per window (95% interval); red: alarm</text>")
    return f"<svg viewBox='0 0 {width} {height}' width='100%' role='img'>{''.join(parts)}</svg>"


def dashboard_html(history: pd.DataFrame, *, alpha: float, horizon: int, store: str) -> str:
    """Return the dashboard page of a store's history.

    Parameters
    ----------
    history : DataFrame
        :meth:`bnfisher.store.Store.windows`.
    alpha, horizon : float, int
        The guarantee the windows were tested under.
    store : str
        The store's location (shown).

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> page = dashboard_html(pd.DataFrame(columns=["label", "alarm"]), alpha=0.05, horizon=52, store="h.db")
    >>> "No window stored yet" in page
    True
    """
    alarms = history[history["alarm"].astype(bool)] if len(history) else history
    if len(history) == 0:
        headline = "<p class='headline'>No window stored yet.</p>"
    elif len(alarms):
        last = alarms.iloc[-1]
        headline = (f"<p class='headline alarm'><b>{len(alarms)} alarm{'s' if len(alarms) != 1 else ''}</b> in "
                    f"{len(history)} windows. Latest: {html.escape(str(last['label']))} — "
                    f"{html.escape(str(last['verdict'] or ''))}</p>")
    else:
        headline = (f"<p class='headline'>No alarm in {len(history)} windows (each tested at alpha / horizon = "
                    f"{alpha:g} / {horizon}).</p>")
    rows = []
    done = [_permutations(r) for r in history["result"]] if "result" in history else []
    most = max((n for n in done if n is not None), default=None)
    ordered = pd.concat([alarms.iloc[::-1], history[~history["alarm"].astype(bool)].iloc[::-1]]) if len(history) \
        else history
    for _, w in ordered.iterrows():
        details = (f"<details><summary>{html.escape(str(w['mechanism'] or w['family'] or '—'))}</summary>"
                   f"<p>{html.escape(str(w['verdict'] or ''))}</p><p>{html.escape(str(w['cell'] or ''))}</p></details>")
        rows.append(f"<tr class='{'alarm' if w['alarm'] else ''}'><td>{html.escape(str(w['label']))}</td>"
                    f"<td>{html.escape(str(w['start'] or ''))}</td><td class='num'>{int(w['rows'])}</td>"
                    f"<td class='num'>{w['p_value']:.3g}{_stopped(w, most)}</td><td class='num'>{w['mmd2_u']:.3g}</td>"
                    f"<td>{'ALARM' if w['alarm'] else ''}</td><td class='text'>{details}</td>"
                    f"<td>{html.escape(str(w['started']))}</td></tr>")
    table = ("<div class='scroll'><table><tr><th>window</th><th>start</th><th>rows</th><th>p</th><th>MMD²_u</th>"
             "<th>alarm</th><th>what changed</th><th>tested</th></tr>" + "".join(rows) + "</table></div>")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>bnfisher monitor</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_STYLE}</style></head><body>"
            f"<h1>Monitoring: {html.escape(store)}</h1>{headline}<h2>Timeline</h2>{_timeline(history)}"
            f"<p class='note'>Each window is tested against the reference by an exact permutation test at level "
            f"alpha / horizon = {alpha:g} / {horizon}: the chance of any false alarm over {horizon} windows without "
            f"change is at most {alpha:g}.</p><h2>Windows (alarms first, newest first)</h2>{table}</body></html>")


def _permutations(result) -> int | None:
    """Return the permutations a stored window's test ran (None when its result is not stored)."""
    try:
        return int(result["test"]["permutations"])
    except (TypeError, KeyError, ValueError):
        return None


def _stopped(window, most: int | None) -> str:
    """Return the mark of a p-value whose test stopped early (fewer permutations than the store's most)."""
    n = _permutations(window.get("result"))
    if n is None or most is None or n >= most:
        return ""
    return f"<span class='note'> ({n} permutations, early stop)</span>"


def write_dashboard(history: pd.DataFrame, path, *, alpha: float, horizon: int, store: str) -> None:
    """Write :func:`dashboard_html` to ``path`` (atomically: a reader never sees half a page).

    Parameters
    ----------
    history : DataFrame
    path : str or path-like
    alpha, horizon : float, int
    store : str
    """
    from bnfisher.data.io import write_text

    write_text(path, dashboard_html(history, alpha=alpha, horizon=horizon, store=store))
