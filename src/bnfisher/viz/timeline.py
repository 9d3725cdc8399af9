"""The drift timeline: MMD² per window with the drifted windows marked, and the changed families' shares under it."""

from __future__ import annotations

import numpy as np

from bnfisher.viz.plotting import _short, figures, plain_text

__all__ = ["plot_drift"]

_COLOURS = ("#4a6fa5", "#e08a2e", "#3c9a5f", "#b5485d", "#8468b0", "#8c6d46", "#c2a01e")


@plain_text
def plot_drift(result, *, ax=None):
    """Draw a :class:`~bnfisher.jobs.DriftResult`: the timeline of MMD² and the families that changed per window.

    Top: the MMD² (eq. 10) of each window against the reference; windows that drifted
    (Holm-adjusted p at most alpha) are red with their adjusted p-value.  Bottom: in each
    drifted window, the share of each changed family (Holm-adjusted family p at most alpha)
    in the changes found there; windows without drift have no bar.

    Parameters
    ----------
    result : DriftResult
    ax : pair of matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = figures(shown=True)
    table = result.windows
    n = len(table)
    if ax is None:
        figure, (top, bottom) = plt.subplots(2, 1, figsize=(max(6.5, min(14.0, 0.45 * n + 3)), 5.6), sharex=True,
                                             gridspec_kw={"height_ratios": [3, 2]})
    else:
        top, bottom = ax
        figure = top.figure
    x = np.arange(n)
    drifted = table["drift"].to_numpy(dtype=bool)
    top.fill_between(x, table["mmd2_u_low"], table["mmd2_u_high"], color="#4a6fa5", alpha=0.15, linewidth=0,
                     zorder=0, label="95% confidence interval")
    top.plot(x, table["mmd2_u"], color="#4a6fa5", linewidth=1.2, zorder=1)
    top.scatter(x[~drifted], table["mmd2_u"].to_numpy()[~drifted], color="#4a6fa5", s=22, zorder=2,
                label="no significant drift")
    top.scatter(x[drifted], table["mmd2_u"].to_numpy()[drifted], color="#c0392b", s=46, marker="D", zorder=3,
                label=f"drift: adjusted p ≤ {result.alpha:g}")
    for k in np.flatnonzero(drifted):
        top.annotate(f"p_adj {table['p_adjusted'].iloc[k]:.2g}", (x[k], table["mmd2_u"].iloc[k]),
                     textcoords="offset points", xytext=(0, 7), ha="center", fontsize=7, color="#c0392b")
    top.set_ylabel("MMD²_u against the reference\n(unbiased: comparable across window sizes)")
    low = float(np.nanmin(table["mmd2_u_low"])) if n and table["mmd2_u_low"].notna().any() else 0.0
    high = float(np.nanmax(table["mmd2_u_high"])) if n and table["mmd2_u_high"].notna().any() else 1.0
    top.set_ylim(min(0.0, low * 1.25), max(high * 1.25, 1e-12))
    top.axhline(0.0, color="#999999", linewidth=0.6, zorder=0)
    if result.min_effect is not None:
        top.axhline(result.min_effect, color="#c0392b", linewidth=0.8, linestyle="--", zorder=0,
                    label=f"min_effect {result.min_effect:g}")
    top.legend(fontsize=8, loc="upper left", frameon=False)
    top.set_title("Drift per window (Holm over windows)", fontsize=10)

    shares = _family_shares(result)
    families = sorted(shares, key=lambda f: -sum(shares[f]))
    shown, rest = families[:len(_COLOURS) - 1], families[len(_COLOURS) - 1:]
    bottom_edge = np.zeros(n)
    for colour, family in zip(_COLOURS, shown):
        values = np.asarray(shares[family])
        bottom.bar(x, values, bottom=bottom_edge, color=colour, label=_short(family, 34), width=0.7)
        bottom_edge += values
    if rest:
        values = np.sum([shares[f] for f in rest], axis=0)
        others = f"{len(rest)} other famil{'y' if len(rest) == 1 else 'ies'}"
        bottom.bar(x, values, bottom=bottom_edge, color="#bbbbbb", label=others, width=0.7)
    bottom.set_ylim(0, 1.0)
    bottom.set_ylabel("share of the changes")
    if families:
        bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    else:
        bottom.text(0.5, 0.5, "no family changed significantly in any window", ha="center", va="center",
                    transform=bottom.transAxes, fontsize=9, color="#5b6775")
    step = max(1, int(np.ceil(n / 26)))
    bottom.set_xticks(x[::step])
    bottom.set_xticklabels([_short(str(label), 16) for label in table["window"].iloc[::step]], rotation=60,
                           ha="right", fontsize=7)
    bottom.set_xlabel("window")
    figure.tight_layout()
    return figure


def _family_shares(result) -> dict:
    """Return ``{family label: share per window}`` over the drifted windows' changed families."""
    shares: dict = {}
    n = len(result.windows)
    for k, (drifted, comparison) in enumerate(zip(result.windows["drift"], result.comparisons)):
        if not drifted:
            continue
        families = comparison.families
        changed = families[(families["p_adjusted"] <= result.alpha) & (families["share"] > 0)]
        for _, row in changed.iterrows():
            label = str(row["variable"]) + (f" | {row['parents']}" if row["parents"] not in ("", "-") else "")
            shares.setdefault(label, np.zeros(n))[k] = float(row["share"])
    return shares
