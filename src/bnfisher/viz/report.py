"""A report a person can read: one self-contained HTML file (and the same content as JSON).

A shell around :mod:`bnfisher.comparison.explain`: the data overview, the network picture, the
two-sample test, the family table with p-values, the largest cells and the most
typical rows of each side -- or, for a summary, the prototypes and criticisms.
Images are embedded as PNG data, the CSS is inline, and nothing is fetched.
"""

from __future__ import annotations

import base64
import html
import json

import pandas as pd

__all__ = ["comparison_figures", "summary_figures", "render_html", "write_report"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1100px;
color:#1d2733;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d8dee6}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #d8dee6;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#eef3fb}td.num{text-align:right;font-variant-numeric:tabular-nums}
.significant{color:#b03020;font-weight:600}.note{color:#5b6775;font-size:.85rem}
img{max-width:100%;border:1px solid #e3e8ef;margin:.5rem 0}.headline{font-size:1.05rem;background:#f6f8fb;
padding:.6rem .8rem;border-left:4px solid #4a6fa5}
"""


def _records(frame: pd.DataFrame) -> list:
    return json.loads(frame.to_json(orient="records", double_precision=15))


def _overview(frames: dict) -> list:
    out = []
    for name, frame in frames.items():
        out.append({"name": name, "rows": int(len(frame)), "columns": int(frame.shape[1]),
                    "missing_cells": int(frame.isna().sum().sum())})
    return out


def comparison_figures(result) -> dict:
    """Draw the figures of a comparison report from a :class:`~bnfisher.jobs.ComparisonResult` (no recomputation).

    Parameters
    ----------
    result : ComparisonResult

    Returns
    -------
    dict
        ``{name: PNG bytes}``: the network with families shaded by their share, the
        family bar chart and the witness histograms.
    """
    from bnfisher.viz.plotting import figure_png, plot_family_shares, plot_network, plot_witness

    families = result.families
    return {
        "network": figure_png(plot_network(result.network,
                                           highlight=dict(zip(families["variable"], families["share"])))),
        "families": figure_png(plot_family_shares(families, top=result.top)),
        "witness": figure_png(plot_witness(result.witness[0], result.witness[1], names=result.names)),
    }


def summary_figures(result) -> dict:
    """Draw the figures of a summary report from a :class:`~bnfisher.jobs.SummaryResult` (no recomputation).

    Parameters
    ----------
    result : SummaryResult

    Returns
    -------
    dict
        ``{name: PNG bytes}``: the network.
    """
    from bnfisher.viz.plotting import figure_png, plot_network

    return {"network": figure_png(plot_network(result.network))}


def _table(records: list, columns: list, *, numeric=(), significant=None) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for record in records:
        cells = []
        for c in columns:
            value = record.get(c)
            text = f"{value:.4g}" if isinstance(value, float) else ("" if value is None else str(value))
            klass = ' class="num"' if c in numeric else ""
            if significant and c == significant and isinstance(value, float) and value <= 0.05:
                klass = ' class="num significant"'
            cells.append(f"<td{klass}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _rows_table(rows: list, extra: str | None = None) -> str:
    if not rows:
        return "<p class='note'>none</p>"
    columns = ["row"] + ([extra] if extra else []) + list(rows[0]["values"])
    records = [{"row": r["row"], **({extra: r[extra]} if extra else {}), **r["values"]} for r in rows]
    return _table(records, columns, numeric=("row", extra))


def render_html(content: dict, figures: dict, *, title: str = "bnfisher report") -> str:
    """Return one self-contained HTML page (inline CSS, images as data URIs, no scripts, nothing fetched).

    Parameters
    ----------
    content : dict
        From :func:`comparison_report` or :func:`summary_report`.
    figures : dict
        ``{name: PNG bytes}``.
    title : str

    Returns
    -------
    str
    """
    def image(name: str, alt: str) -> str:
        if name not in figures:
            return ""
        data = base64.b64encode(figures[name]).decode("ascii")
        return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'

    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    overview = [{"sample": s["name"], "rows": s["rows"], "columns": s["columns"], "missing cells": s["missing_cells"]}
                for s in content["samples"]]
    parts.append("<h2>Data</h2>" + _table(overview, ["sample", "rows", "columns", "missing cells"],
                                          numeric=("rows", "columns", "missing cells")))
    if content["kind"] == "comparison":
        test, families = content["test"], content["families"]
        first = families[0] if families else None
        headline = (f"MMD² = {test['mmd2']:.4g}, permutation p = {test['p_value']:.3g} "
                    f"({test['permutations']} permutations).")
        if first:
            headline += (f" The largest difference is in <b>{html.escape(str(first['variable']))}</b> given "
                         f"{html.escape(str(first['parents']))}: {100 * first['share']:.1f}% of the MMD², "
                         f"family-wise p = {first['p_adjusted']:.3g}.")
        parts.append(f"<p class='headline'>{headline}</p>")
        parts.append("<h2>What differs, by family</h2><p class='note'>Each family's exact share of the MMD²; "
                     f"p-values from the test's own permutations, adjusted by {html.escape(content['adjustment'])}."
                     "</p>" + _table(families, ["variable", "parents", "mmd2", "share", "p_value", "p_adjusted"],
                                     numeric=("mmd2", "share", "p_value", "p_adjusted"), significant="p_adjusted"))
        parts.append(image("families", "family shares of the MMD"))
        parts.append("<h2>Largest cells</h2><ul>" + "".join(f"<li>{html.escape(c['text'])}</li>"
                                                           for c in content["cells"]) + "</ul>")
        parts.append("<h2>The network</h2><p class='note'>" + html.escape(content["network"]["summary"])
                     + "; families shaded by their share of the MMD².</p>" + image("network", "the network"))
        parts.append("<h2>Rows most typical of each side</h2><p class='note'>The witness &lt;Φ(x), μ_A − μ_B&gt;: "
                     "positive where the first sample has more mass.</p>")
        for name in dict.fromkeys(r["sample"] for r in content["typical_rows"]):
            parts.append(f"<h3>{html.escape(name)}</h3>" + _rows_table(
                [r for r in content["typical_rows"] if r["sample"] == name], "witness"))
        parts.append(image("witness", "witness histograms"))
    else:
        selection = content["selection"]
        parts.append(f"<p class='headline'>{selection['k']} representative rows by greedy {selection['criterion']}"
                     f": {selection['initial']:.4g} → {selection['final']:.4g} in {selection['sweeps']} sweeps.</p>")
        parts.append("<h2>Prototypes</h2>" + _rows_table(content["prototypes"]))
        parts.append("<h2>Criticisms</h2><p class='note'>Rows the prototypes represent worst (MMD-critic).</p>"
                     + _rows_table(content["criticisms"], "witness"))
        parts.append("<h2>The network</h2>" + image("network", "the network"))
    parts.append("<p class='note'>Made by bnfisher. The Fisher kernel is not universal: the test detects "
                 "differences the network's families can express.</p></body></html>")
    return "".join(parts)


def write_report(content: dict, figures: dict, *, html_path=None, json_path=None, title: str = "bnfisher report"):
    """Write the HTML page and/or the JSON content (atomically).

    Parameters
    ----------
    content, figures : dict
    html_path, json_path : str or path-like, optional
    title : str
    """
    from bnfisher.data.io import write_text

    if html_path is not None:
        write_text(html_path, render_html(content, figures, title=title))
    if json_path is not None:
        write_text(json_path, json.dumps(content, indent=1, default=float))
