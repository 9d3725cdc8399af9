r"""The Fisher kernel of a discrete Bayesian network (Theorem 1) and its exact feature map.

Also the set kernel (Sec. 6.2) and the MMD (Sec. 6.3, eq. 10).

Feature map
-----------
Theorem 1 (eq. 2) gives, per variable ``i`` with parent configuration ``j = pi_i(x)``,

.. math::

    K_i(x, y) = \frac{[\pi_i(x) = \pi_i(y)]}{P(\pi_i = j)}
                \left(\frac{[x_i = y_i]}{\theta_{i j x_i}} - 1\right).

With the block vector ``phi_ij(a)_k = (delta_ak / sqrt(theta_ijk) - sqrt(theta_ijk)) / sqrt(P_ij)``
one checks ``<phi_ij(a), phi_ij(b)> = (delta_ab / theta_ija - 1) / P_ij``, so
``K(x, y) = <Phi(x), Phi(y)>`` with ``Phi(x)`` the concatenation over variables of
``phi_{i, pi_i(x)}(x_i)`` placed in the block of configuration ``pi_i(x)``: an exact,
sparse map with ``sum_i r_i`` non-zeros per row.  Hence the set kernel is the inner
product of mean embeddings, and the mean embedding depends only on the family count
tables ``N_ijk`` -- MMD costs one pass over the rows, never an N x M matrix.

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

import numpy as np
import scipy.sparse as sp

from ._memory import check_allocation
from ._validation import check_option
from .counts import as_provider, configuration_index, distinct_rows, in_memory, n_configurations
from .encoding import EncodedData
from .exceptions import DataError, OptionError, OptionTypeError
from .inference import DEFAULT_MAX_TABLE_SIZE, INFERENCE_METHODS, parent_marginals
from .network import BayesianNetwork

__all__ = ["FamilyKernel", "FisherKernel", "KernelColumns", "OverlapKernel"]


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
    """

    normalize = False

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
        """The network's :class:`~bnfisher.encoding.Schema`: how every input is encoded."""
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
            :func:`bnfisher.inference.family_cell_weights`).

        Raises
        ------
        DataError
            When weight falls on a cell where the kernel is undefined (probability 0).
        """
        from .inference import family_cell_weights

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
        scipy.sparse.csr_matrix of shape (n_rows, n_features_)
            (For a Dask DataFrame: a Dask array of CSR blocks, one per partition.)
            Column ``block_offsets[i] + j * d_i + k`` belongs to family ``i``, parent
            configuration ``j`` (mixed radix, C order) and feature ``k``
            (:meth:`feature_names`).
        """
        from .scale import embed_distributed, is_distributed

        if is_distributed(X):
            return embed_distributed(self, X)
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
        scipy.sparse.csr_matrix of shape (n_rows, n_features_)
        """
        rows_all, columns_all, values_all = [], [], []
        for i, (rows, cells, cell_weights) in enumerate(weights):
            d = self.block_width(i)
            if d == 0:
                continue
            rows_all.append(np.repeat(rows, d))
            columns_all.append(self.feature_columns(i, cells).ravel())
            values_all.append((cell_weights[:, None] * self._tables[i][cells]).ravel())
        if not rows_all:
            return sp.csr_matrix((n_rows, self.n_features_))
        check_allocation(24.0 * sum(r.size for r in rows_all), f"The expected feature map of {n_rows} rows",
                         "embed the rows in blocks, or use `mean_embedding` / `mmd`.")
        matrix = sp.coo_matrix((np.concatenate(values_all), (np.concatenate(rows_all), np.concatenate(columns_all))),
                               shape=(n_rows, self.n_features_))
        return matrix.tocsr()  # duplicates (several cells of one configuration) are summed

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
        ndarray of shape (n_features_,)
            Zeros for an empty ``X``.
        """
        if self.normalize:
            encoded = self.encode(X)
            if encoded.n_rows == 0:
                return np.zeros(self.n_features_)
            return np.asarray(self.embed(encoded).mean(axis=0)).ravel()
        if in_memory(X):
            encoded = self.encode(X)
            if encoded.n_rows and encoded.codes.min() < 0:  # expected count tables of the incomplete rows
                counts = [np.bincount(cells, weights=weights, minlength=self._tables[i].shape[0])
                          for i, (_, cells, weights) in enumerate(self.cell_weights(encoded))]
                return self.mean_embedding_from_counts(counts, encoded.n_rows)
            X = encoded
        provider = self.provider(X)
        n_rows = provider.n_rows
        if n_rows == 0:
            return np.zeros(self.n_features_)
        if getattr(provider, "missing", "error") == "allow" and hasattr(provider, "expected_counts"):
            # Distributed rows that may hold missing values: expected count tables, partition by partition.
            return self.mean_embedding_from_counts(provider.expected_counts(self.network, self.families), n_rows)
        return self.mean_embedding_from_counts(self.family_counts(provider), n_rows)

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
        ndarray of shape (n_features_,)

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
            if np.any(counts[~self._valid[i]] > 0):
                v = self.network.variables[i]
                raise DataError(
                    f"The data contains a configuration of {v!r} and its parents with probability 0 under the "
                    "network; the Fisher kernel is undefined there. Fit with a pseudocount > 0."
                )
            r = int(cards[i])
            frequencies = (counts / n_rows).reshape(-1, r)
            table = self._tables[i].reshape(-1, r, d)
            # mu_ij = sum_a (N_ija / N) phi_ij(a): one block of width d per configuration j.
            mean[self.block_offsets[i] : self.block_offsets[i + 1]] = np.einsum(
                "ja,jad->jd", frequencies, table).reshape(-1)
        return mean

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
        means = []
        for data in (X, Y):
            source = self.encode(data) if self.normalize or in_memory(data) else self.provider(data)
            if source.n_rows == 0:
                raise DataError("MMD needs two non-empty sets of rows.")
            means.append(self.mean_embedding(source))
        difference = means[0] - means[1]
        return float(difference @ difference)

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


class KernelColumns:
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
    kernel : FamilyKernel
    encoded : EncodedData
        Rows encoded with ``kernel.encode``.

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

    def __init__(self, kernel: FamilyKernel, encoded: EncodedData):
        self.kernel = kernel
        codes = encoded.codes
        network = kernel.network
        cards = network.cardinalities
        self.n_rows = codes.shape[0]
        self.first, self.inverse, self.multiplicity = distinct_rows(codes, cards)
        self.n_units = self.first.size
        units = np.ascontiguousarray(codes[self.first])
        active = [i for i in range(len(kernel.families)) if kernel.block_width(i)]
        sizes = [kernel.cell_features(i).shape[0] for i in active]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_cells = int(offsets[-1])
        self.active, self.offsets = tuple(active), offsets
        # P: cells -> features (row c holds F_f[c] in the block of its configuration); M = P P^T.
        blocks = []
        for i, size in zip(active, sizes):
            d = kernel.block_width(i)
            columns = kernel.feature_columns(i, np.arange(size))
            blocks.append(sp.csr_matrix((kernel.cell_features(i).ravel(), columns.ravel(), np.arange(size + 1) * d),
                                        shape=(size, kernel.n_features_)))
        self.cell_features = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, kernel.n_features_))
        # M: per family and configuration the r x r Gram F_j F_j^T (batched BLAS), cell c's row holding the cells
        # of its configuration.
        check_allocation(8.0 * sum(size * int(cards[i]) for i, size in zip(active, sizes)),
                         "The within-configuration cell inner products", "limit the parents (`max_parents`) or use "
                         "variables with fewer states.")
        grams, columns_all, lengths = [], [], []
        for a, (i, size) in enumerate(zip(active, sizes)):
            r = int(cards[i])
            table = kernel.cell_features(i).reshape(size // r, r, -1)
            grams.append(np.matmul(table, table.transpose(0, 2, 1)).ravel())
            cells = np.arange(size).reshape(size // r, 1, r) + offsets[a]
            columns_all.append(np.broadcast_to(cells, (size // r, r, r)).ravel())
            lengths.append(np.full(size, r))
        if grams:
            indptr = np.concatenate([[0], np.cumsum(np.concatenate(lengths))])
            self.cell_gram = sp.csr_matrix((np.concatenate(grams), np.concatenate(columns_all), indptr),
                                           shape=(self.n_cells, self.n_cells))
        else:
            self.cell_gram = sp.csr_matrix((0, 0))
        complete = units.min(axis=1) >= 0 if self.n_units and codes.shape[1] else np.ones(self.n_units, bool)
        self.incomplete = np.flatnonzero(~complete)
        index_type = np.int32 if self.n_cells < 2**31 - 1 else np.int64
        # Global cell of every complete unit in every family (Fortran order: one contiguous column per family);
        # incomplete units point at cell n_cells, a slot of the lookup table that always holds 0.
        self.cells = np.full((self.n_units, len(active)), self.n_cells, dtype=index_type, order="F")
        check_allocation(float(self.cells.nbytes), f"The cell index of {self.n_units} distinct rows",
                         "summarise a uniform sample of the rows.")
        done = np.flatnonzero(complete)
        for a, i in enumerate(active):
            self.cells[done, a] = offsets[a] + kernel.cell_index(units[done], i)
        # Posterior cell weights of incomplete units (the marginalized kernel), one sparse row each.
        self.incomplete_weights = sp.csr_matrix((self.incomplete.size, self.n_cells))
        if self.incomplete.size:
            subset = EncodedData(units[self.incomplete], encoded.variables, encoded.states, schema=encoded.schema)
            triples = kernel.cell_weights(subset)
            self.incomplete_weights = sp.coo_matrix(
                (np.concatenate([triples[i][2] for i in active]),
                 (np.concatenate([triples[i][0] for i in active]),
                  np.concatenate([offsets[a] + triples[i][1] for a, i in enumerate(active)]))),
                shape=(self.incomplete.size, self.n_cells)).tocsr()
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

    def _gather(self, lookup: np.ndarray) -> np.ndarray:
        """``sum_f lookup[cell_f(u)]`` for every complete unit (0 for incomplete ones), unscaled."""
        table = lookup if lookup.size == self.n_cells + 1 else np.append(lookup, 0.0)
        total = np.zeros(self.n_units)
        buffer = np.empty(self.n_units)
        for a in range(self.cells.shape[1]):
            np.take(table, self.cells[:, a], out=buffer)
            total += buffer
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

    def inner(self, lookup: np.ndarray) -> np.ndarray:
        """``sum_c w_u(c) lookup[c]`` for every unit (``lookup`` over the cells).

        Parameters
        ----------
        lookup : ndarray of shape (n_cells,)

        Returns
        -------
        ndarray of shape (n_units,)
        """
        out = self.scale * self._gather(lookup)
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

    def cell_matrix(self, dtype=np.float64) -> sp.csr_matrix:
        """Return the ``(n_cells, n_units)`` matrix of every unit's cell weights (a count table is one product).

        Rows ``offsets[a]:offsets[a + 1]`` are the cells of family ``active[a]``.

        Parameters
        ----------
        dtype : numpy dtype, default=float64

        Returns
        -------
        scipy.sparse.csr_matrix
        """
        n_active = self.cells.shape[1]
        units = np.repeat(np.arange(self.n_units), n_active)
        cells = self.cells.ravel(order="C")
        keep = cells < self.n_cells
        values = np.repeat(self.scale, n_active)[keep].astype(dtype)
        matrix = sp.csr_matrix((values, (cells[keep], units[keep])), shape=(self.n_cells, self.n_units), dtype=dtype)
        if self.incomplete.size:
            W = self.incomplete_weights.tocoo()
            matrix = matrix + sp.csr_matrix((W.data.astype(dtype), (W.col, self.incomplete[W.row])),
                                            shape=matrix.shape, dtype=dtype)
        return matrix

    def weighted_cells(self, weights: np.ndarray) -> np.ndarray:
        """``sum_u weights[u] w_u``: the cell vector of a weighted set of units.

        Parameters
        ----------
        weights : ndarray of shape (n_units,)

        Returns
        -------
        ndarray of shape (n_cells,)
        """
        scaled = weights * self.scale
        total = np.zeros(self.n_cells + 1)
        for a in range(self.cells.shape[1]):
            total += np.bincount(self.cells[:, a], weights=scaled, minlength=self.n_cells + 1)
        total = total[: self.n_cells]
        if self.incomplete.size:
            total += self.incomplete_weights.T @ weights[self.incomplete]
        return total


class FisherKernel(FamilyKernel):
    """Fisher kernel ``K(x, y) = s(x)^T I^{-1} s(y)`` of a discrete Bayesian network.

    Parameters
    ----------
    network : BayesianNetwork
        The model; every CPT entry used by the data must be > 0 (Theorem 1
        assumes ``theta_ijk > 0``).
    inference : {"auto", "exact", "junction-tree", "elimination", "sampling"}, default="auto"
        How the parent marginals ``P(pi_i(D) = j)`` are computed; see
        :func:`bnfisher.inference.parent_marginals`.
    information : {"fisher", "identity"}, default="fisher"
        ``"fisher"`` is the Fisher kernel of Theorem 1.  ``"identity"`` is the
        "practical" kernel ``s(x)^T s(y)`` (no inverse Fisher information), with the
        score of eq. 8 (the last state of each variable is the reference state);
        it depends on the parametrisation and is offered for comparison.
    normalize : bool, default=False
        Cosine-normalise: ``K(x, y) / sqrt(K(x, x) K(y, y))``.
    max_table_size : int, default=DEFAULT_MAX_TABLE_SIZE
        Largest table exact inference may build.
    n_samples : int, default=1_000_000
        Rows drawn by the sampling engine.
    random_state : None, int or Generator, default=None
        Seed of the sampling engine (exact engines use no randomness).
    handle_unknown : {"error", "marginalize"}, default="error"
        A value that is not a state of its variable raises, or is treated as
        missing and marginalized.

    Notes
    -----
    Rows with missing values get the **marginalized kernel** (paper Sec. 8, after
    Tsuda et al. 2002): ``K(x, x') = sum_{h, h'} P(h | x) P(h' | x') K(z, z')``, which
    with the exact feature map is ``<E[Phi(Z) | x], E[Phi(Z') | x']>``.  Each row's
    expected features need the posterior of the families that touch a missing
    variable, from batched exact inference (:meth:`cell_weights`); complete rows
    keep the sparse one-cell-per-family path.  By Fisher's identity
    ``E[s(Z) | x]`` is the score of the observed-data likelihood.

    Attributes
    ----------
    parent_marginals_ : dict
        ``{variable: array shaped by its parents' cardinalities}``; ``1.0`` for roots.
    inference_ : str
        The engine used: ``"junction-tree"``, ``"elimination"`` or ``"sampling"``.
    n_features_ : int
        Length of the feature map.

    Raises
    ------
    OptionTypeError
        When ``network`` is not a BayesianNetwork.
    OptionError
        For an unknown ``inference`` or ``information``.

    References
    ----------
    .. [1] Leppä-aho, Silander & Roos (2020). Bayesian network Fisher kernel for
       categorical feature spaces. Behaviormetrika 47, 81-103.

    Examples
    --------
    Sec. 5.1 of [1]_: two independent binary variables, with and without an arc.

    >>> import numpy as np
    >>> from bnfisher import BayesianNetwork
    >>> states = {"A": [0, 1], "B": [0, 1]}
    >>> empty = BayesianNetwork({}, {"A": [0.7, 0.3], "B": [0.4, 0.6]}, states)
    >>> arc = BayesianNetwork({"B": ["A"]}, {"A": [0.7, 0.3], "B": [[0.4, 0.6], [0.4, 0.6]]}, states)
    >>> x = np.array([[0, 0]])
    >>> values = FisherKernel(empty).gram(x)[0, 0], FisherKernel(arc).gram(x)[0, 0]
    >>> np.allclose(values, [1 + 13 / 14, 2 + 4 / 7])
    True
    """

    def __init__(
        self,
        network: BayesianNetwork,
        *,
        inference: str = "auto",
        information: str = "fisher",
        normalize: bool = False,
        max_table_size: int = DEFAULT_MAX_TABLE_SIZE,
        n_samples: int = 10**6,
        random_state=None,
        handle_unknown: str = "error",
    ):
        if not isinstance(network, BayesianNetwork):
            raise OptionTypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")
        check_option(inference, "inference", INFERENCE_METHODS)
        self.handle_unknown = check_option(handle_unknown, "handle_unknown", ("error", "marginalize"))
        check_option(information, "information", ("fisher", "identity"))
        self.network = network
        self.inference = inference
        self.information = information
        self.normalize = bool(normalize)
        self.max_table_size = max_table_size
        self.n_samples = n_samples
        self.random_state = random_state
        if information == "fisher":
            self.parent_marginals_, self.inference_ = parent_marginals(
                network, inference, max_table_size=max_table_size, n_samples=n_samples, random_state=random_state
            )
        else:
            self.parent_marginals_, self.inference_ = None, "none"
        tables, valid = [], []
        for i, v in enumerate(network.variables):
            r = int(network.cardinalities[i])
            theta = np.asarray(network.cpts[v], dtype=np.float64).reshape(-1, r)
            q = theta.shape[0]
            if information == "fisher":
                marginal = np.asarray(self.parent_marginals_[v], dtype=np.float64).reshape(-1)
                table, ok = _fisher_block_features(theta, marginal)
            else:
                table, ok = _identity_block_features(theta)
            tables.append(table.reshape(q * r, table.shape[-1]))
            valid.append(ok.reshape(q * r))
        self._set_tables(tables, valid)

    def gram(self, X, Y=None, dense_output: bool = True):
        """Kernel matrix ``K[a, b] = K(X[a], Y[b])`` (Theorem 1, eq. 2).

        Parameters
        ----------
        X, Y : DataFrame, ndarray of int or EncodedData
            ``Y`` defaults to ``X``.
        dense_output : bool, default=True
            Return an ndarray (else a sparse matrix from the sparse feature map).

        Returns
        -------
        ndarray of shape (n_rows_X, n_rows_Y)

        Notes
        -----
        Variables are grouped by parent set.  A group's kernel is block diagonal
        in its parent configuration, ``[pi(x) = pi(y)] <f(x), f(y)>`` with
        ``f`` the concatenated per-variable blocks.  Each group is computed either
        as columns of one dense matrix product (cheap when a configuration covers
        many rows) or as one small product per configuration added into its rows
        and columns (cheap when there are many configurations), whichever costs
        less.
        """
        if not dense_output:
            return super().gram(X, Y, dense_output=False)
        codes_x = self.encode(X).codes
        codes_y = codes_x if Y is None else self.encode(Y).codes
        if any(c.shape[0] and c.min() < 0 for c in (codes_x, codes_y)):  # marginalized kernel: from the embedding
            return super().gram(X, Y)
        check_allocation(8.0 * codes_x.shape[0] * codes_y.shape[0],
                         f"A {codes_x.shape[0]} x {codes_y.shape[0]} Gram matrix",
                         "use `embed` (the exact sparse feature map) with a linear method, or `mmd` / `set_kernel`.")
        gram = self._raw_gram(codes_x, codes_y, symmetric=Y is None)
        if self.normalize:
            norm_x = np.sqrt(np.maximum(self._raw_diag(codes_x), 0.0))
            norm_y = norm_x if Y is None else np.sqrt(np.maximum(self._raw_diag(codes_y), 0.0))
            with np.errstate(divide="ignore"):  # rows with K(x, x) = 0 become zero rows
                gram *= np.where(norm_x > 0, 1.0 / norm_x, 0.0)[:, None]
                gram *= np.where(norm_y > 0, 1.0 / norm_y, 0.0)[None, :]
        return gram

    def _group_features(self, codes: np.ndarray, members: list) -> np.ndarray:
        """Dense ``(n_rows, sum d_i)`` block features of the variables in ``members``."""
        return np.hstack([self._tables[i][self.cell_index(codes, i)] for i in members])

    def _raw_gram(self, codes_x: np.ndarray, codes_y: np.ndarray, symmetric: bool) -> np.ndarray:
        cards = self.network.cardinalities
        n_x, n_y = codes_x.shape[0], codes_y.shape[0]
        groups: dict = {}
        for i, family in enumerate(self.families):
            if self.block_width(i):
                groups.setdefault(tuple(sorted(family[:-1])), []).append(i)
        dense_x, dense_y, scattered = [], [], []
        for parents, members in groups.items():
            features_x = self._group_features(codes_x, members)
            features_y = features_x if symmetric else self._group_features(codes_y, members)
            width = features_x.shape[1]
            config_x = configuration_index(codes_x, parents, cards)
            config_y = config_x if symmetric else configuration_index(codes_y, parents, cards)
            q = n_configurations(cards, parents)
            count_x = np.bincount(config_x, minlength=q)
            count_y = count_x if symmetric else np.bincount(config_y, minlength=q)
            shared = np.flatnonzero((count_x > 0) & (count_y > 0))
            # Cost model (this class of machine): a dense product costs ~0.007 ns per
            # multiply-add, a scattered addition ~15 ns per cell, a ratio of ~2000.
            product_cost = float(n_x) * n_y * shared.size * width
            scatter_cost = 2000.0 * float(np.dot(count_x[shared], count_y[shared]))
            if product_cost <= scatter_cost:
                compact = np.full(q, -1, dtype=np.int64)
                compact[shared] = np.arange(shared.size)
                dense_x.append(_spread(features_x, compact[config_x], shared.size))
                dense_y.append(dense_x[-1] if symmetric else _spread(features_y, compact[config_y], shared.size))
            else:
                scattered.append((features_x, features_y, config_x, config_y, shared))
        if dense_x:
            left = np.hstack(dense_x)
            # A distinct right operand makes numpy call GEMM: OpenBLAS's SYRK, which
            # numpy uses for ``A @ A.T``, is about 2x slower here for narrow A.
            right = left.copy() if symmetric else np.hstack(dense_y)
            gram = left @ right.T
        else:
            gram = np.zeros((n_x, n_y))
        for features_x, features_y, config_x, config_y, shared in scattered:
            rows_x = _rows_by_configuration(config_x, shared)
            rows_y = rows_x if symmetric else _rows_by_configuration(config_y, shared)
            for index_x, index_y in zip(rows_x, rows_y):
                gram[np.ix_(index_x, index_y)] += features_x[index_x] @ features_y[index_y].T
        return gram

    def __repr__(self) -> str:
        return (
            f"FisherKernel({self.network!r}, information={self.information!r}, normalize={self.normalize}, "
            f"inference_={self.inference_!r})"
        )


def _fisher_block_features(theta: np.ndarray, marginal: np.ndarray):
    """``phi_j(a)_k = (delta_ak / sqrt(theta_jk) - sqrt(theta_jk)) / sqrt(P_j)`` for every j, a, k."""
    q, r = theta.shape
    if r == 1:  # one state: no free parameters, no features
        return np.zeros((q, 1, 0)), np.ones((q, 1), dtype=bool)
    valid = (theta > 0) & (marginal[:, None] > 0)
    root = np.sqrt(theta)
    with np.errstate(divide="ignore", invalid="ignore"):  # impossible rows are masked by `valid`
        inverse_root_marginal = np.where(marginal > 0, 1.0 / np.sqrt(marginal), 0.0)
        diagonal = np.where(theta > 0, 1.0 / root, 0.0)
    table = -np.broadcast_to(root[:, None, :], (q, r, r)).copy()
    table[:, np.arange(r), np.arange(r)] += diagonal
    table *= inverse_root_marginal[:, None, None]
    table[~valid] = 0.0
    return table, valid


def _identity_block_features(theta: np.ndarray):
    """Raw score of eq. 8: ``s_k = [a = k] / theta_k - [a = r] / theta_r`` for k < r."""
    q, r = theta.shape
    valid = theta > 0
    with np.errstate(divide="ignore"):  # impossible rows are masked by `valid`
        inverse = np.where(valid, 1.0 / theta, 0.0)
    table = np.zeros((q, r, r - 1))
    table[:, np.arange(r - 1), np.arange(r - 1)] = inverse[:, : r - 1]
    table[:, r - 1, :] = -inverse[:, r - 1 : r]
    return table, valid


def _spread(features: np.ndarray, block: np.ndarray, n_blocks: int) -> np.ndarray:
    """Place each row's features in its configuration's block of columns (zeros elsewhere).

    Rows whose configuration is not shared (block -1) stay zero.
    """
    n_rows, width = features.shape
    dense = np.zeros((n_rows, n_blocks * width))
    keep = np.flatnonzero(block >= 0)
    columns = block[keep, None] * width + np.arange(width)
    dense[keep[:, None], columns] = features[keep]
    return dense


def _rows_by_configuration(config: np.ndarray, shared: np.ndarray) -> list:
    """Row indices of each configuration in ``shared``, via one stable sort."""
    order = np.argsort(config, kind="stable")
    bounds = np.searchsorted(config[order], np.stack([shared, shared + 1]))
    return [order[start:stop] for start, stop in zip(bounds[0], bounds[1])]


class OverlapKernel(FamilyKernel):
    """Overlap (Hamming) kernel ``K(x, y) = sum_i [x_i = y_i]``: the inner product of one-hot rows.

    A structure-free baseline for the Fisher kernel, with the same public API
    (:class:`FamilyKernel`): every variable is its own family with no parents and
    one-hot cell features, so ``mmd_test`` and ``select_representatives`` take it
    as they take a :class:`FisherKernel`.

    Parameters
    ----------
    network : BayesianNetwork
        Supplies the variables and states (its CPTs and arcs are not used).

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher import BayesianNetwork
    >>> net = BayesianNetwork({}, {"a": [0.5, 0.5], "b": [0.5, 0.5]}, {"a": [0, 1], "b": [0, 1]})
    >>> OverlapKernel(net).gram(np.array([[0, 1], [0, 0]])).tolist()
    [[2.0, 1.0], [1.0, 2.0]]
    """

    def __init__(self, network: BayesianNetwork):
        if not isinstance(network, BayesianNetwork):
            raise OptionTypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")
        # Only the variables and states matter: the same network without arcs (uniform CPTs).
        states = {v: network.states[v] for v in network.variables}
        self.network = BayesianNetwork({}, {v: np.full(len(s), 1.0 / len(s)) for v, s in states.items()}, states,
                                       schema=network.schema)
        cards = self.network.cardinalities
        self._set_tables([np.eye(int(r)) for r in cards], [np.ones(int(r), dtype=bool) for r in cards])

    def __repr__(self) -> str:
        return f"OverlapKernel(n_variables={len(self.network.variables)})"
