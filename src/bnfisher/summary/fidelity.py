"""What a user checks of a subset: each column's labels against the table's, beside random subsets of its size.

The kernel MMD says how close a subset's mean embedding is to the table's; a user checks
the columns one by one, and pairs of columns.  This module measures that check: the
total-variation distance between a column's observed labels in the subset and in the table
(missing cells left out of both), its mean over the columns and its worst column, the same
for each pair of columns (joint labels, both cells observed), the same for random subsets
of the same size, and the labels common in the table that the subset lacks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["COMMON_LABEL", "CPT_TOLERANCE", "Fidelity", "column_fidelity", "cpt_distances", "pair_tv"]

#: A label holding at least this share of a column's observed cells is "common": a subset should not lose it.
COMMON_LABEL = 0.05


@dataclass(frozen=True)
class Fidelity:
    """Per-column fidelity of a subset, beside random subsets of its size.

    Attributes
    ----------
    tv : ndarray of shape (n_columns,)
        Total-variation distance between the subset's and the table's observed labels, per column.
    random_tv : ndarray of shape (n_random, n_columns)
        The same for each random subset.
    lost : list of tuple of (int, int, float, float)
        ``(column, code, share in the table, share of random subsets that lack it too)`` of each
        common label (:data:`COMMON_LABEL`) absent from the subset.
    incomplete : tuple of float
        Share of rows with a missing cell, in the subset and in the table.
    pair_tv : ndarray of shape (n_pairs,)
        Total-variation distance between the subset's and the table's joint labels, per pair of
        columns (:func:`pair_tv`; empty when not measured).
    random_pair_tv : ndarray of shape (n_random, n_pairs)
    cpt_tv : ndarray of shape (n_families,)
        How far each family's CPT re-estimated from the subset is from the table's
        (:func:`cpt_distances`; empty when not measured).

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0], [0], [1], [1]])
    >>> found = column_fidelity(codes, [2], np.array([0, 1]), np.array([[0, 2], [1, 3]]))
    >>> found.tv.tolist(), found.mean_tv, found.beaten, found.lost[0][:3]
    ([0.5], 0.5, 0.0, (0, 1, 0.5))
    """

    tv: np.ndarray
    random_tv: np.ndarray
    lost: list
    incomplete: tuple
    pair_tv: np.ndarray = field(default_factory=lambda: np.zeros(0))
    random_pair_tv: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    cpt_tv: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def mean_tv(self) -> float:
        """The subset's mean total-variation distance over the columns."""
        return float(self.tv.mean()) if self.tv.size else 0.0

    @property
    def beaten(self) -> float:
        """Share of random subsets whose mean total-variation distance is larger than the subset's."""
        return float(np.mean(self.random_tv.mean(axis=1) > self.mean_tv)) if len(self.random_tv) else 0.0

    @property
    def pairs_beaten(self) -> float:
        """Share of random subsets whose mean pairwise total-variation distance is larger than the subset's."""
        if not self.pair_tv.size or not len(self.random_pair_tv):
            return float("nan")
        return float(np.mean(self.random_pair_tv.mean(axis=1) > self.pair_tv.mean()))

    @property
    def farther(self) -> np.ndarray:
        """The columns farther from the table in the subset than in the average random subset of its size."""
        if not len(self.random_tv):
            return np.zeros(0, dtype=np.intp)
        return np.flatnonzero(self.tv > self.random_tv.mean(axis=0))

    @property
    def worst(self) -> int:
        """The column the subset represents worst (largest total-variation distance)."""
        return int(np.argmax(self.tv))


def _shares(codes: np.ndarray, rows: np.ndarray, cardinality: int) -> np.ndarray:
    """Observed-label shares of one column over ``rows`` (a 2-d array: one set of rows per line)."""
    values = codes[rows]  # (sets, k)
    offsets = np.arange(values.shape[0])[:, None] * cardinality
    observed = values >= 0
    counts = np.bincount((values + offsets)[observed], minlength=values.shape[0] * cardinality)
    counts = counts.reshape(values.shape[0], cardinality).astype(np.float64)
    totals = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)


def column_fidelity(codes: np.ndarray, cardinalities, positions: np.ndarray, random_sets: np.ndarray) -> Fidelity:
    """Measure each column's fidelity for a subset and for random subsets of its size.

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_columns)
        The table, encoded (``-1`` missing).
    cardinalities : sequence of int
    positions : ndarray of int, shape (k,)
        The subset's rows.
    random_sets : ndarray of int, shape (n_random, k)
        Random subsets' rows.

    Returns
    -------
    Fidelity
    """
    n_columns = codes.shape[1]
    tv = np.zeros(n_columns)
    random_tv = np.zeros((len(random_sets), n_columns))
    lost = []
    every = np.arange(codes.shape[0])[None, :]
    for c in range(n_columns):
        r = int(cardinalities[c])
        column = codes[:, c]
        table = _shares(column, every, r)[0]
        subset = _shares(column, positions[None, :], r)[0]
        tv[c] = 0.5 * np.abs(subset - table).sum()
        if len(random_sets):
            drawn = _shares(column, random_sets, r)
            random_tv[:, c] = 0.5 * np.abs(drawn - table).sum(axis=1)
            missed = (drawn == 0).mean(axis=0)
        else:
            missed = np.zeros(r)
        for code in np.flatnonzero((table >= COMMON_LABEL) & (subset == 0)):
            lost.append((c, int(code), float(table[code]), float(missed[code])))
    incomplete = np.asarray((codes < 0).any(axis=1))
    return Fidelity(tv, random_tv, lost, (float(incomplete[positions].mean()), float(incomplete.mean())))


def pair_tv(codes: np.ndarray, cardinalities, pairs: list, row_sets: np.ndarray, *,
            table: np.ndarray | None = None) -> np.ndarray:
    """Return the total-variation distance of each row set's joint labels to the table's, per pair of columns.

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_columns)
        The table, encoded (``-1`` missing: a pair's cell counts only when both are observed).
    cardinalities : sequence of int
    pairs : list of (int, int)
    row_sets : ndarray of int, shape (n_sets, k)
    table : ndarray of int, shape (n, n_columns), optional
        The rows whose shares the sets are measured against (default ``codes``; a uniform
        sample of a very large table).

    Returns
    -------
    ndarray of shape (n_sets, n_pairs)

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0, 0], [1, 1], [0, 1], [1, 0]])
    >>> pair_tv(codes, [2, 2], [(0, 1)], np.array([[0, 1], [2, 3]])).tolist()
    [[0.5], [0.5]]
    """
    table = codes if table is None else table
    row_sets = np.asarray(row_sets)
    chosen = codes[row_sets.ravel()]  # only the rows the sets hold
    positions = np.arange(row_sets.size).reshape(row_sets.shape)
    out = np.zeros((len(row_sets), len(pairs)))
    for position, (a, b) in enumerate(pairs):
        width = int(cardinalities[b])
        size = int(cardinalities[a]) * width
        whole = _shares(_joint(table, a, b, width), np.arange(table.shape[0])[None, :], size)[0]
        out[:, position] = 0.5 * np.abs(_shares(_joint(chosen, a, b, width), positions, size) - whole).sum(axis=1)
    return out


def _joint(codes: np.ndarray, a: int, b: int, width: int) -> np.ndarray:
    """Return each row's joint label of columns ``a`` and ``b`` (-1 where either is missing)."""
    first, second = codes[:, a].astype(np.int32), codes[:, b].astype(np.int32)  # int8 codes would overflow
    return np.where((first >= 0) & (second >= 0), first * width + second, -1)


#: A family's CPT re-estimated from a subset is "kept" when within this expected total variation of the table's.
CPT_TOLERANCE = 0.05


def cpt_distances(codes: np.ndarray, cardinalities, families, positions: np.ndarray, *,
                  table: np.ndarray | None = None) -> np.ndarray:
    """Return, per family, how far its CPT re-estimated from the subset is from the one estimated from the table.

    The distance is the expected total variation over the table's parent configurations,
    ``sum_j P(j) TV(theta_S(. | j), theta(. | j))``, both estimated by relative frequency over
    the rows where the family is observed; a configuration the subset lacks counts with the
    uniform distribution (what an estimate with a prior and no data gives).

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_columns)
        ``-1`` missing.
    cardinalities : sequence of int
    families : sequence of tuple of int
        ``parents + (child,)``, column indices (:attr:`~bnfisher.kernels.FamilyKernel.families`).
    positions : ndarray of int
        The subset's rows.
    table : ndarray of int, shape (n, n_columns), optional
        The rows the table's CPTs are estimated from (default ``codes``; a uniform sample of a
        very large table).

    Returns
    -------
    ndarray of shape (n_families,)

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0, 0], [0, 1], [1, 1], [1, 1]])
    >>> cpt_distances(codes, [2, 2], [(1,), (0, 1)], np.array([0, 2])).round(3).tolist()
    [0.25, 0.25]
    """
    out = np.zeros(len(families))
    for position, family in enumerate(families):
        columns = list(family)
        sizes = [int(cardinalities[c]) for c in columns]
        states = sizes[-1]
        whole = _family_table(codes if table is None else table, columns, sizes)
        part = _family_table(codes[positions], columns, sizes)
        totals, part_totals = whole.sum(axis=1), part.sum(axis=1)
        theta = whole / np.maximum(totals, 1.0)[:, None]
        estimate = np.where(part_totals[:, None] > 0, part / np.maximum(part_totals, 1.0)[:, None], 1.0 / states)
        weights = totals / max(totals.sum(), 1.0)
        out[position] = float(weights @ (0.5 * np.abs(estimate - theta).sum(axis=1)))
    return out


def _family_table(codes: np.ndarray, columns: list, sizes: list) -> np.ndarray:
    """Return a family's counts, parent configurations by child states, over the rows where it is observed."""
    observed = np.asarray((codes[:, columns] >= 0).all(axis=1), dtype=bool)
    rows = codes[observed]
    cells = np.ravel_multi_index(tuple(rows[:, c] for c in columns), sizes)
    counts = np.bincount(np.asarray(cells, dtype=np.int64), minlength=int(np.prod(sizes)))
    return counts.reshape(-1, sizes[-1]).astype(np.float64)
