"""Plots (matplotlib is an optional extra: ``pip install "bnfisher[plot]"``).

A shell around the core: nothing in the core imports this module.  Figures are
written atomically, like every other output.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

__all__ = ["plot_summary", "summary_marginals", "pyplot", "save_figure"]

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
        ``"subset (k=...)"``; for more than ``MAX_BARS`` states, the most frequent ones.
    """
    out = {}
    for i, v in enumerate(encoded.variables):
        r = len(encoded.states[v])
        column = encoded.codes[:, i]
        chosen = column[subset_rows]
        # Among the observed values (missing cells, code -1, are left out of both).
        full = np.bincount(column[column >= 0], minlength=r) / max(int((column >= 0).sum()), 1)
        part = np.bincount(chosen[chosen >= 0], minlength=r) / max(int((chosen >= 0).sum()), 1)
        shown = np.arange(r) if r <= MAX_BARS else np.sort(np.argsort(-full, kind="stable")[:MAX_BARS])
        out[v] = pd.DataFrame({"full data": full[shown], f"subset (k={len(subset_rows)})": part[shown]},
                              index=[encoded.states[v][k] for k in shown])
    return out


def plot_summary(result, encoded, subset_rows: np.ndarray, path) -> None:
    """Objective per sweep, and every variable's marginal in the subset vs the full data.

    Bars follow each variable's state order (bins in increasing order); for a
    variable with more than ``MAX_BARS`` states, the most frequent ones are drawn.

    Parameters
    ----------
    result : SelectionResult
    encoded : EncodedData
        The full data (its codes, variables and states go together).
    subset_rows : ndarray of int
        Positions of the selected rows.
    path : str or path-like
        PNG file to write.
    """
    plt = pyplot()
    marginals = summary_marginals(encoded, subset_rows)
    n_panels = len(marginals) + 1
    n_cols = min(4, n_panels)
    n_rows = math.ceil(n_panels / n_cols)
    figure, axes = plt.subplots(n_rows, n_cols, figsize=(4 * n_cols, 3 * n_rows), squeeze=False)
    axes = axes.ravel()
    axes[0].plot(range(len(result.objective)), result.objective, marker="o")
    axes[0].set_xlabel("sweep")
    axes[0].set_ylabel("MMD² (eq. 10)" if result.criterion == "mmd" else result.criterion)
    axes[0].set_title(f"greedy {result.criterion}: {result.n_swaps} swaps")
    for ax, (v, frame) in zip(axes[1:], marginals.items()):
        r = len(encoded.states[v])
        frame = frame.set_axis([_short(label) for label in frame.index], axis=0)
        frame.plot.bar(ax=ax, legend=ax is axes[1], rot=45 if len(frame) > 3 else 0)
        ax.set_title(str(v) + (f" ({MAX_BARS} most frequent of {r})" if r > MAX_BARS else ""), fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes[n_panels:]:
        ax.axis("off")
    figure.tight_layout()
    save_figure(figure, path)


def _short(label, width: int = 14) -> str:
    text = str(label)
    return text if len(text) <= width else text[: width - 1] + "…"
