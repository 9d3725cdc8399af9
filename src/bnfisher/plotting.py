"""Plots for the command line (matplotlib is an optional extra: ``pip install bnfisher[plot]``)."""

from __future__ import annotations

import math

import pandas as pd

__all__ = ["plot_summary"]


def plot_summary(result, data: pd.DataFrame, subset: pd.DataFrame, path: str) -> None:
    """Objective per sweep, and every variable's marginal in the subset vs the full data.

    Parameters
    ----------
    result : SelectionResult
    data, subset : DataFrame
        The full data and the selected rows.
    path : str
        PNG file to write.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Plotting needs matplotlib: pip install 'bnfisher[plot]'.") from exc
    columns = list(data.columns)
    n_panels = len(columns) + 1
    n_cols = min(4, n_panels)
    n_rows = math.ceil(n_panels / n_cols)
    figure, axes = plt.subplots(n_rows, n_cols, figsize=(4 * n_cols, 3 * n_rows), squeeze=False)
    axes = axes.ravel()
    axes[0].plot(range(len(result.objective)), result.objective, marker="o")
    axes[0].set_xlabel("sweep")
    axes[0].set_ylabel(result.criterion)
    axes[0].set_title(f"greedy {result.criterion}: {result.n_swaps} swaps")
    for ax, column in zip(axes[1:], columns):
        full = data[column].astype(str).value_counts(normalize=True)
        part = subset[column].astype(str).value_counts(normalize=True).reindex(full.index, fill_value=0.0)
        frame = pd.DataFrame({"full data": full, f"subset (k={len(subset)})": part})
        frame.plot.bar(ax=ax, legend=ax is axes[1], rot=45 if len(full) > 3 else 0)
        ax.set_title(str(column))
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes[n_panels:]:
        ax.axis("off")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
