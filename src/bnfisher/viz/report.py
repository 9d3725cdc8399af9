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

from bnfisher._utils.jsonable import json_text
from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import free_name
from bnfisher.data.io import write_text
from bnfisher.viz.comparison import MECHANISMS_SHOWN, plot_mechanisms
from bnfisher.viz.plotting import figure_png, plot_family_shares, plot_network, plot_witness

__all__ = ["comparison_figures", "summary_figures", "render_html", "write_report"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1100px;
color:#1d2733;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d8dee6}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #d8dee6;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#eef3fb}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.significant{color:#b03020;font-weight:600}.note{color:#5b6775;font-size:.85rem}
img{max-width:100%;border:1px solid #e3e8ef;margin:.5rem 0}.headline{font-size:1.05rem;background:#f6f8fb;
padding:.6rem .8rem;border-left:4px solid #4a6fa5}
.verdict{font-size:1.2rem;font-weight:600;margin:.6rem 0 1rem}.warnings{color:#8a4b00;font-size:.9rem}
.scroll{overflow-x:auto;max-width:100%}td{max-width:18rem;overflow-wrap:normal;word-break:normal}
.missing{color:#8895a4}
details{margin:.8rem 0}summary{cursor:pointer;font-weight:600}
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
        family bar chart, the witness histograms and, when a mechanism changed, the
        mechanism chart.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> result = bf.compare(A, B, network=network, n_permutations=99, random_state=0)
    >>> from bnfisher.viz import comparison_figures
    >>> sorted(comparison_figures(result))
    ['families', 'network', 'witness']
    """
    families = result.families
    values_x, values_y, weights, bins = result.witness_bars()
    drawn = {
        "network": figure_png(plot_network(result.network,
                                           highlight=dict(zip(families["variable"], families["share"])))),
        "families": figure_png(plot_family_shares(families, top=result.top)),
        "witness": figure_png(plot_witness(values_x, values_y, names=result.names, weights=weights, bins=bins)),
    }
    if result.mechanisms["changed"].any():
        drawn["mechanisms"] = figure_png(plot_mechanisms(result.mechanisms, top=MECHANISMS_SHOWN))
    return drawn


def summary_figures(result) -> dict:
    """Draw the figures of a summary report from a :class:`~bnfisher.jobs.SummaryResult` (no recomputation).

    Parameters
    ----------
    result : SummaryResult

    Returns
    -------
    dict
        ``{name: PNG bytes}``: the marginals (subset against data, missing cells as a bar) and the network.

    Examples
    --------
    >>> from bnfisher.viz import summary_figures
    >>> summary = bf.summarize(data, 20, n_init=20, n_random=20, random_state=0)
    >>> sorted(summary_figures(summary))
    ['marginals', 'network']
    """
    return {"marginals": figure_png(result.plot()), "network": figure_png(plot_network(result.network))}


def _table(records: list, columns: list, *, numeric=(), significant=None, percent=(), raw=()) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for record in records:
        cells = []
        for c in columns:
            value = record.get(c)
            if c in percent and isinstance(value, (int, float)):
                text = f"{100 * value:.1f}%"
            else:
                text = f"{value:.4g}" if isinstance(value, float) else str(value)
            klass = ' class="num"' if c in numeric else ""
            if significant and c == significant and isinstance(value, float) and value <= 0.05:
                klass = ' class="num significant"'
            shown = ("<i class='missing'>missing</i>" if value is None
                     else str(value) if c in raw else html.escape(text))  # raw: markup made here, not user text
            cells.append(f"<td{klass}>{shown}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    # Wide tables scroll inside their box, never the page.
    return f"<div class='scroll'><table><tr>{head}</tr>{''.join(body)}</table></div>"


def _profile_svg(profile: dict, names: tuple) -> str:
    """Return a small inline SVG bar chart: the child's shares in A (blue) and B (orange) in one configuration."""
    states, a, b = profile["states"], profile["A"], profile["B"]
    width, height, gap = 16 * len(states) + 8, 42, 2
    bars = []
    for k, (x, y) in enumerate(zip(a, b)):
        left = 4 + 16 * k
        for offset, value, colour in ((0, x, "#2f6fb0"), (7, y, "#e08a2e")):
            h = max(round(34 * value), 0)
            bars.append(f"<rect x='{left + offset}' y='{38 - h}' width='6' height='{h}' fill='{colour}'>"
                        f"<title>{html.escape(f'{states[k]}: {names[offset > 0]} {100 * value:.1f}%')}</title></rect>")
    given = ", ".join(f"{p}={v}" for p, v in profile["given"].items())
    caption = html.escape(f"given {given}" if given else "")
    return (f"<svg width='{width}' height='{height}' role='img' aria-label='{caption}'>{''.join(bars)}"
            f"<line x1='2' y1='38.5' x2='{width - 2}' y2='38.5' stroke='#999' stroke-width='{gap / 2}'/></svg>"
            f"<div class='note'>{caption}</div>")


def _with_profiles(families: list, profiles: list, names: tuple) -> list:
    """Return the family records with their inline chart (families without one get an empty cell)."""
    charts = {p["variable"]: _profile_svg(p, names) for p in profiles}
    return [dict(record, **{"A vs B": charts.get(str(record["variable"]), "")}) for record in families]


def _rows_table(rows: list, extra: str | None = None) -> str:
    if not rows:
        return "<p class='note'>none</p>"
    values = list(rows[0]["values"])
    row = free_name("row", values)  # a user column named "row" keeps its name
    own = free_name(extra, values) if extra else None
    columns = [row] + ([own] if own else []) + values
    records = [{row: r["row"], **({own: r[extra]} if own else {}), **r["values"]} for r in rows]
    return _table(records, columns, numeric=(row, own))


def render_html(content: dict, figures: dict, *, title: str = "bnfisher report") -> str:
    """Return one self-contained HTML page (inline CSS, images as data URIs, no scripts, nothing fetched).

    Parameters
    ----------
    content : dict
        A result's ``to_dict()`` (:class:`~bnfisher.jobs.ComparisonResult`,
        :class:`~bnfisher.jobs.SummaryResult`, :class:`~bnfisher.jobs.DriftResult`).
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
    if content.get("verdict"):  # the answer first, in words
        parts.append(f"<p class='verdict'>{html.escape(content['verdict'])}</p>")
    if content.get("warnings"):
        parts.append("<ul class='warnings'>" + "".join(f"<li>Warning: {html.escape(w)}</li>"
                                                        for w in content["warnings"]) + "</ul>")
    if content["kind"] == "drift":
        parts += _drift_parts(content, image)
    else:
        overview = [{"sample": s["name"], "rows": s["rows"], "columns": s["columns"],
                     "missing cells": s["missing_cells"]} for s in content["samples"]]
        parts.append("<h2>Data</h2>" + _table(overview, ["sample", "rows", "columns", "missing cells"],
                                              numeric=("rows", "columns", "missing cells")))
        parts += (_comparison_parts(content, image) if content["kind"] == "comparison"
                  else _summary_parts(content, image))
    parts.append("<p class='note'>Made by bnfisher.</p></body></html>")
    return "".join(parts)


def _comparison_parts(content: dict, image) -> list:
    """Return the evidence of a comparison: test, families, cells, network, typical rows."""
    parts: list = []
    test = content["test"]
    headline = (f"MMD² = {test['mmd2']:.4g}, permutation p = {test['p_value']:.3g} "
                f"({html.escape(str(test.get('method', 'mmd')))} test, {int(test['permutations'])} permutations). "
                + html.escape(test.get("signal", "")))
    if test["p_value"] <= 0.05:  # a change only where there is one
        headline += " " + html.escape(content["verdict"].split("; ", 1)[-1])
    if test.get("mmd2_unbiased_ci"):
        low, high = test["mmd2_unbiased_ci"]
        headline += f" Effect size MMD²_u = {test['mmd2_unbiased']:.3g} (95% CI {low:.3g} to {high:.3g})."
    parts.append(f"<p class='headline'>{headline}</p>")
    if content.get("mechanisms"):
        parts.append("<h2>Which mechanisms changed</h2><p class='note'>A variable is named when no set of its "
                     "neighbours explains its difference between the samples: <i>p_value</i> is the largest over "
                     "the conditioning sets searched (<i>sets</i>), <i>best_set</i> the one that gave it, "
                     "<i>p_adjusted</i> Holm's adjustment over the variables.</p>"
                     + _table(content["mechanisms"][:10],
                              ["variable", "changed", "p_value", "p_adjusted", "best_set", "z", "sets"],
                              numeric=("p_value", "p_adjusted", "z", "sets"), significant="p_adjusted")
                     + "".join(f"<p class='note'>Cannot orient: {html.escape(' or '.join(group))} (each explains "
                               "the other's difference).</p>" for group in content.get("unoriented", []))
                     + image("mechanisms", "which mechanisms changed: -log10 of each variable's adjusted p"))
    parts.append("<h2>Which conditional distributions changed</h2><p class='note'>Each family (a variable given "
                 "its parents) is tested for a change of its conditional distribution, exactly, by permutations "
                 "within its parent configurations; <i>share</i> is its part of the difference above chance "
                 "(<i>excess</i>: the statistic minus its mean under no change), <i>mmd2</i> its exact part of "
                 "the MMD² (which also echoes shifts of its parents); p-values adjusted by "
                 f"{html.escape(content['adjustment'])}."
                 " The chart: the variable's shares in <span style='color:#2f6fb0'>A</span> and "
                 "<span style='color:#e08a2e'>B</span> in the parent configuration where they differ most "
                 "(hover a bar for its state).</p>"
                 + _families_table(content, ["excess", "mmd2"]))
    parts.append(image("families", "family shares of the difference above chance"))
    parts.append("<h2>Largest cells</h2><ul>" + "".join(f"<li>{html.escape(c['text'])}</li>"
                                                       for c in content["cells"]) + "</ul>")
    parts.append("<h2>The network</h2><p class='note'>" + html.escape(content["network"]["summary"])
                 + "; families shaded by their share of the difference above chance.</p>"
                 + image("network", "the network"))
    parts.append("<h2>Rows most typical of each side</h2><p class='note'>The witness &lt;Φ(x), μ_A − μ_B&gt;: "
                 "positive where the first sample has more mass.</p>")
    for name in dict.fromkeys(r["sample"] for r in content["typical_rows"]):
        parts.append(f"<h3>{html.escape(name)}</h3>" + _rows_table(
            [r for r in content["typical_rows"] if r["sample"] == name], "witness"))
    parts.append(image("witness", "witness histograms"))
    parts.append("<p class='note'>The Fisher kernel is not universal: the test detects differences the "
                 "network's families can express.</p>")
    return parts


def _families_table(content: dict, extra: list) -> str:
    """Return the family table of a comparison, with the inline chart of each family's profile."""
    records = _with_profiles(content["families"], content.get("profiles", []),
                             tuple(s["name"] for s in content["samples"]))
    return _table(records, ["variable", "parents", "A vs B", "share", *extra, "p_value", "p_adjusted"],
                  numeric=(*extra, "share", "p_value", "p_adjusted"), significant="p_adjusted", percent=("share",),
                  raw=("A vs B",))


def _drift_parts(content: dict, image) -> list:
    """Return a drift run's evidence: the reference, the timeline, the windows, a drill-down per drifted one."""
    reference, windows = content["reference"], content["windows"]
    split = (f"({reference['fit_rows']} learn the network's structure, {reference['test_rows']} are compared with "
             "each window)" if reference["fit_rows"] != reference["rows"] else
             "(all compared with each window, each window's structure learned on it and the reference pooled)")
    parts = [f"<p class='headline'>{len(windows)} windows against a reference of {reference['rows']} rows "
             f"{split}; p-values adjusted by {html.escape(content['adjustment'])}.</p>",
             "<h2>Timeline</h2>" + image("timeline", "MMD²_u per window and the families that changed"),
             "<h2>Windows</h2><p class='note'><i>mmd2_u</i>: the unbiased MMD², the effect size (0 under no "
             "change at any window size); <i>mmd2</i>: eq. 10, biased (it grows as windows shrink); "
             "<i>unseen cells</i>: labels the reference never showed, marginalized "
             "like missing cells; <i>mechanism</i>: the variable whose conditional distribution changed, that no set "
             "of its neighbours explains; <i>family</i>: the clearest changed conditional distribution of the "
             "kernel's network (its share of the changes found there); <i>permutations</i>: those the p-value "
             "rests on (a test that stops once its decision is settled gives a bound, not an estimate).</p>"
             + _table(windows, ["window", "rows", "missing_cells", "unseen_cells", "mmd2_u", "mmd2_u_low",
                                "mmd2_u_high", "mmd2", "p_value", "permutations", "p_adjusted", "mechanism",
                                "family", "parents", "share"],
                      numeric=("rows", "missing_cells", "unseen_cells", "mmd2_u", "mmd2_u_low", "mmd2_u_high", "mmd2",
                               "p_value", "permutations", "p_adjusted", "share"),
                      significant="p_adjusted", percent=("share",))]
    for label, window in content["flagged"].items():
        top = dict(window, families=window["families"][:5])
        rows = [r for r in window["typical_rows"] if r["sample"] == label]
        parts.append(f"<details open><summary>{html.escape(label)}: {html.escape(window['verdict'])}"
                     "</summary><p class='note'>The chart: the variable's shares in the "
                     "<span style='color:#2f6fb0'>reference</span> and the <span style='color:#e08a2e'>window"
                     "</span> where they differ most.</p>" + _families_table(top, [])
                     + "<p><b>Largest cells</b></p><ul>"
                     + "".join(f"<li>{html.escape(c['text'])}</li>" for c in window["cells"][:5]) + "</ul>"
                     + "<p><b>Rows most typical of the window</b> (row: position in the window; witness "
                     "&lt;Φ(x), μ_reference − μ_window&gt;, most negative first)</p>"
                     + _rows_table(rows, "witness") + "</details>")
    parts.append("<p class='note'>The Fisher kernel is not universal: the tests detect differences the network's "
                 "families can express.</p>")
    return parts


def _summary_parts(content: dict, image) -> list:
    """Return the evidence of a summary: the subset against the data, prototypes, criticisms."""
    parts: list = []
    selection = content["selection"]
    sweeps = "sweep" if selection["sweeps"] == 1 else "sweeps"
    baseline = (f" Random subsets of {selection['k']}: MMD² {selection['random_mmd2_mean']:.4g} ± "
                f"{selection['random_mmd2_sd']:.3g} (mean ± sd of {selection['random_subsets']})."
                if "random_mmd2_mean" in selection else "")
    parts.append(f"<p class='headline'>{selection['k']} representative rows by greedy {selection['criterion']}"
                 f": {selection['initial']:.4g} → {selection['final']:.4g} in {selection['sweeps']} {sweeps}."
                 f"{baseline}</p>")
    if selection.get("incomplete_rows_data"):
        parts.append(f"<p class='note'>Rows with a missing cell: {100 * selection['incomplete_rows_subset']:.1f}% "
                     f"of the subset, {100 * selection['incomplete_rows_data']:.1f}% of the data (shown as "
                     "<i>missing</i>).</p>")
    parts.append("<h2>The subset against the data</h2><p class='note'>Every variable's shares in the subset and "
                 "in the data; the first panel is the objective per sweep beside random subsets.</p>"
                 + image("marginals", "marginals of the subset against the data"))
    parts.append(f"<details><summary>Prototypes ({len(content['prototypes'])} rows)</summary>"
                 + _rows_table(content["prototypes"]) + "</details>")
    if content["criticisms"]:
        parts.append(f"<details><summary>Criticisms ({len(content['criticisms'])} rows): rows the prototypes "
                     "represent worst (MMD-critic); witness &gt; 0 where the data has more mass than the "
                     "prototypes</summary>" + _rows_table(content["criticisms"], "witness") + "</details>")
    parts.append("<h2>The network</h2>" + image("network", "the network"))
    return parts


def write_report(content: dict, figures: dict, *, html_path=None, json_path=None, title: str = "bnfisher report"):
    """Write the HTML page and/or the JSON content (atomically).

    Parameters
    ----------
    content, figures : dict
    html_path, json_path : str or path-like, optional
    title : str

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> result = bf.compare(A, B, network=network, n_permutations=99, random_state=0)
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from bnfisher.viz import comparison_figures, write_report
    >>> write_report(result.to_dict(), comparison_figures(result), html_path=folder / "report.html")
    >>> (folder / "report.html").exists()
    True
    """
    if html_path is not None:
        write_text(html_path, render_html(content, figures, title=title))
    if json_path is not None:
        write_text(json_path, json_text(content))
