"""A comparison's figure: the mechanisms that changed, the family chart and the witness histograms.

A shell over :class:`bnfisher.jobs.ComparisonResult`; the core never imports it.
"""

from __future__ import annotations

import numpy as np

from bnfisher.viz.plotting import _short, drawn_on, figures, plain_text, plot_family_shares, plot_witness, save_figure

__all__ = ["plot_comparison", "plot_mechanisms"]

#: Variables in a comparison figure's mechanism chart (changed first, then the nearest to changing).
MECHANISMS_SHOWN = 8


@plain_text
def plot_mechanisms(table, *, top: int = 10, alpha: float = 0.05, ax=None):
    """Bars of ``-log10`` of each variable's Holm-adjusted p-value: red where its mechanism changed.

    A variable's mechanism changed when no set of its neighbours explains its difference
    between the samples (:func:`bnfisher.comparison.mechanism_tests`); its bar is labelled
    with the set that came closest.  The dashed line is ``alpha``: a bar past it is a
    changed mechanism.

    Parameters
    ----------
    table : DataFrame
        :attr:`~bnfisher.jobs.ComparisonResult.mechanisms` (columns ``variable``,
        ``changed``, ``p_adjusted``, ``best_set``), in its order (changed first).
    top : int, default=10
        Variables shown.
    alpha : float, default=0.05
        The level, drawn dashed.
    ax : matplotlib Axes, optional
        Drawn on these axes; default a new figure.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import pandas as pd
    >>> from bnfisher.viz import plot_mechanisms
    >>> table = pd.DataFrame({"variable": ["a", "b"], "changed": [True, False], "p_adjusted": [0.001, 0.6],
    ...                       "best_set": ["b", "-"]})
    >>> figure = plot_mechanisms(table)
    >>> [round(float(bar.get_width()), 2) for bar in figure.axes[0].patches]  # -log10 p, bottom-up: b, then a
    [0.22, 3.0]
    """
    shown = table.head(top).iloc[::-1]
    figure, ax = drawn_on(ax, (7, 0.4 * len(shown) + 1.2))
    p = np.clip(shown["p_adjusted"].to_numpy(dtype=float), 1e-300, 1.0)
    heights = -np.log10(p)
    changed = shown["changed"].to_numpy(dtype=bool)
    labels = [v if s in ("-", "") else f"{v} (given {s})" for v, s in zip(shown["variable"], shown["best_set"])]
    bars = ax.barh([_short(label, 32) for label in labels], heights,
                   color=np.where(changed, "#c0392b", "#95a5a6"))
    for bar, value in zip(bars, p):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" p_adj {value:.2g}", va="center", fontsize=8)
    ax.axvline(-np.log10(alpha), color="#555555", linestyle="--", linewidth=0.8)
    ax.set_xlim(0.0, max(float(heights.max()) if len(heights) else 0.0, -np.log10(alpha)) * 1.35)
    ax.set_xlabel(f"-log10 Holm-adjusted p (dashed: {alpha:g}); given: the set that came closest")
    ax.set_title("Which mechanisms changed (no set of neighbours explains the difference)", fontsize=10)
    ax.tick_params(axis="y", labelsize=8)
    figure.tight_layout()
    return figure


@plain_text
def plot_comparison(result, path=None):
    """Draw what changed: the mechanism chart (when a mechanism changed), the family chart, the witness histograms.

    The mechanism chart answers "what changed" (the verdict's); the family chart shows
    each conditional of the kernel's network, where a changed mechanism also shifts the
    families it feeds; the histograms show how the rows separate.

    Parameters
    ----------
    result : ComparisonResult
    path : str or path-like, optional
        A PNG file to write; without it the figure is returned.

    Returns
    -------
    matplotlib.figure.Figure or None

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> result = bf.compare(A, B, network=network, n_permutations=99, random_state=0)
    >>> from bnfisher.viz import plot_comparison
    >>> figure = plot_comparison(result)  # no change: no mechanism chart
    >>> len(figure.axes)
    2
    """
    plt = figures(shown=path is None)
    mechanisms = result.mechanisms
    searched = min(len(mechanisms), MECHANISMS_SHOWN) if bool(mechanisms["changed"].any()) else 0
    shown = min(len(result.families), result.top)
    heights = ([0.4 * searched + 1.2] if searched else []) + [0.4 * shown + 1.2, 3]
    figure, axes = plt.subplots(len(heights), 1, figsize=(7.5, sum(heights) + 0.4),
                                gridspec_kw={"height_ratios": heights})
    if searched:
        plot_mechanisms(mechanisms, top=searched, alpha=float(mechanisms.attrs.get("alpha", 0.05)), ax=axes[0])
    plot_family_shares(result.families, top=result.top, ax=axes[-2])
    values_x, values_y, weights, bins = result.witness_bars()
    plot_witness(values_x, values_y, names=result.names, weights=weights, bins=bins, ax=axes[-1])
    figure.tight_layout()
    if path is None:
        return figure
    save_figure(figure, path)
    return None
