"""Random-subset baselines: what a subset of the same size scores by chance."""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher._utils.progress import progress_bar
from bnfisher._utils.validation import check_positive_int, check_random_state
from bnfisher.exceptions import DataError, OptionError, OptionTypeError
from bnfisher.kernels.base import FamilyKernel
from bnfisher.summary.criteria import MMDCriterion

__all__ = ['random_baseline', 'random_mmd_baseline', 'random_subsets']


def random_subsets(n_rows: int, k: int, count: int, *, random_state=None) -> np.ndarray:
    """``count`` uniform k-subsets of ``range(n_rows)`` (each without replacement), one per row.

    Parameters
    ----------
    n_rows, k, count : int
    random_state : None, int or Generator

    Returns
    -------
    ndarray of shape (count, k)

    Examples
    --------
    >>> from bnfisher.summary import random_subsets
    >>> random_subsets(100, 5, 3, random_state=0).shape
    (3, 5)
    """
    rng = check_random_state(random_state)
    if count == 0:
        return np.empty((0, k), dtype=np.intp)
    # The subsets, and the rows x subsets cell tables their evaluation builds in blocks: refuse before drawing.
    check_allocation(8.0 * count * k, f"{count} random subsets of {k} rows",
                     "use fewer random subsets (`n_init`, `n`; 1,000 are plenty for a start or a baseline).")
    return np.stack([rng.choice(n_rows, size=k, replace=False) for _ in range(count)])


def _evaluate_with_progress(evaluator, subsets: np.ndarray, progress: bool) -> np.ndarray:
    if not progress:
        return evaluator.evaluate_many(subsets)

    values = []
    with progress_bar(total=len(subsets), desc=f"random starts ({evaluator.name})", unit="subset", leave=False) as bar:
        for start in range(0, len(subsets), 100):
            values.append(evaluator.evaluate_many(subsets[start : start + 100]))
            bar.update(len(values[-1]))
    return np.concatenate(values)


def random_baseline(evaluate: Callable, n_rows: int, k: int, *, n: int = 1000, random_state=None):
    """Mean and standard deviation of ``evaluate(indices)`` over ``n`` random k-subsets.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(sorted row positions) -> float``.
    n_rows, k, n : int
    random_state : None, int or Generator

    Returns
    -------
    mean, std : float
    values : ndarray of shape (n,)

    Examples
    --------
    >>> from bnfisher.summary import random_baseline
    >>> mean, sd, values = random_baseline(lambda subset: float(subset.mean()), 100, 5, n=10, random_state=0)
    >>> len(values), 0 <= mean <= 99
    (10, True)
    """
    k = check_k(k, n_rows)
    n = check_positive_int(n, "n")
    rng = check_random_state(random_state)
    values = np.array([float(evaluate(np.sort(s))) for s in random_subsets(n_rows, k, n, random_state=rng)])
    return float(values.mean()), float(values.std(ddof=1) if n > 1 else 0.0), values


def random_mmd_baseline(kernel: FamilyKernel, data, k: int, *, n: int = 1000, random_state=None):
    """Mean and standard deviation of the MMD of ``n`` random k-subsets to ``data`` (vectorised).

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    data : DataFrame, ndarray of int or EncodedData
    k, n : int
    random_state : None, int or Generator

    Returns
    -------
    mean, std : float
    values : ndarray of shape (n,)

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> from bnfisher.summary import random_mmd_baseline
    >>> mean, sd, values = random_mmd_baseline(kernel, data, 20, n=10, random_state=0)
    >>> len(values)
    10
    """
    encoded = kernel.encode(data)
    k = check_k(k, encoded.n_rows)
    rng = check_random_state(random_state)
    values = MMDCriterion(kernel, encoded).evaluate_many(random_subsets(encoded.n_rows, k, n, random_state=rng))
    return float(values.mean()), float(values.std(ddof=1) if n > 1 else 0.0), values

# ---------------------------------------------------------------------- search
def check_k(k, n_rows: int) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise OptionTypeError(f"`k` must be an integer; got {k!r}.")
    if n_rows == 0:
        raise DataError("Cannot select representatives from empty data.")
    k = int(k)
    if not 0 < k < n_rows:
        raise OptionError(f"`k` must satisfy 0 < k < n_rows = {n_rows}; got {k}.")
    return k
