r"""Family kernels: the kernel API that the Fisher and overlap kernels share (feature map, set kernel, MMD).

The set kernel is Sec. 6.2 of the paper, the MMD Sec. 6.3, eq. 10.

The public kernel API
---------------------
Both kernels here are *family kernels*: a sum over families (a variable with its
parents) of an inner product of per-cell feature rows.  :class:`FamilyKernel`
declares that structure once -- ``families``, ``cell_index``, ``cell_features``,
``cell_norms``, ``block_offsets``, ``mean_embedding_from_counts`` -- and everything
built on a kernel (selection, the two-sample test, interpretation) uses only it,
so :class:`FisherKernel` and :class:`OverlapKernel` are interchangeable there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bnfisher._utils.lazy import sparse as sp
from bnfisher._utils.memory import check_allocation
from bnfisher.bn.inference.evidence import family_cell_weights
from bnfisher.data.counts import configuration_index, n_configurations
from bnfisher.data.providers import ExpectedCountsProvider, as_provider, backend_for, in_memory
from bnfisher.data.schema import EncodedData
from bnfisher.exceptions import DataError, OptionError
from bnfisher.kernels.columns import KernelColumns
from bnfisher.kernels.expected import expected_feature_map
from bnfisher.kernels.mmd import family_mmd2

if TYPE_CHECKING:
    from bnfisher.bn.network import BayesianNetwork

__all__ = ['FamilyKernel']


class FamilyKernel:
    r"""A kernel that is a sum over families of inner products of per-cell feature rows.

    For family ``f`` (parents then the child, column indices in
    ``network.variables`` order) a row ``x`` falls in one *cell* ``c_f(x)`` (its
    parent configuration and child state, mixed radix, C order).  The kernel is

    .. math::

        K(x, y) = \sum_f [\pi_f(x) = \pi_f(y)] \, \langle F_f[c_f(x)], F_f[c_f(y)] \rangle,

    with ``F_f`` the ``(cells, width)`` table :meth:`cell_features`.  The feature map
    places ``F_f[c_f(x)]`` in the block of the row's parent configuration, so
    ``K = Phi Phi^T`` exactly and mean embeddings are functions of count tables.

    Subclasses set ``network`` and build the per-family tables; this class gives
    every derived operation.  Not instantiated directly.

    Attributes
    ----------
    network : BayesianNetwork
    families : tuple of tuple of int
        ``parents + (child,)`` column indices, one per variable, in ``network.variables`` order.
    block_offsets : ndarray of int
        Feature column where each family's block starts (length ``n_families + 1``).
    n_features_ : int

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> isinstance(kernel, bf.kernels.FamilyKernel), len(kernel.families) == len(network.variables)
    (True, True)
    """

    normalize = False
    network: BayesianNetwork
    handle_unknown: str
    families: tuple
    block_offsets: np.ndarray
    n_features_: int
    _tables: list
    _valid: list

    def _set_tables(self, tables: list, valid: list) -> None:
        """Store the per-family cell feature tables ``(q r, d)`` and their validity masks ``(q r,)``."""
        network = self.network
        self.families = tuple(tuple(p) + (i,) for i, p in enumerate(network.parent_indices()))
        self._tables = [np.ascontiguousarray(t) for t in tables]
        check_allocation(sum(t.nbytes for t in self._tables), "The kernel's per-cell feature tables",
                         "limit the parents (`max_parents`) or use variables with fewer states.")
        for t in self._tables:
            t.setflags(write=False)
        self._valid = valid
        widths = np.array([t.shape[1] for t in self._tables], dtype=np.int64)
        configurations = np.array([n_configurations(network.cardinalities, f[:-1]) for f in self.families],
                                  dtype=np.int64)
        self.block_offsets = np.concatenate([[0], np.cumsum(widths * configurations)]).astype(np.int64)
        self.n_features_ = int(self.block_offsets[-1])
        self._norms = None

    # ------------------------------------------------------------ data
    @property
    def schema(self):
        """The network's :class:`~bnfisher.data.Schema`: how every input is encoded."""
        return self.network.schema

    handle_unknown = "error"

    def encode(self, X) -> EncodedData:
        """Return ``X`` encoded with the network's schema (columns in ``network.variables`` order).

        Missing values (NaN, None, the schema's ``na_values``; -1 in an array of codes)
        become -1 and are marginalized (paper Sec. 8); so do values that are not states
        when ``handle_unknown="marginalize"``.

        Parameters
        ----------
        X : DataFrame, ndarray of int or EncodedData
            Labels in a DataFrame (extra columns ignored), or codes in an array whose
            columns follow the declared order ``network.schema.variables``.

        Returns
        -------
        EncodedData
        """
        return self.network.encode(X, missing="allow", handle_unknown=self.handle_unknown)

    def cell_weights(self, X) -> list:
        """Return each row's distribution over every family's cells (the marginalized kernel's statistic).

        A complete row puts weight 1 on one cell per family; a row with missing values
        spreads its weight by the exact posterior of the family given the row's observed
        values.  The expected feature map is ``E[Phi(Z) | x] = sum_cells weight * Phi(cell)``.

        Parameters
        ----------
        X : DataFrame, ndarray of int or EncodedData

        Returns
        -------
        list of (rows, cells, weights)
            One triple of arrays per family (see
            :func:`bnfisher.bn.inference.family_cell_weights`).

        Raises
        ------
        DataError
            When weight falls on a cell where the kernel is undefined (probability 0).
        """
        codes = self.encode(X).codes
        triples = family_cell_weights(self.network, codes, list(self.families))
        for i, (rows, cells, weights) in enumerate(triples):
            bad = ~self._valid[i][cells] & (weights > 0)
            if bad.any():
                row = int(rows[np.argmax(bad)])
                v = self.network.variables[i]
                raise DataError(f"Row {row} puts weight on a configuration of {v!r} and its parents with probability "
                                "0 under the network; the Fisher kernel is undefined there. Fit with a pseudocount "
                                "> 0.")
        return triples

    def provider(self, X):
        """Return a counts provider over ``X``, encoded with the network's schema (:func:`~bnfisher.as_provider`).

        Distributed data is read with ``missing="allow"``: the kernel marginalizes missing cells.

        Parameters
        ----------
        X : DataFrame, ndarray of int, EncodedData, provider, Dask DataFrame or path

        Returns
        -------
        CountsProvider
        """
        return as_provider(X, self.schema, missing="error" if in_memory(X) else "allow")

    # ------------------------------------------------------- families
    def cell_features(self, i: int) -> np.ndarray:
        """Read-only ``(q_i r_i, d_i)`` feature rows of family ``i``'s cells (zeros for impossible cells).

        Parameters
        ----------
        i : int
            Family (variable) index in ``network.variables``.

        Returns
        -------
        ndarray of shape (q_i r_i, d_i)
        """
        return self._tables[i]

    def block_width(self, i: int) -> int:
        """Width ``d_i`` of family ``i``'s feature rows (0: the family contributes nothing).

        Parameters
        ----------
        i : int

        Returns
        -------
        int
        """
        return int(self._tables[i].shape[1])

    def feature_columns(self, i: int, cells: np.ndarray) -> np.ndarray:
        """Feature columns of family ``i``'s cells: the ``d_i`` columns of each cell's configuration block.

        Parameters
        ----------
        i : int
        cells : ndarray of int, shape (m,)
            Cell indices of family ``i`` (mixed radix over ``families[i]``).

        Returns
        -------
        ndarray of int64, shape (m, d_i)
        """
        d = self.block_width(i)
        config = np.asarray(cells) // int(self.network.cardinalities[i])
        return (self.block_offsets[i] + config * d)[:, None] + np.arange(d)

    def cell_valid(self, i: int) -> np.ndarray:
        """``(q_i r_i,)`` bool: False where the kernel is undefined (a cell of probability 0).

        Parameters
        ----------
        i : int

        Returns
        -------
        ndarray of bool
        """
        return self._valid[i]

    def cell_norms(self) -> list:
        """Per family, ``K_f(z, z)`` of every cell ``z``: ``K(x, x) = sum_f norms[f][c_f(x)]``.

        Returns
        -------
        list of ndarray
        """
        if self._norms is None:
            self._norms = [np.einsum("cd,cd->c", t, t) for t in self._tables]
        return self._norms

    def cell_index(self, codes: np.ndarray, i: int) -> np.ndarray:
        """Cell of family ``i`` of every row of ``codes`` (mixed radix over ``families[i]``), checked possible.

        ``codes`` has its columns in ``network.variables`` order, as ``encode(X).codes`` has.

        Raises
        ------
        DataError
            When a row falls in a cell where the kernel is undefined (probability 0).

        Parameters
        ----------
        codes : ndarray of shape (n_rows, n_variables)
        i : int

        Returns
        -------
        ndarray of shape (n_rows,), dtype intp
        """
        flat = configuration_index(codes, self.families[i], self.network.cardinalities)
        bad = ~self._valid[i][flat]
        if bad.any():
            row = int(np.argmax(bad))
            v = self.network.variables[i]
            raise DataError(
                f"Row {row} has {v!r} = {self.network.states[v][codes[row, i]]!r}, which has probability 0 "
                "under the network given its parents; the Fisher kernel is undefined there (Theorem 1 assumes "
                "theta > 0). Fit the network with a pseudocount > 0."
            )
        return flat

    # ----------------------------------------------------------- rows
    def embed(self, X) -> sp.csr_matrix:
        """Exact feature map: ``embed(X) @ embed(Y).T == gram(X, Y)``.

        Parameters
        ----------
        X : DataFrame, ndarray of int, EncodedData or Dask DataFrame
            Rows to embed.

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_rows, n_features)
            (For a Dask DataFrame: a Dask array of CSR blocks, one per partition.)
            Column ``block_offsets[i] + j * d_i + k`` belongs to family ``i``, parent
            configuration ``j`` (mixed radix, C order) and feature ``k``
            (:meth:`feature_names`).
        """
        backend = backend_for(X)
        if backend is not None:
            return backend.embed(self, X)
        encoded = self.encode(X)
        if encoded.n_rows and encoded.codes.min() < 0:
            matrix = self.embed_weights(self.cell_weights(encoded), encoded.n_rows)  # the marginalized kernel
        else:
            matrix = self._embed_codes(encoded.codes)
        if self.normalize:
            norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
            with np.errstate(divide="ignore"):  # zero rows stay zero
                scale = np.where(norms > 0, 1.0 / norms, 0.0)
            matrix = sp.csr_matrix(sp.diags(scale) @ matrix)
        return matrix

    def _embed_codes(self, codes: np.ndarray) -> sp.csr_matrix:
        n_rows = codes.shape[0]
        widths = [self.block_width(i) for i in range(len(self.families))]
        width = int(sum(widths))
        # data + indices while building, and scipy's copy of both: 32 bytes per non-zero.
        check_allocation(32.0 * n_rows * width, f"The feature map of {n_rows} rows ({width} non-zeros each)",
                         "embed the rows in blocks, or use `mean_embedding`, `mmd` or `set_kernel`, which need "
                         "only count tables.")
        data = np.empty((n_rows, width))
        indices = np.empty((n_rows, width), dtype=np.int64)
        start = 0
        for i, d in enumerate(widths):
            if d == 0:
                continue
            flat = self.cell_index(codes, i)
            data[:, start : start + d] = self._tables[i][flat]
            indices[:, start : start + d] = self.feature_columns(i, flat)
            start += d
        indptr = np.arange(n_rows + 1, dtype=np.int64) * width  # width 0: every variable has one state
        return sp.csr_matrix((data.ravel(), indices.ravel(), indptr), shape=(n_rows, self.n_features_))

    def embed_weights(self, weights: list, n_rows: int) -> sp.csr_matrix:
        """Return the (expected) feature map from cell weights: row ``x`` gets ``sum_cells weight * Phi(cell)``.

        Parameters
        ----------
        weights : list of (rows, cells, weights)
            From :meth:`cell_weights`, one triple per family.
        n_rows : int

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_rows, n_features)
        """
        return expected_feature_map(self._tables, self.network.cardinalities, self.block_offsets, self.n_features_,
                                    weights, n_rows)

    def _raw_diag(self, codes: np.ndarray) -> np.ndarray:
        if codes.shape[0] and codes.min() < 0:  # marginalized: ||E[Phi | x]||^2
            encoded = EncodedData(codes, self.network.variables, dict(self.network.states), schema=self.network.schema)
            E = self.embed_weights(self.cell_weights(encoded), encoded.n_rows)
            return np.asarray(E.multiply(E).sum(axis=1)).ravel()
        norms = self.cell_norms()
        total = np.zeros(codes.shape[0])
        for i in range(len(self.families)):
            if self.block_width(i):
                total += norms[i][self.cell_index(codes, i)]
        return total

    def diag(self, X) -> np.ndarray:
        """``K(x, x)`` for every row, without building the Gram matrix.

        Parameters
        ----------
        X : DataFrame, ndarray of int or EncodedData

        Returns
        -------
        ndarray of shape (n_rows,)
        """
        raw = self._raw_diag(self.encode(X).codes)
        return np.where(raw > 0, 1.0, 0.0) if self.normalize else raw

    def gram(self, X, Y=None, dense_output: bool = True):
        """Kernel matrix ``K[a, b] = K(X[a], Y[b])``.

        Parameters
        ----------
        X, Y : DataFrame, ndarray of int or EncodedData
            ``Y`` defaults to ``X``.
        dense_output : bool, default=True
            Return an ndarray (else a sparse matrix from the sparse feature map).

        Returns
        -------
        ndarray or sparse matrix of shape (n_rows_X, n_rows_Y)
        """
        EX = self.embed(X)
        EY = EX if Y is None else self.embed(Y)
        product = (EX @ EY.T).tocsr()
        return product.toarray() if dense_output else product

    # ----------------------------------------------------------- sets
    def mean_embedding(self, X) -> np.ndarray:
        """Mean of the feature map over the rows of ``X``, from count tables.

        Without normalisation this needs only the family counts ``N_ijk``: one
        pass over the data (distributed for Dask data).

        Parameters
        ----------
        X : DataFrame, ndarray of int, EncodedData, counts provider or Dask DataFrame

        Returns
        -------
        ndarray of shape (n_features,)
            Zeros for an empty ``X``.
        """
        if self.normalize:
            encoded = self.encode(X)
            if encoded.n_rows == 0:
                return np.zeros(self.n_features_)
            return np.asarray(self.embed(encoded).mean(axis=0)).ravel()
        counts, n_rows = self.frequency_counts(X)
        if n_rows == 0:
            return np.zeros(self.n_features_)
        return self.mean_embedding_from_counts(counts, n_rows)

    def frequency_counts(self, X) -> tuple[list, float]:
        """Count tables of every family (expected counts for rows with missing cells) and the number of rows.

        Parameters
        ----------
        X : DataFrame, ndarray of int, EncodedData, counts provider or Dask DataFrame

        Returns
        -------
        counts : list of ndarray
            One table per family, in ``families`` order, ``q_i * r_i`` cells each.
        n_rows : int
        """
        if in_memory(X):
            encoded = self.encode(X)
            if encoded.n_rows and encoded.codes.min() < 0:  # expected count tables of the incomplete rows
                counts = [np.bincount(cells, weights=weights, minlength=self._tables[i].shape[0])
                          for i, (_, cells, weights) in enumerate(self.cell_weights(encoded))]
                return counts, encoded.n_rows
            X = encoded
        provider = self.provider(X)
        n_rows = provider.n_rows
        if n_rows == 0:
            return [np.zeros(t.shape[0]) for t in self._tables], 0
        if isinstance(provider, ExpectedCountsProvider) and provider.missing == "allow":
            # Distributed rows that may hold missing values: expected count tables, partition by partition.
            return provider.expected_counts(self.network, self.families), n_rows
        return self.family_counts(provider), n_rows

    def family_counts(self, provider) -> list:
        """Count tables of the kernel's families from a counts provider (one pass), columns matched by name.

        Parameters
        ----------
        provider : CountsProvider
            With the network's states for every variable.

        Returns
        -------
        list of ndarray
            One table per family, in ``families`` order.
        """
        column = {v: i for i, v in enumerate(provider.variables)}
        names = self.network.variables
        return provider.counts([tuple(column[names[c]] for c in family) for family in self.families])

    def mean_embedding_from_counts(self, family_counts: list, n_rows: int | float) -> np.ndarray:
        """Mean embedding from family count tables.

        Parameters
        ----------
        family_counts : list
            ``family_counts[i]`` is the count table of ``families[i]`` (any shape with
            ``q_i * r_i`` cells), e.g. from :meth:`family_counts`.
        n_rows : int or float
            Number (or total weight) of rows counted.

        Returns
        -------
        ndarray of shape (n_features,)

        Raises
        ------
        DataError
            When the counts put rows in a cell where the kernel is undefined.
        """
        if self.normalize:
            raise OptionError("With normalize=True the mean embedding is not a function of the counts.")
        mean = np.zeros(self.n_features_)
        cards = self.network.cardinalities
        for i in range(len(self.families)):
            d = self.block_width(i)
            if d == 0:
                continue
            counts = np.asarray(family_counts[i], dtype=np.float64).reshape(-1)
            self._check_counts(i, counts)
            r = int(cards[i])
            frequencies = (counts / n_rows).reshape(-1, r)
            table = self._tables[i].reshape(-1, r, d)
            # mu_ij = sum_a (N_ija / N) phi_ij(a): one block of width d per configuration j.
            mean[self.block_offsets[i] : self.block_offsets[i + 1]] = np.einsum(
                "ja,jad->jd", frequencies, table).reshape(-1)
        return mean

    def _check_counts(self, i: int, counts: np.ndarray) -> None:
        """Refuse counts in a cell where the kernel is undefined (a probability-0 configuration)."""
        if np.any(np.ravel(counts)[~self._valid[i]] > 0):
            v = self.network.variables[i]
            raise DataError(
                f"The data contains a configuration of {v!r} and its parents with probability 0 under the "
                "network; the Fisher kernel is undefined there. Fit with a pseudocount > 0."
            )

    def set_kernel(self, X, Y) -> float:
        """Set kernel ``K(X, Y) = (1 / NM) sum_l sum_m K(x_l, y_m)`` (Sec. 6.2).

        Computed as the inner product of mean embeddings (count tables only); 0
        when either set is empty, by the paper's convention.

        Parameters
        ----------
        X, Y : DataFrame, ndarray of int, EncodedData, counts provider or Dask DataFrame

        Returns
        -------
        float
        """
        return float(self.mean_embedding(X) @ self.mean_embedding(Y))

    def mmd(self, X, Y) -> float:
        """Squared maximum mean discrepancy ``d(X, Y)`` of eq. 10 (biased, ``MMD^2_b``).

        ``d(X, Y) = ||mu_X - mu_Y||^2`` with the mean embeddings computed from count
        tables, so the cost is linear in the number of rows.

        Parameters
        ----------
        X, Y : DataFrame, ndarray of int, EncodedData, counts provider or Dask DataFrame

        Returns
        -------
        float

        Raises
        ------
        DataError
            If either set is empty.
        """
        if self.normalize:  # cosine-normalised rows: the mean embedding is not a function of the counts
            means = []
            for data in (X, Y):
                encoded = self.encode(data)
                if encoded.n_rows == 0:
                    raise DataError("MMD needs two non-empty sets of rows.")
                means.append(self.mean_embedding(encoded))
            difference = means[0] - means[1]
            return float(difference @ difference)
        (counts_x, n_x), (counts_y, n_y) = (self.frequency_counts(data) for data in (X, Y))
        if n_x == 0 or n_y == 0:
            raise DataError("MMD needs two non-empty sets of rows.")
        cards = self.network.cardinalities
        total = 0.0
        for i in range(len(self.families)):
            d = self.block_width(i)
            if d == 0:
                continue
            self._check_counts(i, counts_x[i])
            self._check_counts(i, counts_y[i])
            table = self._tables[i].reshape(-1, int(cards[i]), d)
            difference = np.ravel(counts_x[i]) / n_x - np.ravel(counts_y[i]) / n_y
            total += float(family_mmd2(table, difference)[0])
        return total

    def columns(self, X) -> KernelColumns:
        """Return ``X`` as cells of the kernel's families, for kernel columns in ``O(N n)`` (:class:`KernelColumns`).

        Parameters
        ----------
        X : DataFrame, ndarray of int or EncodedData

        Returns
        -------
        KernelColumns
        """
        return KernelColumns(self, self.encode(X))

    # ---------------------------------------------------------- names
    def feature_names(self) -> list:
        """``(variable, parent configuration as a dict, feature label)`` for every feature column.

        Returns
        -------
        list of tuple
        """
        network = self.network
        names = []
        for i, v in enumerate(network.variables):
            parents = [network.variables[p] for p in self.families[i][:-1]]
            parent_cards = [len(network.states[p]) for p in parents]
            for j in range(n_configurations(parent_cards)):
                position = np.unravel_index(j, parent_cards) if parents else ()
                config = {p: network.states[p][k] for p, k in zip(parents, position)}
                for k in range(self.block_width(i)):
                    names.append((v, config, network.states[v][k]))
        return names
