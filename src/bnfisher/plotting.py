"""Plots (matplotlib is an optional extra: ``pip install "bnfisher[plot]"``).

A shell around the core: nothing in the core imports this module.  Figures are
written atomically, like every other output.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

__all__ = ["plot_summary", "pyplot", "save_figure"]

#: Most categories drawn per variable; more are shown as the most frequent ones, in state order.
MAX_BARS = 20


def pyplot():
    """``matplotlib.pyplot`` with the non-interactive Agg backend, or an ImportError naming the extra.

    Returns
    -------
    module
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Plotting needs matplotlib: pip install 'bnfisher[plot]'.") from exc
    return plt


def save_figure(figure, path, *, dpi: int = 100) -> None:
    """Write a figure as PNG atomically, and close it.

    Parameters
    ----------
    figure : matplotlib.figure.Figure
    path : str or path-like
    dpi : int, default=100
    """
    from .io import write_bytes

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    pyplot().close(figure)
    write_bytes(path, buffer.getvalue())


def plot_summary(result, codes: np.ndarray, subset_rows: np.ndarray, schema, path) -> None:
    """Objective per sweep, and every variable's marginal in the subset vs the full data.

    Bars follow each variable's state order (bins in increasing order); for a
    variable with more than ``MAX_BARS`` states, the most frequent ones are drawn.

    Parameters
    ----------
    result : SelectionResult
    codes : ndarray of shape (n_rows, n_variables)
        The full data, encoded with ``schema``.
    subset_rows : ndarray of int
        Positions of the selected rows.
    schema : Schema
    path : str or path-like
        PNG file to write.
    """
    plt = pyplot()
    variables = list(schema.variables)
    n_panels = len(variables) + 1
    n_cols = min(4, n_panels)
    n_rows = math.ceil(n_panels / n_cols)
    figure, axes = plt.subplots(n_rows, n_cols, figsize=(4 * n_cols, 3 * n_rows), squeeze=False)
    axes = axes.ravel()
    axes[0].plot(range(len(result.objective)), result.objective, marker="o")
    axes[0].set_xlabel("sweep")
    axes[0].set_ylabel(result.criterion)
    axes[0].set_title(f"greedy {result.criterion}: {result.n_swaps} swaps")
    for i, (ax, v) in enumerate(zip(axes[1:], variables)):
        r = len(schema.states[v])
        full = np.bincount(codes[:, i], minlength=r) / max(codes.shape[0], 1)
        part = np.bincount(codes[subset_rows, i], minlength=r) / max(len(subset_rows), 1)
        shown = np.arange(r)
        if r > MAX_BARS:
            shown = np.sort(np.argsort(-full, kind="stable")[:MAX_BARS])
        labels = [_short(schema.states[v][k]) for k in shown]
        frame = pd.DataFrame({"full data": full[shown], f"subset (k={len(subset_rows)})": part[shown]}, index=labels)
        frame.plot.bar(ax=ax, legend=ax is axes[1], rot=45 if len(shown) > 3 else 0)
        ax.set_title(str(v) + (f" ({MAX_BARS} most frequent of {r})" if r > MAX_BARS else ""), fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes[n_panels:]:
        ax.axis("off")
    figure.tight_layout()
    save_figure(figure, path)


def _short(label, width: int = 14) -> str:
    text = str(label)
    return text if len(text) <= width else text[: width - 1] + "…"
