"""Tail probabilities from SciPy's special functions.

``scipy.stats`` costs a second to import, which every command would pay for two functions.
"""

from __future__ import annotations

import numpy as np


def chi2_logsf(x, df) -> np.ndarray:
    """Return ``log P(chi2_df > x)`` as ``scipy.stats.chi2.logsf`` computes it (SciPy 1.17).

    Above the median the log of the upper tail; below it ``log1p`` of minus the lower tail (accurate near 0);
    ``x < 0`` counts as 0.

    Parameters
    ----------
    x : array-like of float
    df : array-like of float
        Degrees of freedom (positive).

    Returns
    -------
    ndarray
        Broadcast over ``x`` and ``df``.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(chi2_logsf(3.841458820694124, 1), np.log(0.05)))
    True
    """
    from scipy import special

    x, df = np.broadcast_arrays(np.maximum(np.asarray(x, dtype=np.float64), 0.0), np.asarray(df, dtype=np.float64))
    with np.errstate(divide="ignore"):
        return np.where(x > special.chdtri(df, 0.5), np.log(special.chdtrc(df, x)), np.log1p(-special.chdtr(df, x)))


def normal_quantile(q):
    """Return the standard normal quantile of ``q`` (``scipy.stats.norm.ppf``).

    Parameters
    ----------
    q : float or array-like of float

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> round(float(normal_quantile(0.975)), 4)
    1.96
    """
    from scipy import special

    return special.ndtri(q)
