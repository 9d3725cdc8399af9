"""Criteria of Algorithm 1's greedy swap search: the MMD (eq. 10) and the chi-square criterion (Sec. 7.1).

A criterion implements the :class:`Criterion` protocol;
:func:`~bnfisher.summary.select_representatives` needs nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from bnfisher._utils.tails import chi2_logsf
from bnfisher.kernels.base import FamilyKernel

__all__ = ["Criterion", 'chi2_criterion', 'MMDCriterion', 'Chi2Criterion']


# ------------------------------------------------------------------- criteria
@runtime_checkable
class Criterion(Protocol):
    """What Algorithm 1's greedy swap search needs of a criterion (the MMD, chi-square, or your own).

    The search works on *units* (rows, or distinct rows for the MMD); a subset is an
    array of unit positions.  Lower values are better.

    Attributes
    ----------
    name : str
        Shown in results and reports.
    n_rows : int
        Number of units the subset is drawn from.
    scale : float
        The criterion's natural size: a swap must improve the value by more than ``tol * scale``.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> from bnfisher.summary import Criterion, MMDCriterion
    >>> isinstance(MMDCriterion(kernel, network.encode(data)), Criterion)
    True
    """

    name: str
    n_rows: int
    scale: float

    def evaluate_many(self, subsets: np.ndarray) -> np.ndarray:
        """Value of each candidate subset.

        Parameters
        ----------
        subsets : ndarray of int, shape (m, k)

        Returns
        -------
        ndarray of shape (m,)
        """

    def start(self, subset: np.ndarray) -> float:
        """Begin a search at ``subset``.

        Parameters
        ----------
        subset : ndarray of int, shape (k,)

        Returns
        -------
        float
            Its value.
        """

    def candidates(self, current: float, unit: int) -> np.ndarray:
        """Value after swapping ``unit`` (a member of the subset) for each unit.

        Parameters
        ----------
        current : float
            The subset's value.
        unit : int

        Returns
        -------
        ndarray of shape (n_rows,)
            ``inf`` where a swap is not allowed (members of the subset).
        """

    def swap(self, out_unit: int, in_unit: int) -> None:
        """Apply a swap to the search state.

        Parameters
        ----------
        out_unit, in_unit : int
        """

    def refresh(self, subset: np.ndarray) -> float:
        """Recompute the state of ``subset`` from scratch (after a sweep, against drift).

        Parameters
        ----------
        subset : ndarray of int, shape (k,)

        Returns
        -------
        float
            Its value.
        """


class MMDCriterion:
    """``d(X_S, X)`` of eq. 10 (the squared MMD of a subset to the data) with incremental updates.

    The search runs on *units*, the distinct candidate rows (:class:`~bnfisher.kernels.KernelColumns`):
    identical rows have identical candidate values, so each is scored once, and a
    kernel column costs ``n`` gathers over the units -- ``O(N n)`` time and memory,
    never the ``N x sum_i r_i`` embedding.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    encoded : EncodedData
        The candidate rows (encoded with ``kernel.schema``).
    target : ndarray of shape (n_cells,), optional
        Cell frequencies of the data to approach, cells as in ``kernel.columns(encoded).offsets``
        (default: the candidates' own).

    Attributes
    ----------
    inverse : ndarray of int, shape (n_rows,)
        The unit of every candidate row.
    multiplicity : ndarray of int, shape (n_units,)
        Rows per unit.

    Notes
    -----
    :meth:`evaluate_many` scores many subsets of rows at once; ``start``,
    ``candidates``, ``swap`` and ``refresh`` are the steps of the greedy search, on units.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> import numpy as np
    >>> from bnfisher.summary import MMDCriterion
    >>> criterion = MMDCriterion(kernel, network.encode(data))
    >>> spread, block = criterion.evaluate_many(np.array([np.arange(0, 648, 33)[:20], np.arange(20)]))
    >>> bool(spread < block)  # rows spread over the table stand for it better than its first 20
    True
    """

    name = "mmd"

    def __init__(self, kernel: FamilyKernel, encoded, target: np.ndarray | None = None):
        self.columns = kernel.columns(encoded)
        self.inverse, self.multiplicity = self.columns.inverse, self.columns.multiplicity
        self.n_rows = self.columns.n_units
        self.features = self.columns.cell_features  # cells -> features
        n_rows = max(self.columns.n_rows, 1)
        # The target is the mean embedding of the data to summarise: the candidates' own mean, or (for data beyond
        # memory) the full data's, computed from distributed counts.
        if target is None:
            target = self.columns.weighted_cells(self.multiplicity.astype(np.float64)) / n_rows
        self.target_cells = np.asarray(target, dtype=np.float64)
        self.target = self.features.T @ self.target_cells  # the target's mean embedding
        self.diagonal = self.columns.diag
        # The scale of the criterion: a swap must improve it by more than tol times this.
        self.scale = float(self.diagonal @ self.multiplicity / n_rows) if self.n_rows else 1.0
        # Columns of the subset's members are reused sweep after sweep, asked for in the same order every sweep:
        # keep the first ones asked for, as many as COLUMN_CACHE_BYTES holds, and drop a column when its unit is
        # swapped out.  (Evicting the least recently used would keep none of them in a cyclic scan longer than
        # the cache.)
        self._cache: dict = {}
        self._cache_size = COLUMN_CACHE_BYTES // max(8 * self.n_rows, 1)

    def evaluate_many(self, subsets: np.ndarray) -> np.ndarray:
        """Criterion of each row of ``subsets`` (shape (m, k), row positions) via sparse subset means.

        Parameters
        ----------
        subsets : ndarray of int, shape (m, k)

        Returns
        -------
        ndarray of shape (m,)
        """
        m, k = subsets.shape
        out = np.empty(m)
        columns = self.columns
        # Blocks of subsets whose dense cell tables take ~32 MB.
        block = max(1, 2**22 // max(columns.n_cells, k * columns.cells.shape[1], 1))
        for start in range(0, m, block):
            counts = columns.cell_counts(self.inverse[subsets[start : start + block]]) / k
            out[start : start + block] = columns.mmd2_by_family((counts - self.target_cells).T).sum(axis=1)
        return np.maximum(out, 0.0)

    def start(self, subset: np.ndarray) -> float:
        """Begin the search at ``subset`` (units, repeats allowed); return its criterion value.

        Parameters
        ----------
        subset : ndarray of int

        Returns
        -------
        float
        """
        self.k = subset.size
        counts = np.bincount(subset, minlength=self.n_rows).astype(np.float64)
        self.delta = self.features.T @ self.columns.weighted_cells(counts) / self.k - self.target
        self.inner = self.columns.inner(self.features @ self.delta)
        return float(self.delta @ self.delta)

    def column(self, unit: int) -> np.ndarray:
        """Return the kernel column ``K(., u)`` over all units.

        Parameters
        ----------
        unit : int

        Returns
        -------
        ndarray of shape (n_units,)
        """
        cached = self._cache.get(unit)
        if cached is not None:
            return cached
        column = self.columns.column(unit)
        if len(self._cache) < self._cache_size:
            self._cache[unit] = column
        return column

    def candidates(self, current: float, unit: int) -> np.ndarray:
        """Return the criterion after swapping ``unit`` out for each unit (``current``: the value now).

        Parameters
        ----------
        current : float
        unit : int
            The member of the subset to swap out.

        Returns
        -------
        ndarray of shape (n_units,)
        """
        self._column = self.column(unit)
        k = self.k
        # d' = d + 2/k (g_j - g_i) + (K_jj - 2 K_ij + K_ii) / k^2   (eq. 10 after one swap)
        return (current + (2.0 / k) * (self.inner - self.inner[unit])
                + (self.diagonal - 2.0 * self._column + self.diagonal[unit]) / k**2)

    def swap(self, out_unit: int, in_unit: int) -> None:
        """Apply the swap of ``out_unit`` for ``in_unit`` to the running state.

        Parameters
        ----------
        out_unit, in_unit : int
        """
        k = self.k
        for unit, sign in ((in_unit, 1.0), (out_unit, -1.0)):
            cells, weights = self.columns.unit_weights(unit)
            self.delta += sign * (self.features[cells].T @ weights) / k
        self.inner += (self.column(in_unit) - self._column) / k
        self._cache.pop(out_unit, None)

    def refresh(self, subset: np.ndarray) -> float:
        """Recompute the state of ``subset`` from scratch (drops accumulated rounding); return its value.

        Parameters
        ----------
        subset : ndarray of int

        Returns
        -------
        float
        """
        return self.start(subset)


def chi2_criterion(codes: np.ndarray, subset: np.ndarray) -> float:
    """Return the paper's chi-square heuristic ``-sum_i log p_i`` ([1]_ Sec. 7.1).

    Per variable, a chi-square goodness-of-fit test of the subset's state counts
    against ``k`` times the full data's frequencies, over the states that occur in
    the full data (degrees of freedom: their number minus 1); p-values in log
    space (``chi2.logsf``), so the sum does not underflow.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
    subset : array-like of int
        Row positions.

    Returns
    -------
    float

    References
    ----------
    .. [1] J. Leppä-aho, T. Silander, T. Roos (2020). Bayesian network Fisher kernel for
       categorical feature spaces. Behaviormetrika 47, 81-103.

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher.summary import chi2_criterion
    >>> codes = network.encode(data).codes
    >>> value = chi2_criterion(codes, np.arange(0, 648, 3))
    >>> bool(np.isfinite(value))
    True
    """
    return Chi2Criterion(codes).evaluate_many(np.asarray(subset)[None, :])[0]


class Chi2Criterion:
    """The paper's chi-square heuristic ``-sum_i log p_i`` over subsets ([1]_ Sec. 7.1), vectorised.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
    cardinalities : sequence of int, optional

    References
    ----------
    .. [1] J. Leppä-aho, T. Silander, T. Roos (2020). Bayesian network Fisher kernel for
       categorical feature spaces. Behaviormetrika 47, 81-103.

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher.summary import Chi2Criterion
    >>> criterion = Chi2Criterion(network.encode(data).codes)
    >>> values = criterion.evaluate_many(np.array([np.arange(0, 60, 3), np.arange(20)]))
    >>> values.shape
    (2,)
    """

    name = "chi2"
    scale = 1.0

    def __init__(self, codes: np.ndarray, cardinalities=None):
        self.codes = np.asfortranarray(codes)
        self.n_rows, self.n_vars = codes.shape
        if cardinalities is None:
            cardinalities = codes.max(axis=0) + 1 if self.n_rows else np.ones(self.n_vars, dtype=int)
        self.cards = [int(r) for r in cardinalities]
        self.frequencies = [np.bincount(self.codes[:, v], minlength=r) / self.n_rows for v, r in enumerate(self.cards)]
        self.df = [int(np.count_nonzero(f)) - 1 for f in self.frequencies]
        self.inverse, self.multiplicity = np.arange(self.n_rows), np.ones(self.n_rows, dtype=np.intp)
        self._flat = None

    def _objective(self, statistics: list) -> float:
        return float(-sum(chi2_logsf(s, df) if df > 0 else 0.0 for s, df in zip(statistics, self.df)))

    def _statistic(self, observed: np.ndarray, v: int) -> np.ndarray:
        expected = self.k * self.frequencies[v]
        used = expected > 0
        return (((observed[..., used] - expected[used]) ** 2) / expected[used]).sum(axis=-1)

    def evaluate_many(self, subsets: np.ndarray) -> np.ndarray:
        """Return the criterion of each row of ``subsets`` (shape (m, k)).

        Parameters
        ----------
        subsets : ndarray of int, shape (m, k)

        Returns
        -------
        ndarray of shape (m,)
        """
        m, self.k = subsets.shape
        total = np.zeros(m)
        for v, r in enumerate(self.cards):
            if self.df[v] <= 0:
                continue
            states = self.codes[subsets, v]  # (m, k)
            observed = np.zeros((m, r))
            np.add.at(observed, (np.repeat(np.arange(m), self.k), states.ravel()), 1.0)
            total -= chi2_logsf(self._statistic(observed, v), self.df[v])
        return total

    def start(self, subset: np.ndarray) -> float:
        """Begin the search at ``subset``; return its criterion value.

        Parameters
        ----------
        subset : ndarray of int

        Returns
        -------
        float
        """
        self.k = subset.size
        self.observed = [np.bincount(self.codes[subset, v], minlength=r).astype(float)
                         for v, r in enumerate(self.cards)]
        self.statistics = [float(self._statistic(o, v)) for v, o in enumerate(self.observed)]
        return self._objective(self.statistics)

    def candidates(self, current: float, row: int) -> np.ndarray:
        """Return the criterion after swapping ``row`` out for each candidate (``current``: the value now).

        One ``chi2.logsf`` call over every state of every variable, then one gather per variable.

        Parameters
        ----------
        current : float
        row : int
            The member of the subset to swap out.

        Returns
        -------
        ndarray of shape (n_rows,)
        """
        if self._flat is None:
            self._prepare()
        expected = self.k * self._frequency  # every state of every variable, concatenated
        observed = np.concatenate(self.observed)
        out = self._flat[row]  # the removed row's state of each variable (global state index)
        # Remove row i: one cell per variable moves from O_a to O_a - 1.
        change = (observed[out] - 1 - expected[out]) ** 2 - (observed[out] - expected[out]) ** 2
        removed = np.asarray(self.statistics) + change / expected[out]
        observed[out] -= 1
        with np.errstate(divide="ignore", invalid="ignore"):  # states absent from X have no candidates
            added = np.where(expected > 0, (2 * (observed - expected) + 1) / expected, 0.0)
        # Add row j in state b: the statistic becomes removed + added[b]; one logsf for every state at once.
        per_state = chi2_logsf(removed[self._variable_of] + added, self._df_of)
        per_state[~self._tested] = 0.0
        per_state = np.append(per_state, 0.0)
        total = np.zeros(self.n_rows)
        buffer = np.empty(self.n_rows)
        for v in self._tested_variables:
            np.take(per_state, self._flat[:, v], out=buffer)
            total -= buffer
        return total

    def _prepare(self) -> None:
        offsets = np.concatenate([[0], np.cumsum(self.cards)])
        self._flat = np.asfortranarray(self.codes + offsets[:-1])  # global state index of every cell
        self._frequency = np.concatenate(self.frequencies)
        self._variable_of = np.repeat(np.arange(self.n_vars), self.cards)
        df = np.asarray(self.df)
        self._df_of = np.maximum(df[self._variable_of], 1)
        self._tested = df[self._variable_of] > 0
        self._tested_variables = [v for v in range(self.n_vars) if self.df[v] > 0]

    def swap(self, out_row: int, in_row: int) -> None:
        """Apply the swap of ``out_row`` for ``in_row`` to the running state.

        Parameters
        ----------
        out_row, in_row : int
        """
        for v in range(self.n_vars):
            self.observed[v][self.codes[out_row, v]] -= 1
            self.observed[v][self.codes[in_row, v]] += 1
            self.statistics[v] = float(self._statistic(self.observed[v], v))

    def refresh(self, subset: np.ndarray) -> float:
        """Recompute the state of ``subset`` from scratch (drops accumulated rounding); return its value.

        Parameters
        ----------
        subset : ndarray of int

        Returns
        -------
        float
        """
        return self.start(subset)


class _CallableCriterion:
    name = "callable"

    def __init__(self, function: Callable, n_rows: int):
        self.function = function
        self.n_rows = n_rows
        self.scale = 0.0  # relative tolerance only
        self.inverse, self.multiplicity = np.arange(n_rows), np.ones(n_rows, dtype=np.intp)

    def evaluate_many(self, subsets: np.ndarray) -> np.ndarray:
        """Return the criterion of each row of ``subsets`` (shape (m, k))."""
        return np.array([float(self.function(np.sort(s))) for s in subsets])

    def start(self, subset: np.ndarray) -> float:
        """Begin the search at ``subset``; return its criterion value."""
        self.subset = subset.copy()
        return float(self.function(np.sort(self.subset)))

    def candidates(self, current: float, row: int) -> np.ndarray:
        """Return the criterion after swapping ``row`` out for each candidate (``current``: the value now)."""
        position = int(np.flatnonzero(self.subset == row)[0])
        values = np.full(self.n_rows, np.inf)
        trial = self.subset.copy()
        for j in range(self.n_rows):
            trial[position] = j
            values[j] = float(self.function(np.sort(trial)))
        return values

    def swap(self, out_row: int, in_row: int) -> None:
        """Apply the swap of ``out_row`` for ``in_row`` to the running state."""
        self.subset[self.subset == out_row] = in_row

    def refresh(self, subset: np.ndarray) -> float:
        """Recompute the state of ``subset`` from scratch (drops accumulated rounding); return its value."""
        return self.start(subset)

#: Memory for kernel columns kept between sweeps of the MMD search (bytes).
COLUMN_CACHE_BYTES = 2**28
