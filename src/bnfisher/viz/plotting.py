"""Plots (matplotlib is an optional extra: ``pip install "bnfisher[plot]"``).

A shell around the core: nothing in the core imports this module.  Figures are
written atomically, like every other output.
"""

from __future__ import annotations

import functools
import io
import math

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.data.binning import BIN_SEPARATOR
from bnfisher.data.io import write_bytes

__all__ = ["plot_summary", "summary_marginals", "figures", "save_figure", "plot_network", "network_layout",
           "plot_family_shares", "plot_witness", "figure_png", "drawn_on"]

#: Most categories drawn per variable; more are shown as the most frequent ones, in state order.
MAX_BARS = 20


class _Figures:
    """What bnfisher draws with: matplotlib figures, and the user's backend left as it is.

    Like ``matplotlib.pyplot`` for the few calls bnfisher makes (``subplots``, ``rcParams``,
    ``rc_context``, ``cm``).  A figure returned to the user (``shown``) is pyplot's, under the
    user's own backend (a notebook's inline display, a window, or Agg where there is no
    display); a figure drawn for a file is matplotlib's alone, never registered with pyplot,
    drawn by the Agg renderer when it is saved.  bnfisher never switches the backend.
    """

    def __init__(self, matplotlib, shown: bool):
        self._matplotlib = matplotlib
        self._shown = shown
        self.rcParams = matplotlib.rcParams
        self.rc_context = matplotlib.rc_context
        self.cm = matplotlib.cm

    def subplots(self, *args, figsize=None, **kwargs):
        """Return a new figure and its axes (as ``matplotlib.pyplot.subplots``)."""
        if self._shown:
            import matplotlib.pyplot as plt

            return plt.subplots(*args, figsize=figsize, **kwargs)
        from matplotlib.figure import Figure

        figure = Figure(figsize=figsize)
        return figure, figure.subplots(*args, **kwargs)


def figures(*, shown: bool = False) -> _Figures:
    """Return what bnfisher draws with (:class:`_Figures`), or an ImportError naming the extra.

    Parameters
    ----------
    shown : bool, default=False
        Whether the figure is returned to the user (pyplot's, under the user's backend)
        rather than written to a file (off-screen, never pyplot's).

    Returns
    -------
    _Figures
    """
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Plotting needs matplotlib: pip install 'bnfisher[plot]'.") from exc
    return _Figures(matplotlib, shown)


def _release(figure) -> None:
    """Close a figure pyplot holds (one made for the user and then written): pyplot would keep it alive."""
    if getattr(figure.canvas, "manager", None) is not None:
        import matplotlib.pyplot as plt

        plt.close(figure)


def plain_text(function):
    """Draw with ``$`` taken as a character, not as the start of mathtext (``US$``, ``$5``, ``50$/h``).

    Matplotlib's text property ``parse_math`` is fixed when a text is made, so the
    figure's texts keep it however the user's matplotlib settings change later; the
    user's settings themselves are left as they were.
    """
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        with figures().rc_context({"text.parse_math": False}):
            return function(*args, **kwargs)

    return wrapped


def drawn_on(ax, figsize: tuple) -> tuple:
    """Return ``(figure, axes)``: the given axes and their figure, or a new figure of ``figsize`` shown to the user.

    Parameters
    ----------
    ax : matplotlib Axes or None
    figsize : tuple of float
        Inches, for a new figure.

    Returns
    -------
    figure : matplotlib.figure.Figure
    axes : matplotlib Axes
    """
    if ax is not None:
        return ax.figure, ax
    return figures(shown=True).subplots(figsize=figsize)


def save_figure(figure, path, *, dpi: int = 100) -> None:
    """Write a figure as PNG atomically.

    Parameters
    ----------
    figure : matplotlib.figure.Figure
    path : str or path-like
    dpi : int, default=100
    """
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    _release(figure)
    write_bytes(path, buffer.getvalue())  # atomically


def summary_marginals(encoded, subset_rows: np.ndarray) -> dict:
    """Return every variable's state frequencies in the full data and in the subset, in state order.

    Parameters
    ----------
    encoded : EncodedData
    subset_rows : ndarray of int

    Returns
    -------
    dict
        ``{variable: DataFrame}`` indexed by state label, columns ``"full data"`` and
        ``"subset (k=...)"`` (shares of all rows); for more than ``MAX_BARS`` states, the most
        frequent ones; missing cells, where there are any, as a last bar ``"(missing)"``.
    """
    out = {}
    for i, v in enumerate(encoded.variables):
        r = len(encoded.states[v])
        column = encoded.codes[:, i]
        chosen = column[subset_rows]
        # Shares of all rows; missing cells (code -1, counted in the last slot) are a bar of their own.
        full = np.bincount(np.where(column < 0, r, column), minlength=r + 1) / max(len(column), 1)
        part = np.bincount(np.where(chosen < 0, r, chosen), minlength=r + 1) / max(len(chosen), 1)
        shown = np.arange(r) if r <= MAX_BARS else np.sort(np.argsort(-full[:r], kind="stable")[:MAX_BARS])
        labels = [encoded.states[v][k] for k in shown]
        if full[r] > 0 or part[r] > 0:
            shown, labels = np.append(shown, r), labels + ["(missing)"]
        out[v] = pd.DataFrame({"full data": full[shown], f"subset (k={len(subset_rows)})": part[shown]},
                              index=labels)
    return out


@plain_text
def _grouped_bars(ax, frame: pd.DataFrame, colours: list) -> None:
    """Draw one group of bars per row of ``frame`` (a bar per column) as one collection: one artist, not one a bar."""
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_rgba_array

    n_groups, n_bars = frame.shape
    width = 0.8 / n_bars
    left = np.arange(n_groups)[None, :] + (np.arange(n_bars)[:, None] - n_bars / 2) * width  # (bar, group)
    height = frame.to_numpy(dtype=float).T
    corners = np.stack([np.stack([left, np.zeros_like(height)], -1), np.stack([left, height], -1),
                        np.stack([left + width, height], -1), np.stack([left + width, np.zeros_like(height)], -1)],
                       axis=2).reshape(-1, 4, 2)
    faces = np.repeat(to_rgba_array([colours[k % len(colours)] for k in range(n_bars)]), n_groups, axis=0)
    ax.add_collection(PolyCollection(list(corners), facecolors=faces, linewidths=0))
    ax.set_xlim(-0.5, n_groups - 0.5)
    ax.set_ylim(0, max(float(np.nanmax(height)) * 1.05, 1e-9) if height.size else 1.0)


def _plot_objective(ax, result, baseline: tuple | None) -> None:
    """Draw the objective per sweep, with the random subsets' mean ± sd when given."""
    from matplotlib.ticker import MaxNLocator

    ax.plot(range(len(result.objective)), result.objective, marker="o", label="greedy subset")
    if baseline is not None:
        mean, sd = baseline
        ax.axhline(mean, color="#999999", linestyle="--", label="random subsets (mean ± sd)")
        ax.axhspan(max(mean - sd, 0.0), mean + sd, color="#dddddd", alpha=0.6)
        ax.legend(fontsize=7, loc="upper right")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("sweep")
    ax.set_ylabel("MMD² (eq. 10)" if result.criterion == "mmd" else result.criterion)
    plural = "swap" if result.n_swaps == 1 else "swaps"
    ax.set_title(f"greedy {result.criterion}: {result.n_swaps} {plural}", fontsize=10)


def plot_summary(result, encoded, subset_rows: np.ndarray, path=None, *, baseline: tuple | None = None):
    """Objective per sweep (with the random baseline), and every variable's marginal in the subset vs the data.

    Bars follow each variable's state order (bins in increasing order); for a
    variable with more than ``MAX_BARS`` states, the most frequent ones are drawn;
    missing cells are a bar of their own; a variable with one state and no missing
    cell gets no panel (it has nothing to show).

    Parameters
    ----------
    result : SelectionResult
    encoded : EncodedData
        The full data (its codes, variables and states go together).
    subset_rows : ndarray of int
        Positions of the selected rows.
    path : str or path-like, optional
        PNG file to write; without it the figure is returned.
    baseline : tuple of (float, float), optional
        Mean and standard deviation of the criterion for random subsets: drawn as a band.

    Returns
    -------
    matplotlib.figure.Figure or None
        The figure, when no ``path`` is given.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> from bnfisher.viz import plot_summary
    >>> selection = bf.select_representatives(kernel, data, 20, n_init=20, random_state=0)
    >>> encoded = network.encode(data)
    >>> figure = plot_summary(selection, encoded, selection.indices)
    >>> figure is not None
    True
    """
    from matplotlib.patches import Patch

    plt = figures(shown=path is None)
    marginals = {v: frame for v, frame in summary_marginals(encoded, subset_rows).items() if len(frame) > 1}
    n_panels = len(marginals) + 1
    n_cols = min(4, n_panels)
    n_rows = math.ceil(n_panels / n_cols)
    figure, axes = plt.subplots(n_rows, n_cols, figsize=(4 * n_cols, 3 * n_rows + 0.4), squeeze=False)
    axes = axes.ravel()
    _plot_objective(axes[0], result, baseline)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (v, frame) in zip(axes[1:], marginals.items()):
        r = len(encoded.states[v])
        _grouped_bars(ax, frame, colours)
        rotate = len(frame) > 3
        ax.set_xticks(np.arange(len(frame)), [_short(label) for label in frame.index], rotation=45 if rotate else 0,
                      ha="right" if rotate else "center", fontsize=7)
        for label in ax.get_xticklabels():  # made now, not when the figure is drawn: a label is text, never math
            label.set_parse_math(False)
        # A title at a fixed height: matplotlib's automatic one measures every tick label's box first.
        ax.set_title(_short(v, 28) + (f" ({MAX_BARS} most frequent of {r})" if r > MAX_BARS else ""), fontsize=9,
                     y=1.0)
    for ax in axes[n_panels:]:
        ax.axis("off")
    if marginals:  # one legend for every bar panel, above them: it covers no bar
        columns = next(iter(marginals.values())).columns
        handles = [Patch(color=colours[k % len(colours)], label=column) for k, column in enumerate(columns)]
        figure.legend(handles=handles, loc="upper center", ncol=2, fontsize=8, frameon=False)
    # Fixed margins (tight_layout measures every label's box, which costs more than the analysis on wide tables).
    height = 3 * n_rows + 0.4
    figure.subplots_adjust(left=0.06, right=0.98, bottom=0.9 / height, top=1 - 0.75 / height, wspace=0.3,
                           hspace=0.95)
    if path is None:
        return figure
    save_figure(figure, path)
    return None


def _short(label, width: int = 14) -> str:
    """Return a tick label that fits: bin labels ``lo~hi`` as compact numbers (12.3k–118k), others cut short."""
    text = str(label)
    low, separator, high = text.partition(BIN_SEPARATOR)
    if separator:
        try:
            text = f"{_compact(float(low))}–{_compact(float(high))}"
        except ValueError:
            pass
    return text if len(text) <= width else text[: width - 1] + "…"


def _compact(value: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def _layers(network) -> dict:
    """Depth of every variable: the length of the longest path from a root."""
    depth: dict = {}
    for v in network.variables:  # topological order: parents first
        depth[v] = 1 + max((depth[p] for p in network.parents[v]), default=-1)
    return depth


def network_layout(network) -> dict:
    """Return ``{variable: (x, y)}``: layers by depth from left to right (roots first), ordered to cross less.

    Each layer is ordered by the barycentre of its neighbours in the previous layer, in a sweep from the
    roots and a sweep back from the leaves (Sugiyama's heuristic), which removes most crossings of the
    single-pass ordering.

    Parameters
    ----------
    network : BayesianNetwork

    Returns
    -------
    dict
    """
    depth = _layers(network)
    by_layer: dict = {}
    for v in network.variables:
        by_layer.setdefault(depth[v], []).append(v)
    levels = sorted(by_layer)
    rank = {v: (k + 0.5) / len(by_layer[level]) for level in levels for k, v in enumerate(by_layer[level])}
    children: dict = {v: [] for v in network.variables}
    for parent, child in network.edges:
        children[parent].append(child)

    def sweep(order, neighbours):
        for level in order:
            members = by_layer[level]
            members.sort(key=lambda v: np.mean([rank[u] for u in neighbours(v)]) if neighbours(v) else rank[v])
            rank.update({v: (k + 0.5) / len(members) for k, v in enumerate(members)})

    sweep(levels[1:], lambda v: list(network.parents[v]))
    sweep(levels[::-1][1:], lambda v: children[v])
    sweep(levels[1:], lambda v: list(network.parents[v]))
    return {v: (float(depth[v]), -rank[v]) for v in network.variables}


@plain_text
def plot_network(network, *, highlight=None, ax=None):
    """Draw the DAG in layers from left to right (no system graphviz needed), optionally shading families.

    Parameters
    ----------
    network : BayesianNetwork
    highlight : mapping, optional
        ``{variable: weight in [0, 1]}``: the node is shaded in proportion (e.g. its
        family's share of the MMD); its label shows the weight as a percentage.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from bnfisher.viz import plot_network
    >>> figure = plot_network(network, highlight={"health": 0.8})
    >>> len(figure.axes)
    1
    """
    plt = figures(shown=True)
    position = network_layout(network)
    depth = int(max((x for x, _ in position.values()), default=0)) + 1
    widest = max((sum(1 for x, _ in position.values() if x == level) for level in range(depth)), default=1)
    if ax is None:  # sized to the drawing: no wasted margins
        figure, ax = plt.subplots(figsize=(min(16, 1.0 + 1.7 * depth), min(10, 0.8 + 0.55 * widest)))
    else:
        figure = ax.figure
    highlight = dict(highlight or {})
    for parent, child in network.edges:
        (x0, y0), (x1, y1) = position[parent], position[child]
        ax.annotate("", xy=(x1 - 0.22, y1), xytext=(x0 + 0.22, y0),
                    arrowprops={"arrowstyle": "-|>", "color": "#888888", "lw": 0.8, "shrinkA": 2, "shrinkB": 2})
    for v, (x, y) in position.items():
        weight = float(highlight.get(v, 0.0))
        face = plt.cm.Reds(0.15 + 0.75 * min(max(weight, 0.0), 1.0)) if v in highlight else "#eef3fb"
        label = _short(v, 16) + (f" {100 * weight:.0f}%" if v in highlight else "")
        ax.text(x, y, label, ha="center", va="center", fontsize=8, color="white" if weight > 0.5 else "black",
                bbox={"boxstyle": "round,pad=0.3", "facecolor": face, "edgecolor": "#4a6fa5", "lw": 0.8})
    ax.set_xlim(-0.5, depth - 0.5)
    ax.set_ylim(-1.0, 0.0)
    ax.axis("off")
    ax.set_title(f"{len(network.variables)} variables, {len(network.edges)} arcs", fontsize=9)
    figure.tight_layout()
    return figure


@plain_text
def plot_family_shares(table: pd.DataFrame, *, top: int = 15, ax=None):
    """Bar chart of each family's excess over chance (its conditional statistic minus its null mean).

    Families found changed (Holm-adjusted p <= 0.05) are red and annotated with
    their share of the changes found; an excess near or below 0 is what chance gives.

    Parameters
    ----------
    table : DataFrame
        From :func:`bnfisher.comparison.explain.mmd_by_family`.
    top : int, default=15
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> result = bf.compare(A, B, network=network, n_permutations=99, random_state=0)
    >>> from bnfisher.viz import plot_family_shares
    >>> figure = plot_family_shares(result.families, top=5)
    >>> len(figure.axes)
    1
    """
    shown = table.head(top).iloc[::-1]
    figure, ax = drawn_on(ax, (7, 0.4 * len(shown) + 1.2))
    labels = [f"{v} | {p}" if p not in ("-", "") else str(v) for v, p in zip(shown["variable"], shown["parents"])]
    significant = (shown["p_adjusted"] <= 0.05).to_numpy()
    colours = np.where(significant, "#c0392b", "#95a5a6")
    excess = shown["excess"].to_numpy(dtype=float)
    widest = max(float(np.abs(excess).max()) if len(excess) else 1.0, 1e-12)
    # A significant family stays visible however small its excess: its bar is at least 1.5% of the axis long.
    lengths = np.where(significant, np.maximum(excess, 0.015 * widest), excess)
    bars = ax.barh([_short(label, 40) for label in labels], lengths, color=colours)
    for bar, share, p, found in zip(bars, 100 * shown["share"].to_numpy(), shown["p_adjusted"], significant):
        text = f" {share:.1f}% (p_adj {p:.2g})" if found else f" p_adj {p:.2g}"
        ax.text(max(bar.get_width(), 0.0), bar.get_y() + bar.get_height() / 2, text, va="center", fontsize=8)
    ax.set_xlim(min(0.0, float(excess.min()) * 1.1) if len(excess) else 0.0, widest * 1.45)
    ax.axvline(0.0, color="#555555", linewidth=0.8)
    ax.set_xlabel("excess over chance (conditional statistic minus its mean under no change)")
    ax.set_title("Which conditionals changed (share of the changes found, Holm-adjusted p)", fontsize=10)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="#c0392b", label="changed: Holm-adjusted p ≤ 0.05"),
                       Patch(color="#95a5a6", label="not significant")], fontsize=8, loc="lower right")
    ax.tick_params(axis="y", labelsize=8)
    figure.tight_layout()
    return figure


@plain_text
def plot_witness(values_x: np.ndarray, values_y: np.ndarray, *, names=("X", "Y"), weights=(None, None), bins=40,
                 ax=None):
    """Histograms of the witness values of the two samples' rows.

    Parameters
    ----------
    values_x, values_y : ndarray
        :func:`bnfisher.comparison.explain.witness` of each sample's rows.
    names : tuple of str
    weights : tuple of (ndarray or None), default=(None, None)
        Rows each value stands for (a sample known by its distinct rows).
    bins : int or ndarray, default=40
        Bins over the values' range, or the bins' edges.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher.viz import plot_witness
    >>> figure = plot_witness(np.array([0.5, 1.0]), np.array([-1.0, 0.2]), names=("A", "B"))
    >>> len(figure.axes)
    1
    """
    figure, ax = drawn_on(ax, (7, 3))
    edges = np.histogram_bin_edges(np.concatenate([values_x, values_y]), bins=bins)
    ax.hist(values_x, bins=edges, weights=weights[0], alpha=0.6, label=_short(names[0], 30), density=True)
    ax.hist(values_y, bins=edges, weights=weights[1], alpha=0.6, label=_short(names[1], 30), density=True)
    ax.set_xlabel("witness <Φ(x), μ_A − μ_B> (right: typical of the first sample)")
    ax.set_ylabel("density of rows")
    ax.legend(fontsize=8)
    figure.tight_layout()
    return figure


def figure_png(figure) -> bytes:
    """Return a figure as PNG bytes.

    Parameters
    ----------
    figure : matplotlib.figure.Figure

    Returns
    -------
    bytes
    """
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    _release(figure)
    return buffer.getvalue()
