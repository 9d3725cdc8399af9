r"""One two-sample test with power on every kind of shift: the Fisher MMD, its largest block and per-column tests.

The Fisher-kernel MMD (eq. 10) adds up all families, and under the null each adds
noise in proportion to its number of parameters: a change confined to one
column's marginal, or to one family, can drown in the noise of the others.
Per-column tests see a marginal change at once but are blind to a change of
dependence that keeps every marginal.  The aggregate test computes, on the
*same* permutations,

* ``fisher``: the Fisher MMD² as a whole (the paper's statistic; strongest when
  many families change a little);
* ``blocks``: the largest standardised block, over the network's families (each
  family's part of the Fisher MMD², eq. 10) and the columns (each column's
  Pearson statistic for its marginal): ``max_b (T_b - mean_b) / sd_b``, with the
  mean and standard deviation of each block over all ``B + 1`` splits (the
  observed one and the permutations), so that no block leads by its size;
* ``columns``: the smallest per-column chi-square tail probability of Pearson's
  statistic (a continuous score; its own calibration does not matter);

gives each its p-value as its rank among the ``B + 1`` splits, and rejects on the
smallest weighted p-value ``min_k p_k / w_k`` (weights :data:`WEIGHTS`: 0.2 for
``fisher``, 0.4 for each of the others), calibrated in turn by its rank among
the splits' own smallest weighted p-values.  Under the null (both samples from
one distribution) the splits are exchangeable and every quantity is a symmetric
function of them computed alike for each, so ``P(p <= alpha) <= alpha`` for
every ``B``: the weighted min-p combination of Westfall & Young, used by MMDAgg
[3]_ across bandwidths.  The weights were chosen in ``benchmarks/power.py``:
equal weights cost marginal shifts power, no ``fisher`` component costs diffuse
shifts power (see ``docs/statistics.md``).

References
----------
.. [1] Leppä-aho, Silander & Roos (2020). Bayesian network Fisher kernel for
   categorical feature spaces. Behaviormetrika 47, 81-103 (eq. 10).
.. [2] Westfall & Young (1993). Resampling-based multiple testing. Wiley.
.. [3] Schrab, Kim, Albert, Laurent, Guedj & Gretton (2023). MMD aggregated
   two-sample test. Journal of Machine Learning Research 24(194).
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.tails import chi2_logsf

__all__ = ["COMPONENTS", "TIE_TOLERANCE", "WEIGHTS", "aggregate_pvalues", "split_scores"]

#: Two statistics within this relative distance are equal (a tie), in every permutation p-value bnfisher computes
#: and in each of the aggregate's components: rounding must not make a split more or less extreme (as SciPy's
#: ``permutation_test`` does, with its own tolerance).
TIE_TOLERANCE = 1e-9

#: The components of the aggregate test, with what each is sensitive to.
COMPONENTS = {
    "fisher": "Fisher-kernel MMD² as a whole (the paper's test): many small changes across the families",
    "blocks": "largest standardised block (a family's part of the Fisher MMD², or a column's marginal): "
              "a change in one family or one column, dependence included",
    "columns": "smallest per-column Pearson chi-square tail: one column's marginal distribution",
}

#: The weight of each component in the weighted min-p combination (they sum to 1).
WEIGHTS = {"fisher": 0.2, "blocks": 0.4, "columns": 0.4}


def _rank_pvalues(values: np.ndarray) -> np.ndarray:
    """p-value of every row among all rows of its column: ``#{b': v_b' >= v_b} / n`` (rounding ties count)."""
    n = values.shape[0]
    ordered = np.sort(values, axis=0)
    threshold = values - (TIE_TOLERANCE * np.abs(values) + 1e-300)
    below = np.stack([np.searchsorted(ordered[:, k], threshold[:, k], side="left") for k in range(values.shape[1])],
                     axis=1)
    return (n - below) / n


def _column_tails(x: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Log Pearson tails ``log P(chi2_df > x)`` (0 for a column of no degree of freedom), never below ``-1e300``.

    Log tail probabilities: no underflow to 0 (and so no ties) for very different splits.
    """
    return np.where(df > 0, np.maximum(chi2_logsf(x, np.maximum(df, 1)), -1e300), 0.0)


def _smallest_by_df(columns: np.ndarray, df: np.ndarray, tail) -> np.ndarray:
    """Return every split's smallest ``tail(x, df)`` over the columns of ``df > 0`` (``inf`` when there are none).

    A tail falls as its statistic grows, so among the columns of one number of degrees of freedom the
    smallest tail is the largest statistic's: one tail per split and distinct ``df`` (andes' 223 binary
    columns: one instead of 223), not one per split and column.
    """
    smallest = np.full(columns.shape[0], np.inf)
    for value in np.unique(df[df > 0]):
        smallest = np.minimum(smallest, tail(columns[:, df == value].max(axis=1), value))
    return smallest


def _smallest_tails(columns: np.ndarray, df: np.ndarray) -> tuple:
    """Return the observed split's tail per column, and every split's smallest tail over the columns."""
    n = columns.shape[0]
    if not columns.shape[1]:
        return np.zeros(1), np.zeros(n)
    observed = _column_tails(columns[0], df)
    smallest = _smallest_by_df(columns, df, lambda x, value: _column_tails(x, np.full(x.shape, value)))
    if np.any(df <= 0):
        smallest = np.minimum(smallest, 0.0)
    smallest[0] = observed.min()  # the observed split's, column by column
    return observed, smallest


def aggregate_pvalues(outcome) -> tuple[float, pd.DataFrame]:
    """Return the aggregate test's p-value and its components, from permutation statistics computed once.

    Parameters
    ----------
    outcome : PermutationStatistics
        From :func:`bnfisher.comparison.permutation_statistics`.

    Returns
    -------
    p_value : float
        The exact p-value of the aggregate (min-p) test.
    components : DataFrame
        Indexed by component (``fisher``, ``blocks``, ``columns``): ``statistic``,
        ``p_value`` (each alone, by the usual permutation rule), ``weight`` (in
        the combination), ``detects``, ``column`` (for ``blocks``,
        the variable whose family or column is the largest block, with ``block``
        saying which; for ``columns``, the column with the smallest tail; as
        indices in the network's variables).

    Examples
    --------
    >>> from bnfisher.comparison.permutation import permutation_statistics
    >>> data = load("nursery")
    >>> kernel = bf.FisherKernel(bf.learn(data))
    >>> outcome = permutation_statistics(kernel, data.iloc[::2], data.iloc[1::2], n_permutations=99, random_state=0)
    >>> p, parts = aggregate_pvalues(outcome)
    >>> 0 < p <= 1 and list(parts.index) == ["fisher", "blocks", "columns"]
    True
    """
    fisher = np.concatenate([[outcome.observed.sum()], outcome.null.sum(axis=1)])
    families = np.vstack([outcome.observed[None, :], outcome.null])
    columns = np.vstack([outcome.columns_observed[None, :], outcome.columns_null])
    n = fisher.size
    # Standardised blocks: mean and spread over all B + 1 splits (a symmetric function of them: exactness kept).
    blocks = np.hstack([families, columns])
    spread = blocks.std(axis=0)
    # A block that every split gives alike, up to rounding, is constant: its noise must not be standardised into a
    # statistic (the one tie tolerance of permutation_pvalue, relative to the block's size).
    varies = spread > TIE_TOLERANCE * np.maximum(np.abs(blocks).max(axis=0, initial=0.0), 1e-300)
    standardised = np.where(varies, (blocks - blocks.mean(axis=0)) / np.where(varies, spread, 1.0), 0.0)
    largest = standardised.max(axis=1) if blocks.shape[1] else np.zeros(n)
    per_column, smallest = _smallest_tails(columns, np.asarray(outcome.scale.column_df))
    component_p = _rank_pvalues(np.column_stack([fisher, largest, -smallest]))
    weights = np.array([WEIGHTS[name] for name in COMPONENTS])
    combined = (component_p / weights).min(axis=1)
    p_value = float(np.mean(combined <= combined[0] * (1 + TIE_TOLERANCE)))
    names = list(COMPONENTS)
    block = int(np.argmax(standardised[0])) if blocks.shape[1] else 0
    block_variable = outcome.families[block % len(outcome.families)] if blocks.shape[1] else None
    lead = int(np.argmin(per_column)) if columns.shape[1] else 0
    table = pd.DataFrame({"statistic": [float(fisher[0]), float(largest[0]), float(np.exp(smallest[0]))],
                          "p_value": component_p[0], "weight": [WEIGHTS[name] for name in names],
                          "detects": [COMPONENTS[c] for c in names]}, index=names)
    table["column"] = pd.Series([None, block_variable, outcome.families[lead] if columns.shape[1] else None],
                                index=names, dtype=object)
    table["block"] = pd.Series([None, "family" if block < len(outcome.families) else "column", None], index=names,
                               dtype=object)
    return p_value, table


def split_scores(outcome, method: str) -> np.ndarray:
    r"""Return every split's score, the observed split first, each computed from that split alone.

    A sequential test compares the observed split with each permutation as it is drawn, so
    its statistic must not depend on the other permutations (the aggregate's ranks and
    standardisation, :func:`aggregate_pvalues`, do).  For ``"mmd"`` the score is eq. 10.
    For ``"aggregate"`` it is the same weighted min-p combination of the same three
    components, with each component's p-value a chi-square tail fixed before any
    permutation (:class:`~bnfisher.comparison.permutation.NullScale`):

    * ``fisher``: the whole MMD²'s tail under a scaled chi-square ``g chi2_h`` with the mean and
      variance of the MMD² over all splits (Satterthwaite's match; the families' variances add up);
    * ``blocks``: the smallest of every family's tail (its part of eq. 10, matched alike) and every
      column's Pearson tail, times their number (Bonferroni);
    * ``columns``: the smallest column's Pearson tail, times the number of columns;

    and the score is :math:`-\log \min_k p_k / w_k` (weights :data:`WEIGHTS`).  The chi-square
    laws only order the splits: the test's level comes from the permutations, whatever their
    accuracy.

    Parameters
    ----------
    outcome : PermutationStatistics
    method : {"mmd", "aggregate"}

    Returns
    -------
    ndarray of shape (1 + B,)
        Larger means more extreme.

    Examples
    --------
    >>> from bnfisher.comparison.permutation import permutation_statistics
    >>> data = load("nursery")
    >>> kernel = bf.FisherKernel(bf.learn(data))
    >>> outcome = permutation_statistics(kernel, data.iloc[::2], data.iloc[1::2], n_permutations=9, random_state=0)
    >>> split_scores(outcome, "aggregate").shape
    (10,)
    """
    families = np.vstack([outcome.observed[None, :], outcome.null])
    if method == "mmd":
        return families.sum(axis=1)
    scale = outcome.scale
    columns = np.vstack([outcome.columns_observed[None, :], outcome.columns_null])
    seen = (scale.family_mean > 0) & (scale.family_variance > 0)
    family_tail = np.where(seen, _scaled_chi2_logsf(families, scale.family_mean, scale.family_variance), 0.0)
    # The smallest column tail of each split (columns without a degree of freedom count as 0, the minimum's start).
    column_min = np.minimum(_smallest_by_df(columns, np.asarray(scale.column_df), _chi2_logsf), 0.0)
    # The families' scores are uncorrelated under the network (its Fisher information is block-diagonal over the
    # families), so the whole MMD²'s variance is about the sum of theirs.
    whole = _scaled_chi2_logsf(families[:, seen].sum(axis=1), scale.family_mean[seen].sum(),
                               scale.family_variance[seen].sum()) if seen.any() else np.zeros(len(families))
    n_blocks = max(int(seen.sum() + np.sum(scale.column_df > 0)), 1)
    n_columns = max(int(np.sum(scale.column_df > 0)), 1)
    blocks = np.minimum(np.minimum(family_tail.min(axis=1, initial=0.0), column_min) + np.log(n_blocks), 0.0)
    single = np.minimum(column_min + np.log(n_columns), 0.0)
    combined = np.column_stack([whole, blocks, single]) - np.log([WEIGHTS[name] for name in COMPONENTS])
    return -np.maximum(combined.min(axis=1), -1e300)


def _scaled_chi2_logsf(values, mean, variance) -> np.ndarray:
    """``log P(g chi2_h > values)`` with ``g h = mean`` and ``2 g^2 h = variance`` (Satterthwaite's match)."""
    scale = variance / (2 * mean)
    return _chi2_logsf(values / scale, 2 * mean**2 / variance)


def _chi2_logsf(x, df) -> np.ndarray:
    """``log P(chi2_df > x)`` from SciPy's special functions (a tenth of ``scipy.stats``' cost a call).

    Where the tail underflows, its leading term ``(k - 1) log(x/2) - x/2 - log Gamma(k)`` (``k = df / 2``):
    only the splits' order matters here.
    """
    from scipy import special  # imported here: scipy.special takes time to import

    x, half = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(df, dtype=np.float64) / 2)
    tail = special.gammaincc(half, np.maximum(x, 0.0) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        far = (half - 1) * np.log(np.maximum(x, 1e-300) / 2) - x / 2 - special.gammaln(half)
        return np.where(tail > 1e-250, np.log(np.maximum(tail, 1e-300)), np.minimum(far, np.log(1e-250)))
