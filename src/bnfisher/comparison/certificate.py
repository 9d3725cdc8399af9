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
``P_0(Q' >= Q) <= 1 / (1 + z^2)`` (:func:`cantelli_bound`).  Its tail falls only as ``1 / z^2``;
Chernoff's bound (:func:`chernoff_bounds`) falls exponentially: the configurations are
independent, and each one's moment generating function is summed exactly over hypergeometric
laws (Hölder's inequality splits a configuration of more than two child states into one law per
state).  On RCD's random networks (6 states) it certified 7 of 10 tests that Cantelli's could not
(``z`` 19-121: ``1e-5`` to ``1e-41`` against ``3e-3`` to ``7e-5``).  A bound is a valid p-value;
the mechanism search (:func:`~bnfisher.comparison.staged.staged_tests`, ``certify``) takes the
smaller of the two (:func:`certified_bounds`) for a test whose bound is at most a level ``tau``
fixed beforehand, and for the others the Monte-Carlo p-value plus ``tau``:
``P(p <= t) <= P(p_exact <= min(t, tau)) + P(p_MC <= t - tau) <= t``.

References
----------
.. [1] Cantelli (1928). Sui confini della probabilità. Atti del Congresso Internazionale dei
   Matematici, Bologna, 47-59 (the one-sided Chebyshev inequality).
.. [2] Haldane (1940). The mean and variance of chi-square, when used as a test of homogeneity,
   when expectations are small. Biometrika 31, 346-355.
.. [3] Chernoff (1952). A measure of asymptotic efficiency for tests of a hypothesis based on the
   sum of observations. Annals of Mathematical Statistics 23, 493-507.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.numeric import hypergeometric_log_pmf

__all__ = ["CHERNOFF_Z", "cantelli_bound", "certified_bounds", "chernoff_bounds", "excesses", "null_moments",
           "pair_moments"]


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


#: Support points of a test's hypergeometric factors above which :func:`chernoff_bounds` leaves its bound at 1
#: (about 16 MB of work arrays for a few values of lambda at a time).
CHERNOFF_POINTS = 400_000

#: The exact excess ``z`` from which :func:`certified_bounds` tries Chernoff's bound (below it, no bound reaches
#: the levels a certificate is asked for: about 0.005 at ``z = 12`` on a 6 x 6 table, against Cantelli's 0.007).
CHERNOFF_Z = 10.0


def certified_bounds(tables: list, z: np.ndarray, level: float) -> np.ndarray:
    """Return each test's bound on its exact p-value: Cantelli's, and Chernoff's where Cantelli's is above ``level``.

    Chernoff's bound (:func:`chernoff_bounds`, a few milliseconds a test) is computed only for
    tests whose Cantelli bound misses ``level`` and whose excess is at least :data:`CHERNOFF_Z`.
    Both are valid p-values, so their minimum is.

    Parameters
    ----------
    tables : list of (ndarray, ndarray) or None
    z : ndarray
        Each test's exact excess (:func:`excesses`).
    level : float
        The level a bound is wanted below.

    Returns
    -------
    ndarray of shape (len(tables),)

    Examples
    --------
    >>> import numpy as np
    >>> tables = [(np.array([[400.0, 100.0]]), np.array([[100.0, 400.0]]))]
    >>> z = excesses(tables)
    >>> bool(cantelli_bound(z)[0] > 1e-5 > certified_bounds(tables, z, 1e-5)[0])
    True
    """
    bound = cantelli_bound(z)
    hard = np.flatnonzero((bound > level) & (np.asarray(z) >= CHERNOFF_Z))
    if hard.size:
        bound[hard] = np.minimum(bound[hard], chernoff_bounds([tables[k] for k in hard], level=level))
    return bound


def chernoff_bounds(tables: list, *, level: float = 0.0) -> np.ndarray:
    r"""Return Chernoff's bound on each test's exact permutation p-value, from the law of every configuration's counts.

    Under within-configuration permutations the configurations' counts are independent, and
    for any ``lambda >= 0``

    .. math::  P_0(Q' \ge q) \le e^{-\lambda q} \prod_j E_0 e^{\lambda Q_j}.

    A configuration with two child states present has ``Q_j = c U^2`` (``U = X_a - n K_a / N``,
    ``c = 1 / K_a + 1 / K_b``) with ``X_a`` hypergeometric, so its factor is a sum over that
    law's support; with ``k > 2`` states Hölder's inequality bounds it by the product over the
    states of ``(E_0 e^{k lambda U_a^2 / K_a})^{1/k}``, each ``X_a`` hypergeometric on its own.
    Every factor is summed exactly (in logarithms); the bound is minimised over ``lambda`` (a
    grid, then golden-section search: any ``lambda`` gives a valid bound).  A valid p-value
    like :func:`cantelli_bound`, and far smaller for a large excess: its tail falls
    exponentially, Cantelli's as ``1 / z^2``.

    Parameters
    ----------
    tables : list of (ndarray, ndarray) or None
        Each test's two count tables ``(configurations, states)``.
    level : float, default=0.0
        The level a bound is wanted below: the grid's best bound is kept as it is when it
        is already below ``level`` or more than 20 times above it (the search is then not refined).

    Returns
    -------
    ndarray of shape (len(tables),)
        1 for a test given as None or whose factors hold more than :data:`CHERNOFF_POINTS`
        support points.

    References
    ----------
    .. [1] Chernoff (1952), the module's [3].

    Examples
    --------
    >>> import numpy as np
    >>> tables = [(np.array([[40.0, 10.0]]), np.array([[10.0, 40.0]]))]
    >>> bound = chernoff_bounds(tables)[0]     # Pearson's chi-square 36 on 1 degree of freedom
    >>> bool(bound < 1e-6 < cantelli_bound(excesses(tables))[0])
    True
    """
    out = np.ones(len(tables))
    for k, table in enumerate(tables):
        if table is not None:
            factors = _factors(*(np.asarray(t, dtype=np.float64) for t in table))
            if factors is not None:
                out[k] = _minimised(*factors, level=level)
    return out


def _factors(count_x: np.ndarray, count_y: np.ndarray):
    """Return a test's factors as one support: log pmf, ``m c (x - e)^2``, segment, weight per segment, and ``q``."""
    pooled = count_x + count_y
    size, drawn = pooled.sum(axis=1), count_x.sum(axis=1)
    q = float(_row_moments(count_x, count_y)[0].sum())
    rows = []  # (K_a, N, n, coefficient, weight) of each factor
    for j in np.flatnonzero((drawn > 0) & (drawn < size)):
        present = np.flatnonzero(pooled[j] > 0)
        if present.size == 2:  # U_a = -U_b: one exact factor
            rows.append((pooled[j, present[0]], size[j], drawn[j],
                         1.0 / pooled[j, present[0]] + 1.0 / pooled[j, present[1]], 1.0))
        elif present.size > 2:  # Hölder over the states
            rows.extend((pooled[j, a], size[j], drawn[j], present.size / pooled[j, a], 1.0 / present.size)
                        for a in present)
    if not rows:
        return None
    K, N, n, coef, weight = np.asarray(rows, dtype=np.float64).T
    low, high = np.maximum(0.0, n - (N - K)), np.minimum(n, K)
    length = (high - low + 1).astype(np.int64)
    if length.sum() > CHERNOFF_POINTS:
        return None
    segment = np.repeat(np.arange(K.size), length)
    starts = np.r_[0, np.cumsum(length)[:-1]]
    x = low[segment] + (np.arange(length.sum()) - starts[segment])
    Ks, Ns, ns = K[segment], N[segment], n[segment]
    log_pmf = hypergeometric_log_pmf(x, Ns, Ks, ns)
    value = coef[segment] * (x - ns * Ks / Ns) ** 2
    return log_pmf, value, starts, weight, q


def _log_bound(lam: np.ndarray, log_pmf: np.ndarray, value: np.ndarray, starts: np.ndarray, weight: np.ndarray,
               q: float) -> np.ndarray:
    """Return ``sum_f w_f log E exp(lam v_f) - lam q`` for each ``lam`` (log-sum-exp per factor)."""
    exponent = log_pmf[None, :] + lam[:, None] * value[None, :]
    top = np.maximum.reduceat(exponent, starts, axis=1)
    lse = np.log(np.add.reduceat(np.exp(exponent - np.repeat(top, np.diff(np.r_[starts, value.size]), axis=1)),
                                 starts, axis=1)) + top
    return lse @ weight - lam * q


def _minimised(log_pmf, value, starts, weight, q, *, level: float) -> float:
    """Return ``min(1, exp(min over lambda of the log bound))``: a log grid, then golden-section search."""
    grid = np.geomspace(1e-4, 1e2, 25)
    logs = np.concatenate([_log_bound(grid[k: k + 5], log_pmf, value, starts, weight, q) for k in range(0, 25, 5)])
    best = int(np.argmin(logs))
    if level > 0 and not np.log(level) < logs[best] <= np.log(level) + 3.0:  # settled either way
        return float(min(1.0, np.exp(logs[best])))
    low, high = np.log(grid[max(best - 1, 0)]), np.log(grid[min(best + 1, grid.size - 1)])
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(16):
        a, b = high - ratio * (high - low), low + ratio * (high - low)
        la, lb = _log_bound(np.exp([a, b]), log_pmf, value, starts, weight, q)
        low, high = (low, b) if la <= lb else (a, high)
    final = float(min(logs[best], _log_bound(np.exp([0.5 * (low + high)]), log_pmf, value, starts, weight, q)[0]))
    return float(min(1.0, np.exp(final)))
