"""Kernel columns in ``O(N n)``: the rows of a data set as cells of a family kernel (Algorithm 1's engine)."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from bnfisher._utils.jit import compiled
from bnfisher._utils.lazy import sparse as sp
from bnfisher._utils.memory import check_allocation
from bnfisher._utils.parallel import map_threads, threads_for
from bnfisher.data.schema import EncodedData
from bnfisher.kernels.cell_matrices import (
    cell_feature_matrix,
    cell_gram_matrix,
    distinct_units,
    incomplete_cell_weights,
)
from bnfisher.kernels.mmd import family_mmd2

__all__ = ["CellKernel", "CellLayout", "KernelColumns"]


class CellKernel(Protocol):
    """What :class:`KernelColumns` needs of a kernel: its families' cells and the features each cell has.

    :class:`~bnfisher.kernels.base.FamilyKernel` (and so the Fisher and overlap kernels) provides it;
    the columns never name the class.

    Attributes
    ----------
    network : BayesianNetwork
    families : tuple
        Each family's column indices, child last.
    normalize : bool or str
        The kernel's normalisation (cosine normalisation scales every unit).
    n_features_ : int
    """

    network: Any
    families: Any
    normalize: Any
    n_features_: int

    def block_width(self, i: int) -> int:
        """Return the number of features of family ``i``.

        Parameters
        ----------
        i : int

        Returns
        -------
        int
        """

    def cell_features(self, i: int) -> np.ndarray:
        """Return the feature vectors of family ``i``'s cells, one row a cell.

        Parameters
        ----------
        i : int

        Returns
        -------
        ndarray
        """

    def feature_columns(self, i: int, cells: np.ndarray) -> np.ndarray:
        """Return the feature columns of the given cells of family ``i``.

        Parameters
        ----------
        i : int
        cells : ndarray of int

        Returns
        -------
        ndarray of int
        """

    def cell_index(self, codes: np.ndarray, i: int) -> np.ndarray:
        """Return each complete row's cell of family ``i``.

        Parameters
        ----------
        codes : ndarray of int
        i : int

        Returns
        -------
        ndarray of int
        """

    def cell_weights(self, encoded: EncodedData) -> list:
        """Return per family the rows, cells and weights of (possibly incomplete) rows.

        Parameters
        ----------
        encoded : EncodedData

        Returns
        -------
        list of tuple
        """


def _numpy_gather(cells, table, out, start, stop):
    """:func:`_gather_rows` in NumPy: one ``take`` per family, summed in family order (the same values)."""
    part = out[start:stop]
    part[:] = 0.0
    buffer = np.empty(stop - start)
    for a in range(cells.shape[1]):
        np.take(table, cells[start:stop, a], out=buffer)
        part += buffer


def _gather_cost(cells, table, out, start, stop) -> float:
    """Estimated seconds of :func:`_numpy_gather` (about 5 ns per unit and family, measured on alarm)."""
    return 5e-9 * (stop - start) * cells.shape[1]


@compiled(nogil=True, fallback=_numpy_gather, cost=_gather_cost)
def _gather_rows(cells, table, out, start, stop):  # pragma: no cover - compiled
    """``out[u] = sum_a table[cells[u, a]]`` for units ``start:stop``, families summed in order.

    One pass over a unit's row of cells: about 20 times NumPy's one ``take`` per
    family, whose index columns NumPy first converts to ``intp``
    (``python benchmarks/selection.py --summarize-rows 10000000``).
    """
    for u in range(start, stop):
        total = 0.0
        for a in range(cells.shape[1]):
            total += table[cells[u, a]]
        out[u] = total


def _numpy_scatter(cells, weights, out):
    """:func:`_scatter_rows` with SciPy: the (cells x units) indicator matrix times the weightings."""
    n_units, width = cells.shape
    if width == 0:  # no family has a feature (every column constant): every cell sum is 0
        out[:] = 0
        return
    indicator = sp.csc_matrix((np.ones(n_units * width, dtype=out.dtype), cells.ravel(),
                               np.arange(0, n_units * width + 1, width)), shape=(out.shape[0], n_units))
    out[:] = indicator @ np.ascontiguousarray(weights.T, dtype=out.dtype)


def _scatter_cost(cells, weights, out) -> float:
    """Estimated seconds of :func:`_numpy_scatter` (about 0.3 ns per unit, family and weighting, measured on alarm).

    Infinite beyond 2**22 (unit, family) pairs, whose indicator matrix (12 bytes a pair) is not worth its memory:
    such a job compiles at once.
    """
    return float("inf") if cells.size > 2**22 else 3e-10 * weights.size * cells.shape[1]


@compiled(nogil=True, fallback=_numpy_scatter, cost=_scatter_cost)
def _scatter_rows(cells, weights, out):  # pragma: no cover - compiled
    """``out[c, j] = sum of weights[j, u]`` over the units ``u`` that fall in cell ``c``.

    The count tables of a batch of permutations (a row of ``weights`` each, as they are
    drawn): 256 units at a time are turned into a small (units x weightings) block in
    ``out``'s type, then each unit's row of cells is read once and its row of the block
    added to each of its cells' rows (``out`` has a last row for the placeholder cell of
    incomplete units).  No (cells x units) matrix and no transposed copy of the draws
    (``python benchmarks/permutations.py``, (b)).
    """
    out[:] = 0
    k = weights.shape[0]
    block = np.empty((256, k), dtype=out.dtype)
    for start in range(0, cells.shape[0], 256):
        stop = min(cells.shape[0], start + 256)
        for j in range(k):
            for u in range(start, stop):
                block[u - start, j] = weights[j, u]
        for u in range(start, stop):
            for a in range(cells.shape[1]):
                row = out[cells[u, a]]
                for j in range(k):
                    row[j] += block[u - start, j]


#: Units whose cell index is computed a family at a time before it is transposed into place.
CELL_BLOCK = 1 << 15


class CellLayout:
    """The cells of a kernel's families, side by side: where each family's cells start, and statistics over them.

    What the permutation engine needs of a kernel on a client that holds no rows
    (:class:`KernelColumns` adds the rows).

    Parameters
    ----------
    kernel : CellKernel

    Attributes
    ----------
    active : tuple of int
        Families with features.
    offsets : ndarray of int64, shape (len(active) + 1,)
        First cell of each active family.
    n_cells : int
    """

    def __init__(self, kernel: CellKernel):
        self.kernel = kernel
        active = [i for i in range(len(kernel.families)) if kernel.block_width(i)]
        sizes = [kernel.cell_features(i).shape[0] for i in active]
        self.active = tuple(active)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_cells = int(self.offsets[-1])

    def mmd2_by_family(self, difference: np.ndarray) -> np.ndarray:
        """Per-family squared MMD (eq. 10) of cell-frequency differences (:func:`~bnfisher.kernels.mmd.family_mmd2`).

        Parameters
        ----------
        difference : ndarray of shape (n_cells, batch)
            Cell frequencies of one side minus the other's, cells as in :attr:`offsets`.

        Returns
        -------
        ndarray of shape (batch, len(active))
        """
        cards = self.kernel.network.cardinalities
        out = np.empty((difference.shape[1], len(self.active)))
        for a, i in enumerate(self.active):
            table = self.kernel.cell_features(i).reshape(-1, int(cards[i]), self.kernel.block_width(i))
            out[:, a] = family_mmd2(table, difference[self.offsets[a]: self.offsets[a + 1]])
        return out

    def marginals(self, difference: np.ndarray) -> list:
        """Each family's child marginal from cell values (summed over parent configurations).

        Parameters
        ----------
        difference : ndarray of shape (n_cells, batch)
            Cell values (counts, frequencies or their differences), cells as in :attr:`offsets`.

        Returns
        -------
        list of ndarray of shape (r_i, batch)
            One per active family, in :attr:`active` order.
        """
        cards = self.kernel.network.cardinalities
        return [difference[self.offsets[a]: self.offsets[a + 1]].reshape(-1, int(cards[i]), difference.shape[1])
                .sum(axis=0) for a, i in enumerate(self.active)]


class KernelColumns(CellLayout):
    r"""The rows of a data set as cells of a kernel's families: kernel columns by gathers, in ``O(N n)``.

    Row ``x`` falls in one cell per family (a complete row) or spreads a posterior
    weight over cells (a row with missing values: the marginalized kernel).  With
    ``M`` the block-diagonal matrix of within-configuration cell inner products,
    ``M[c, c'] = [pi(c) = pi(c')] <F[c], F[c']>``,

    .. math::

        K(x, y) = \sum_f \sum_{c, c'} w_x(c) \, M_f[c, c'] \, w_y(c'),

    so a column ``K(., y)`` is one lookup table ``M w_y`` (``sum_i r_i`` entries) and
    ``n`` gathers of it over the rows: ``O(N n)`` whatever the cardinalities, and
    never the ``N x sum_i r_i`` embedding.  Identical rows are stored once (*units*,
    numbered by first occurrence) with their multiplicities.

    Parameters
    ----------
    kernel : CellKernel
    encoded : EncodedData
        Rows encoded with ``kernel.encode``.
    batches : ndarray of int, optional
        Bounds of batches of distinct rows (``encoded`` holding distinct rows) whose posterior
        weights are computed together: a unit's weights then depend on its block alone, not on
        the other rows (the permutation engine's buckets).  Default: all at once.
    distinct : bool, default=False
        Whether ``encoded``'s rows are distinct already (the permutation engine's units):
        then they are the units as they are, and the reduction is skipped.

    Attributes
    ----------
    n_rows, n_units : int
        Rows, and distinct rows (units).
    first : ndarray of int, shape (n_units,)
        A unit's first row.
    inverse : ndarray of int, shape (n_rows,)
        The unit of every row.
    multiplicity : ndarray of int, shape (n_units,)
    diag : ndarray of shape (n_units,)
        ``K(u, u)``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher import BayesianNetwork, FisherKernel
    >>> states = {"A": [0, 1], "B": [0, 1]}
    >>> net = BayesianNetwork({"B": ["A"]}, {"A": [0.7, 0.3], "B": [[0.4, 0.6], [0.2, 0.8]]}, states)
    >>> kernel = FisherKernel(net)
    >>> X = np.array([[0, 0], [1, 1], [0, 0]])
    >>> columns = kernel.columns(X)
    >>> np.allclose(columns.column(1)[columns.inverse], kernel.gram(X)[:, 1])
    True
    """

    def __init__(self, kernel: CellKernel, encoded: EncodedData, *, batches: np.ndarray | None = None,
                 distinct: bool = False):
        super().__init__(kernel)
        codes = encoded.codes
        self.n_rows = codes.shape[0]
        self.first, self.inverse, self.multiplicity, units = distinct_units(codes, kernel.network.cardinalities,
                                                                            distinct=distinct)
        self.n_units = self.first.size
        self.cell_features = cell_feature_matrix(kernel, self.active, np.diff(self.offsets).tolist())
        self.cell_gram = cell_gram_matrix(kernel, self.active, self.offsets)
        complete = units.min(axis=1) >= 0 if self.n_units and codes.shape[1] else np.ones(self.n_units, bool)
        self.incomplete = np.flatnonzero(~complete)
        self.cells = self._cell_index(units, complete)
        self.incomplete_weights = incomplete_cell_weights(kernel, encoded, units, self.incomplete, self.active,
                                                          self.offsets, batches)
        self.scale = np.ones(self.n_units)
        diag = self._gather(self.cell_gram.diagonal())
        if self.incomplete.size:
            W = self.incomplete_weights
            diag[self.incomplete] = np.asarray((W @ self.cell_gram).multiply(W).sum(axis=1)).ravel()
        if kernel.normalize:  # cosine normalisation: every unit's weights scaled by 1 / sqrt(K(u, u))
            with np.errstate(divide="ignore"):
                self.scale = np.where(diag > 0, 1.0 / np.sqrt(diag), 0.0)
            self.incomplete_weights = sp.csr_matrix(sp.diags(self.scale[self.incomplete]) @ self.incomplete_weights)
            diag = np.where(diag > 0, 1.0, 0.0)
        self.diag = diag
        self._lookup = np.zeros(self.n_cells + 1)

    def _cell_index(self, units: np.ndarray, complete: np.ndarray) -> np.ndarray:
        """Return the global cell of every complete unit in every active family; incomplete units get ``n_cells``.

        C order (a unit's cells side by side, for the gathers), in the smallest type that
        holds them (memory traffic sets the gathers' pace); ``n_cells`` is a slot of the
        lookup table that always holds 0.  Written :data:`CELL_BLOCK` units at a time, a
        family after another, then transposed into place: no second copy of the index.
        """
        kernel, active, offsets = self.kernel, self.active, self.offsets
        index_type = next(t for t in (np.uint16, np.int32, np.int64) if self.n_cells <= np.iinfo(t).max)
        cells = np.full((self.n_units, len(active)), self.n_cells, dtype=index_type)
        check_allocation(float(cells.nbytes), f"The cell index of {self.n_units} distinct rows",
                         "summarise a uniform sample of the rows.")
        done = np.flatnonzero(complete)
        every = done.size == self.n_units  # (then no copy of the units and no fancy indexing)
        complete_units = units if every else units[done]
        block = np.empty((len(active), CELL_BLOCK), dtype=index_type)  # a family's cells contiguous, then transposed
        for start in range(0, complete_units.shape[0], CELL_BLOCK):
            chunk = complete_units[start: start + CELL_BLOCK]
            for a, i in enumerate(active):
                block[a, : chunk.shape[0]] = offsets[a] + kernel.cell_index(chunk, i)
            rows = slice(start, start + chunk.shape[0]) if every else done[start: start + chunk.shape[0]]
            cells[rows] = block[:, : chunk.shape[0]].T
        return cells

    def _gather(self, lookup: np.ndarray) -> np.ndarray:
        """``sum_f lookup[cell_f(u)]`` for every complete unit (0 for incomplete ones), unscaled."""
        table = lookup if lookup.size == self.n_cells + 1 else np.append(lookup, 0.0)
        total = np.empty(self.n_units)
        n_units, width = self.cells.shape
        threads = threads_for(n_units * width)
        bounds = np.linspace(0, n_units, threads + 1).astype(np.int64)
        # Threads write disjoint slices, each unit's sum in family order: the same values on any number of cores.
        list(map_threads(lambda part: _gather_rows(self.cells, table, total, bounds[part], bounds[part + 1]),
                         range(threads), n_jobs=threads))
        return total

    def unit_weights(self, unit: int) -> tuple[np.ndarray, np.ndarray]:
        """Cells and weights of one unit (scaled for a normalized kernel).

        Parameters
        ----------
        unit : int

        Returns
        -------
        cells : ndarray of int
        weights : ndarray of float
        """
        position = np.searchsorted(self.incomplete, unit)
        if position < self.incomplete.size and self.incomplete[position] == unit:
            W = self.incomplete_weights
            start, stop = W.indptr[position], W.indptr[position + 1]
            return W.indices[start:stop].astype(np.int64), W.data[start:stop]
        return self.cells[unit].astype(np.int64), np.full(self.cells.shape[1], self.scale[unit])

    def renumber(self, order: np.ndarray) -> None:
        """Renumber the units in place: unit ``p`` becomes the former unit ``order[p]``.

        Every unit-indexed attribute follows (the cell index is rewritten in the new
        order, so passes over it in unit order read it front to back).

        Parameters
        ----------
        order : ndarray of int, shape (n_units,)
            A permutation of the units.
        """
        order = np.asarray(order)
        rank = np.empty(self.n_units, dtype=np.intp)
        rank[order] = np.arange(self.n_units)
        self.cells = self.cells[order]
        self.first, self.multiplicity = self.first[order], self.multiplicity[order]
        self.diag, self.scale = self.diag[order], self.scale[order]
        self.inverse = rank[self.inverse]
        moved = rank[self.incomplete]
        by_unit = np.argsort(moved, kind="stable")
        self.incomplete, self.incomplete_weights = moved[by_unit], self.incomplete_weights[by_unit]

    def inner(self, lookup: np.ndarray) -> np.ndarray:
        """``sum_c w_u(c) lookup[c]`` for every unit (``lookup`` over the cells).

        Parameters
        ----------
        lookup : ndarray of shape (n_cells,)

        Returns
        -------
        ndarray of shape (n_units,)
        """
        out = self._gather(lookup)
        if self.kernel.normalize:
            out *= self.scale
        if self.incomplete.size:
            out[self.incomplete] = self.incomplete_weights @ lookup[: self.n_cells]
        return out

    def column(self, unit: int) -> np.ndarray:
        """Kernel column ``K(., u)`` over the units: one lookup table and ``n`` gathers.

        Parameters
        ----------
        unit : int

        Returns
        -------
        ndarray of shape (n_units,)
        """
        cells, weights = self.unit_weights(unit)
        M = self.cell_gram
        starts, stops = M.indptr[cells], M.indptr[cells + 1]
        lengths = stops - starts
        positions = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(
            lengths.sum())
        touched = M.indices[positions]
        lookup = self._lookup
        np.add.at(lookup, touched, np.repeat(weights, lengths) * M.data[positions])
        out = self.inner(lookup)
        lookup[touched] = 0.0
        return out

    def cell_counts(self, groups: np.ndarray) -> np.ndarray:
        """Return the summed cell weights of groups of units: row ``g`` is ``sum_{u in groups[g]} w_u``.

        Parameters
        ----------
        groups : ndarray of int, shape (m, k)
            Units (repeats allowed).

        Returns
        -------
        ndarray of shape (m, n_cells)
        """
        m, k = groups.shape
        width = self.n_cells + 1  # the last column collects incomplete units' placeholder cell
        flat = (np.arange(m)[:, None, None] * width + self.cells[groups]).ravel()
        values = np.broadcast_to(self.scale[groups][:, :, None], (m, k, self.cells.shape[1])).ravel()
        counts = np.bincount(flat, weights=values, minlength=m * width).reshape(m, width)[:, : self.n_cells]
        if self.incomplete.size:
            where = np.searchsorted(self.incomplete, groups)
            hit = (where < self.incomplete.size) & (self.incomplete[np.minimum(where, self.incomplete.size - 1)]
                                                   == groups)
            if hit.any():
                g, position = np.nonzero(hit)
                indicator = sp.csr_matrix((np.ones(g.size), (g, where[g, position])),
                                          shape=(m, self.incomplete.size))
                counts = counts + (indicator @ self.incomplete_weights).toarray()
        return counts

    def has_incomplete(self, units: slice = slice(None)) -> bool:
        """Whether a unit in ``units`` (a range) has a missing cell.

        Parameters
        ----------
        units : slice, default=all

        Returns
        -------
        bool
        """
        start, stop, _ = units.indices(self.n_units)
        return bool(np.searchsorted(self.incomplete, stop) > np.searchsorted(self.incomplete, start))

    def cell_sums(self, weights: np.ndarray, *, dtype=np.float64, out: np.ndarray | None = None,
                  units: slice = slice(None)) -> np.ndarray:
        """Return the summed cell weights of every weighting of the units: column ``j`` is ``sum_u weights[j, u] w_u``.

        A batch of count tables (a weighting per permutation, the copies of each distinct
        row it sends to the first sample) in one pass over the cell index (compiled),
        without a (cells x units) matrix; the incomplete units' posterior weights are
        added by one sparse product.

        Parameters
        ----------
        weights : ndarray of shape (k, n_units) or (k, units' length)
            A weighting per row (integer copies or floats), rows contiguous.
        dtype : float32 or float64, default=float64
            Of the sums; float32 sums of integer weights are exact below 2**24.
        out : ndarray of shape (n_cells + 1, k), optional
            Scratch of ``dtype`` (its last row collects incomplete units' placeholder cell).
        units : slice, default=all
            A range of units that ``weights`` weigh (a hash bucket of the permutation engine).

        Returns
        -------
        ndarray of shape (n_cells, k)
            A view of ``out``.
        """
        if out is None:
            out = np.empty((self.n_cells + 1, weights.shape[0]), dtype=dtype)
        start, stop, _ = units.indices(self.n_units)
        # (incomplete units point at the placeholder cell; their posterior weights are scaled already)
        _scatter_rows(self.cells[start:stop], weights * self.scale[start:stop] if self.kernel.normalize else weights,
                      out)
        counts = out[: self.n_cells]
        if self.has_incomplete(units):
            lo, hi = np.searchsorted(self.incomplete, [start, stop])
            counts += self.incomplete_weights[lo:hi].T @ weights[:, self.incomplete[lo:hi] - start].T
        return counts

    def weighted_cells(self, weights: np.ndarray) -> np.ndarray:
        """``sum_u weights[u] w_u``: the cell vector of a weighted set of units (:meth:`cell_sums` of one weighting).

        Parameters
        ----------
        weights : ndarray of shape (n_units,)

        Returns
        -------
        ndarray of shape (n_cells,)
        """
        return self.cell_sums(np.asarray(weights, dtype=np.float64)[None, :])[:, 0].copy()
