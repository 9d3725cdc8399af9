r"""The squared MMD of eq. 10, one family at a time, from frequency tables: the one MMD² of bnfisher.

For a family kernel the mean embedding of a sample is, in the block of family ``f``
and parent configuration ``j``, ``mu_fj = sum_a p_fja F_f[j, a]`` with ``p`` the
sample's cell frequencies (``N_fja / N``).  Hence

.. math::

    d(X, Y) = \|\mu_X - \mu_Y\|^2 = \sum_f \sum_j \Big\| \sum_a (p^X_{fja} - p^Y_{fja}) F_f[j, a] \Big\|^2,

a sum over families of a quantity that needs only that family's frequency
difference.  :meth:`FamilyKernel.mmd <bnfisher.kernels.FamilyKernel.mmd>`, the MMD
criterion of Algorithm 1 and the permutation engine of the two-sample test all
call :func:`family_mmd2`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["family_mmd2"]


def family_mmd2(table: np.ndarray, difference: np.ndarray) -> np.ndarray:
    """One family's share of the squared MMD (eq. 10) for a batch of frequency differences.

    Parameters
    ----------
    table : ndarray of shape (q, r, d)
        The family's cell features ``F[j, a]`` (:meth:`FamilyKernel.cell_features`, reshaped).
    difference : ndarray of shape (q * r,) or (q * r, batch)
        Cell frequencies of the first sample minus those of the second (cells in mixed
        radix, parents then child, C order).

    Returns
    -------
    ndarray of shape (batch,)
        ``sum_j || sum_a difference[j, a] F[j, a] ||^2`` for every column of ``difference``.

    Examples
    --------
    >>> import numpy as np
    >>> table = np.eye(2).reshape(1, 2, 2)          # one configuration, identity features
    >>> family_mmd2(table, np.array([0.5, -0.5]))   # ||(0.5, -0.5)||^2
    array([0.5])
    """
    q, r, d = table.shape
    block = np.asarray(difference, dtype=np.float64).reshape(q, r, -1)
    projected = np.einsum("jab,jad->jdb", block, table)
    return np.einsum("jdb,jdb->b", projected, projected)
