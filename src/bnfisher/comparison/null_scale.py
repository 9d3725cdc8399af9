r"""Each family's MMD² over all splits of the pool: its exact mean and variance, known before any permutation.

The anytime aggregate test (:func:`~bnfisher.comparison.aggregate.split_scores`) scores one split alone by
referring each family's part of eq. 10 to a scaled chi-square matched to these two moments
(:class:`~bnfisher.comparison.permutation.NullScale`).  The moments only order the splits: the test's level
comes from the permutations whatever their accuracy, and their accuracy decides its power.

**The moments.**  With ``psi_i = phi(x_i) - phi-bar`` over the ``N`` pooled rows and ``K_ij = psi_i . psi_j``, the
first sample (``n`` rows) is a sample without replacement, ``z`` its indicator, and
``||mu_X - mu_Y||^2 = c^2 z^T K z`` with ``c = N / (n m)``.  ``K``'s rows sum to zero, so with ``p_r = n^(r) /
N^(r)`` (falling factorials: the chance that ``r`` given rows are all drawn) and the power sums ``T_1 = sum_i K_ii``,
``T_2 = sum_i K_ii^2`` and ``T_3 = sum_ij K_ij^2``,

.. math::

    E[z^T K z] = (p_1 - p_2) T_1, \quad
    E[(z^T K z)^2] = (p_1 - 7 p_2 + 12 p_3 - 6 p_4) T_2 + (p_2 - 2 p_3 + p_4)(T_1^2 + 2 T_3)

(the sum over the 15 ways four indices coincide, by Möbius inversion on their partitions; every way with an index
alone in one factor vanishes).  ``T_2`` is the term a Gaussian first sample leaves out: the features of rare cells
are long, and their fourth power sets the tail.  A cell's features lie in its parent configuration's block, so all
three sums come from the pooled cell frequencies (exact when each row has one cell per family).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bnfisher.kernels.columns import CellLayout

__all__ = ["family_moments", "quadratic_form_coefficients"]


def quadratic_form_coefficients(n_total: int, n_first: int) -> tuple:
    """Return ``(a, b, c)`` with ``Var(z^T K z) = a T_1^2 + b T_2 + c T_3`` (``K``'s rows summing to zero).

    ``z`` is the indicator of ``n_first`` rows drawn without replacement from ``n_total`` (see the module).  The
    coefficients are computed in exact rational arithmetic: ``a`` is a difference of nearly equal terms.

    Parameters
    ----------
    n_total, n_first : int

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> import itertools, numpy as np
    >>> psi = np.random.default_rng(0).exponential(size=(7, 2)); psi -= psi.mean(axis=0)
    >>> K = psi @ psi.T
    >>> a, b, c = quadratic_form_coefficients(7, 3)
    >>> exact = a * np.trace(K)**2 + b * np.sum(np.diag(K)**2) + c * np.sum(K**2)
    >>> draws = [K[np.ix_(s, s)].sum() for s in map(list, itertools.combinations(range(7), 3))]
    >>> bool(np.isclose(exact, np.var(draws)))
    True
    """
    def drawn(r: int) -> Fraction:  # p_r: r given rows all among the first sample's
        if n_first < r:
            return Fraction(0)
        value = Fraction(1)
        for k in range(r):
            value *= Fraction(n_first - k, n_total - k)
        return value

    p1, p2, p3, p4 = (drawn(r) for r in (1, 2, 3, 4))
    pairs = p2 - 2 * p3 + p4
    return float(pairs - (p1 - p2) ** 2), float(p1 - 7 * p2 + 12 * p3 - 6 * p4), float(2 * pairs)


def family_moments(layout: CellLayout, pooled_counts: np.ndarray, n_x: int, n_y: int) -> tuple:
    """Return each family's MMD² mean and variance over all splits of the pool, and its free parameters seen there.

    Parameters
    ----------
    layout : CellLayout
        The kernel's cells (:class:`~bnfisher.kernels.columns.CellLayout`).
    pooled_counts : ndarray of shape (n_cells,)
        The pool's count of every cell.
    n_x, n_y : int
        The two samples' rows.

    Returns
    -------
    mean, variance : ndarray of shape (n_families,)
        Exact for complete rows (the module's formulas).
    df : ndarray of int, shape (n_families,)
        Over the parent configurations seen, the child's states seen there minus one.
    """
    kernel, cards, n = layout.kernel, layout.kernel.network.cardinalities, n_x + n_y
    c2 = (n / (n_x * n_y)) ** 2
    a, b, c = quadratic_form_coefficients(n, n_x)
    mean, variance, df = (np.zeros(len(layout.active)) for _ in range(3))
    for k, i in enumerate(layout.active):
        frequency = pooled_counts[layout.offsets[k]: layout.offsets[k + 1]].reshape(-1, int(cards[i])) / n
        features = kernel.cell_features(i).reshape(frequency.shape[0], int(cards[i]), -1)
        centre = np.einsum("qr,qrd->qd", frequency, features)  # phi-bar, block by block
        blocks = np.matmul((features * frequency[..., None]).transpose(0, 2, 1), features)  # B_j (batched BLAS)
        square = float(np.sum(centre**2))
        # ||psi||^2 of each cell: its distance to its block's centre, plus the other blocks' centres.
        length = np.sum((features - centre[:, None, :]) ** 2, axis=2) + (square - np.sum(centre**2, axis=1))[:, None]
        trace = float(np.einsum("qdd->", blocks)) - square  # T_1 / N
        trace_square = (float(np.sum(blocks**2)) - 2 * float(np.einsum("qd,qde,qe->", centre, blocks, centre))
                        + square**2)  # T_3 / N^2
        fourth = float(np.sum(frequency * length**2))  # T_2 / N
        mean[k] = n**2 / (n_x * n_y * (n - 1)) * max(trace, 0.0)  # c^2 (p_1 - p_2) T_1
        variance[k] = c2**2 * (a * (n * trace) ** 2 + b * n * fourth + c * n**2 * max(trace_square, 0.0))
        df[k] = int(np.sum(np.maximum((frequency > 0).sum(axis=1) - 1, 0)))
    return mean, np.maximum(variance, 0.0), df.astype(np.int64)
