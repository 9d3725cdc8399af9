"""Local scores of one family, or of many stacked, from count tables: the formulas every scorer uses.

Kept apart from the scorers so that the compiled kernel's NumPy fallback
(:mod:`bnfisher.bn.scores._family`) scores with the same code without importing the scorers, which import it.
"""

from __future__ import annotations

import math

import numpy as np

from bnfisher._utils.lazy import special
from bnfisher._utils.validation import check_option

__all__ = ["SCORES", "local_score"]

SCORES = ("ll", "bic", "aic", "bdeu", "k2")


def local_score(counts: np.ndarray, score: str = "bic", *, n_rows: int | None = None, ess: float = 1.0,
                n_configurations: int | None = None) -> float:
    """Local score of one family from its count table.

    Parameters
    ----------
    counts : ndarray of shape (..., r)
        Family counts, the child's states on the last axis; every other cell is a
        parent configuration (unobserved configurations may be left out when
        ``n_configurations`` is given).
    score : {"ll", "bic", "aic", "bdeu", "k2"}, default="bic"
    n_rows : int, optional
        Number of rows ``N`` (default: the sum of ``counts``).
    ess : float, default=1.0
        Equivalent sample size of BDeu.
    n_configurations : int, optional
        ``q``, the number of parent configurations (default: the product of the
        leading axes of ``counts``).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(local_score(np.array([3, 1]), "ll"), 4)  # 3 log(3/4) + log(1/4)
    -2.2493
    """
    check_option(score, "score", SCORES)
    counts = np.asarray(counts, dtype=np.float64)
    r = counts.shape[-1]
    table = counts.reshape(-1, r)
    q = table.shape[0] if n_configurations is None else int(n_configurations)
    n = float(table.sum()) if n_rows is None else float(n_rows)
    return float(_segment_scores(table, np.array([0]), np.array([q]), score, n, ess)[0])


def _xlogx(values: np.ndarray) -> np.ndarray:
    """``x log x`` elementwise, 0 where ``x`` is 0."""
    return values * np.log(values, out=np.zeros_like(values), where=values > 0)


def _segment_scores(table: np.ndarray, starts: np.ndarray, n_configurations: np.ndarray, score: str,
                    n_rows: float, ess: float) -> np.ndarray:
    """Local scores of several families stacked in one ``(rows, r)`` count table.

    Family ``f`` owns the rows ``starts[f]:starts[f + 1]`` (its parent
    configurations, unobserved ones optional) and has ``n_configurations[f]``
    configurations in all.  Everything is whole-array arithmetic: one call scores a
    whole column of hill-climbing candidates.
    """
    r = table.shape[1]
    table = table.astype(np.float64, copy=False)
    row_totals = table.sum(axis=1)
    q = n_configurations.astype(np.float64)
    if score in ("ll", "bic", "aic"):
        # sum_jk N_jk log(N_jk / N_j) = sum_jk N_jk log N_jk - sum_j N_j log N_j; 0 log 0 = 0.  NumPy's log, so
        # that these scores need no SciPy (0.3 s to import, which a small job's first run would pay).
        per_row = _xlogx(table).sum(axis=1) - _xlogx(row_totals)
        log_likelihood = np.add.reduceat(per_row, starts) if per_row.size else np.zeros(starts.size)
        free = q * (r - 1)
        if score == "ll":
            return log_likelihood
        if score == "aic":
            return log_likelihood - free
        return log_likelihood - 0.5 * math.log(n_rows) * free if n_rows > 0 else log_likelihood
    sizes = np.diff(np.append(starts, table.shape[0]))
    alpha = np.ones_like(q) if score == "k2" else ess / (q * r)
    alpha_rows = np.repeat(alpha, sizes)[:, None]
    # Unobserved configurations contribute exactly 0 to both sums.
    per_row = (special.gammaln(r * alpha_rows[:, 0]) - special.gammaln(r * alpha_rows[:, 0] + row_totals)
               + (special.gammaln(alpha_rows + table) - special.gammaln(alpha_rows)).sum(axis=1))
    return np.add.reduceat(per_row, starts) if per_row.size else np.zeros(starts.size)
