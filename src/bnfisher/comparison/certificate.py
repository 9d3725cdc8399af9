r"""Exact null moments of a within-configuration permutation test, and the p-value bound they give without permutations.

The conditional test of :func:`~bnfisher.comparison.attribution.conditional_tests` permutes the
sample label within each configuration ``j`` of the conditioning set: the first sample's child
counts ``X_j`` in configuration ``j`` are multivariate hypergeometric (``n_j`` rows of that
sample among the ``N_j`` rows there, ``K_ja`` of them in child state ``a``), independently
across configurations.  Its statistic is proportional to

.. math::  Q = \sum_j Q_j, \qquad Q_j = \sum_a (X_{ja} - n_j K_{ja} / N_j)^2 / K_{ja}

(``D = (n_X + n_Y) s^2 Q`` with ``s = 1/n_X + 1/n_Y``: the statistic's margin term is the same
under every permutation and cancels; ``Q_j N_j^2 / (n_j (N_j - n_j))`` is Pearson's chi-square of
the configuration's 2 x (states) table).  :func:`null_moments` gives ``E_0 Q`` and ``Var_0 Q`` in closed form, from the
moments of sums of the indicators of sampling without replacement: for ``m`` distinct rows,
``psi_m = E prod (I - f)`` with ``f = n / N`` is

.. math::  \psi_2 = -\frac{f(1-f)}{N-1}, \quad \psi_3 = \frac{2 f(1-f)(1-2f)}{(N-1)(N-2)}, \quad
           \psi_4 = \frac{3 f(1-f) ((N+6) f(1-f) - 2)}{(N-1)(N-2)(N-3)},

and ``(I - f)^2 = (1 - 2f)(I - f) + f(1 - f)`` reduces every power.  No permutation is drawn.

**A p-value without permutations.**  With the exact mean and standard deviation, Cantelli's
inequality bounds the exact permutation p-value of an observed ``z = (Q - E_0 Q) / sd_0 Q > 0``:
``P_0(Q' >= Q) <= 1 / (1 + z^2)`` (:func:`cantelli_bound`).  A bound is a valid p-value; the
mechanism search (:func:`~bnfisher.comparison.staged.staged_tests`, ``certify``) takes it for a
test whose bound is at most a level ``tau`` fixed beforehand, and for the others the Monte-Carlo
p-value plus ``tau``: ``P(p <= t) <= P(p_exact <= min(t, tau)) + P(p_MC <= t - tau) <= t``.

References
----------
.. [1] Cantelli (1928). Sui confini della probabilità. Atti del Congresso Internazionale dei
   Matematici, Bologna, 47-59 (the one-sided Chebyshev inequality).
.. [2] Haldane (1940). The mean and variance of chi-square, when used as a test of homogeneity,
   when expectations are small. Biometrika 31, 346-355.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cantelli_bound", "excesses", "null_moments", "pair_moments"]


def _psi(n: np.ndarray, N: np.ndarray) -> tuple:
    """Return ``psi_2, psi_3, psi_4`` (0 where fewer than that many rows exist)."""
    f = np.divide(n, N, out=np.zeros_like(N), where=N > 0)
    v = f * (1.0 - f)
    with np.errstate(divide="ignore", invalid="ignore"):
        psi2 = np.where(N >= 2, -v / (N - 1.0), 0.0)
        psi3 = np.where(N >= 3, 2.0 * v * (1.0 - 2.0 * f) / ((N - 1.0) * (N - 2.0)), 0.0)
        psi4 = np.where(N >= 4, 3.0 * v * ((N + 6.0) * v - 2.0) / ((N - 1.0) * (N - 2.0) * (N - 3.0)), 0.0)
    return f, v, psi2, psi3, psi4


def null_moments(count_x, pooled) -> tuple:
    """Return each configuration's exact ``E_0 Q_j`` and ``Var_0 Q_j`` under within-configuration permutations.

    Parameters
    ----------
    count_x : ndarray of shape (configurations, states)
        The first sample's child counts (only its row sums ``n_j`` are used).
    pooled : ndarray of shape (configurations, states)
        Both samples' counts ``K_ja`` (states with no row are left out of ``Q_j``).

    Returns
    -------
    mean, variance : ndarray of shape (configurations,)

    Examples
    --------
    >>> import numpy as np
    >>> mean, variance = null_moments(np.array([[3.0, 2.0]]), np.array([[5.0, 5.0]]))
    >>> bool(np.isclose(mean[0] * 10**2 / (5 * 5), 10 / 9))      # Pearson's chi-square: (k - 1) N / (N - 1)
    True
    """
    K = np.asarray(pooled, dtype=np.float64)
    N, n = K.sum(axis=1), np.asarray(count_x, dtype=np.float64).sum(axis=1)
    _, c0, psi2, psi3, psi4 = _psi(n, N)
    c1 = 1.0 - 2.0 * n / np.where(N > 0, N, 1.0)
    present = K > 0
    k = present.sum(axis=1).astype(np.float64)
    L = np.where(present, K - 1.0, 0.0)  # K_a - 1 over the present states
    S1, S2 = L.sum(axis=1), (L**2).sum(axis=1)
    mean = k * c0 + S1 * psi2
    # a != b: E[U_a^2 U_b^2] / (K_a K_b), summed over ordered pairs of present states
    cross = (k * (k - 1.0) * (c1**2 * psi2 + c0**2) + 2.0 * (k - 1.0) * S1 * (c1 * psi3 + c0 * psi2)
             + (S1**2 - S2) * psi4)
    # a == b: E[U_a^4] / K_a^2, with U^2 = c1 U + c0 K + P (P the sum over ordered pairs of distinct rows)
    Kp = np.where(present, K, 0.0)
    two, three, four = Kp * L, Kp * L * (Kp - 2.0), Kp * L * (Kp - 2.0) * (Kp - 3.0)
    u2 = Kp * c0[:, None] + two * psi2[:, None]
    up = 2.0 * two * (c1 * psi2)[:, None] + three * psi3[:, None]
    pp = (2.0 * two * (c1**2 * psi2 + c0**2)[:, None] + 4.0 * three * (c1 * psi3 + c0 * psi2)[:, None]
          + four * psi4[:, None])
    u4 = c1[:, None] ** 2 * u2 + (c0[:, None] * Kp) ** 2 + pp + 2.0 * c1[:, None] * up \
        + 2.0 * c0[:, None] * Kp * two * psi2[:, None]
    own = np.divide(u4, Kp**2, out=np.zeros_like(u4), where=present).sum(axis=1)
    variance = np.maximum(cross + own - mean**2, 0.0)
    return mean, variance


def _row_moments(count_x: np.ndarray, count_y: np.ndarray) -> tuple:
    """Return each configuration's observed ``Q_j``, exact ``E_0 Q_j`` and ``Var_0 Q_j`` (float64 tables)."""
    pooled = count_x + count_y
    N, n = pooled.sum(axis=1), count_x.sum(axis=1)
    expected = pooled * np.divide(n, N, out=np.zeros_like(N), where=N > 0)[:, None]
    q = np.divide((count_x - expected) ** 2, pooled, out=np.zeros_like(pooled), where=pooled > 0).sum(axis=1)
    return (q, *null_moments(count_x, pooled))


def pair_moments(count_x, count_y) -> tuple:
    """Return a test's observed ``Q``, its exact null mean and standard deviation, and its ``z``.

    Parameters
    ----------
    count_x, count_y : ndarray of shape (configurations, states)
        The two samples' counts of the child in each configuration of the conditioning set.

    Returns
    -------
    q, mean, sd, z : float
        ``z = (q - mean) / sd`` (0 when ``sd`` is 0: nothing can move).

    Examples
    --------
    >>> import numpy as np
    >>> q, mean, sd, z = pair_moments(np.array([[40.0, 10.0]]), np.array([[10.0, 40.0]]))
    >>> round(z, 1)           # Pearson's chi-square is 36 on 1 degree of freedom: about (36 - 1) / sqrt(2)
    24.6
    """
    q, mean, variance = (float(v.sum()) for v in _row_moments(*(np.asarray(t, dtype=np.float64)
                                                                 for t in (count_x, count_y))))
    sd = float(np.sqrt(variance))
    z = (q - mean) / sd if sd > 0 else 0.0
    return q, mean, sd, z


def excesses(tables: list) -> np.ndarray:
    """Return the exact ``z`` of :func:`pair_moments` for many tests at once (0 for a test given as None).

    The configurations of every test are stacked (child states padded with empty columns, which
    :func:`null_moments` leaves out) and summed per test: one pass of array operations instead of
    one per test.

    Parameters
    ----------
    tables : list of (ndarray, ndarray) or None
        Each test's two count tables ``(configurations, states)``.

    Returns
    -------
    ndarray of shape (len(tables),)

    Examples
    --------
    >>> import numpy as np
    >>> tables = [(np.array([[40.0, 10.0]]), np.array([[10.0, 40.0]])), None]
    >>> excesses(tables).round(1).tolist()
    [24.6, 0.0]
    """
    kept = [k for k, table in enumerate(tables) if table is not None]
    z = np.zeros(len(tables))
    if not kept:
        return z
    sizes = np.asarray([tables[k][0].shape[0] for k in kept])
    width = max(tables[k][0].shape[1] for k in kept)
    stacked = np.zeros((2, int(sizes.sum()), width))
    start = 0
    for k, size in zip(kept, sizes):
        for side in (0, 1):
            stacked[side, start: start + size, : tables[k][side].shape[1]] = tables[k][side]
        start += size
    owner = np.repeat(np.arange(len(kept)), sizes)
    q, mean, variance = (np.bincount(owner, weights=v, minlength=len(kept)) for v in _row_moments(*stacked))
    sd = np.sqrt(variance)
    z[kept] = np.divide(q - mean, sd, out=np.zeros_like(sd), where=sd > 0)
    return z


def cantelli_bound(z) -> np.ndarray:
    """Return Cantelli's bound ``1 / (1 + z^2)`` on ``P_0(Q' >= Q)`` for ``z > 0`` (1 otherwise).

    Parameters
    ----------
    z : array_like
        Exact standardised excesses (:func:`pair_moments`).

    Returns
    -------
    ndarray

    Examples
    --------
    >>> cantelli_bound([-1.0, 0.0, 3.0]).tolist()
    [1.0, 1.0, 0.1]
    """
    z = np.asarray(z, dtype=np.float64)
    return np.where(z > 0, 1.0 / (1.0 + np.square(np.where(z > 0, z, 0.0))), 1.0)
