"""The Fisher kernel of a discrete Bayesian network (Theorem 1), its exact sparse
feature map, the set kernel (Sec. 6.2) and the MMD (Sec. 6.3, eq. 10).

Feature map
-----------
Theorem 1 (eq. 2) gives, per variable ``i`` with parent configuration ``j = pi_i(x)``,

.. math::

    K_i(x, y) = \\frac{[\\pi_i(x) = \\pi_i(y)]}{P(\\pi_i = j)}
                \\left(\\frac{[x_i = y_i]}{\\theta_{i j x_i}} - 1\\right).

With the block vector ``phi_ij(a)_k = (delta_ak / sqrt(theta_ijk) - sqrt(theta_ijk)) / sqrt(P_ij)``
one checks ``<phi_ij(a), phi_ij(b)> = (delta_ab / theta_ija - 1) / P_ij``, so
``K(x, y) = <Phi(x), Phi(y)>`` with ``Phi(x)`` the concatenation over variables of
``phi_{i, pi_i(x)}(x_i)`` placed in the block of configuration ``pi_i(x)``: an exact,
sparse map with ``sum_i r_i`` non-zeros per row.  Hence the set kernel is the inner
product of mean embeddings, and the mean embedding depends only on the family count
tables ``N_ijk`` -- MMD costs one pass over the rows, never an N x M matrix.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from ._validation import check_option
from .counts import configuration_index, count_family
from .encoding import EncodedData
from .inference import DEFAULT_MAX_TABLE_SIZE, INFERENCE_METHODS, parent_marginals
from .network import BayesianNetwork

__all__ = ["FisherKernel", "OverlapKernel"]



class FisherKernel:
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
    max_table_size, n_samples, random_state
        Passed to the inference engine (sampling uses ``random_state``).

    Attributes
    ----------
    parent_marginals_ : dict
        ``{variable: array shaped by its parents' cardinalities}``; ``1.0`` for roots.
    inference_ : str
        The engine used: ``"junction-tree"``, ``"elimination"`` or ``"sampling"``.
    n_features_ : int
        Length of the feature map.

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
        random_state=0,
    ):
        if not isinstance(network, BayesianNetwork):
            raise TypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")
        check_option(inference, "inference", INFERENCE_METHODS)
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
        self._build_tables()

    # ------------------------------------------------------------------ tables
    def _build_tables(self) -> None:
        network = self.network
        cards = network.cardinalities
        self._parent_index = network.parent_indices()
        self._tables = []  # per variable: (q * r, d) feature rows, zeros where invalid
        self._valid = []  # per variable: (q * r,) bool, False where the row has probability 0
        self._widths = []
        self._offsets = [0]
        for i, v in enumerate(network.variables):
            r = int(cards[i])
            theta = np.asarray(network.cpts[v], dtype=np.float64).reshape(-1, r)
            q = theta.shape[0]
            if self.information == "fisher":
                marginal = np.asarray(self.parent_marginals_[v], dtype=np.float64).reshape(-1)
                table, valid = _fisher_block_features(theta, marginal)
            else:
                table, valid = _identity_block_features(theta)
            d = table.shape[-1]
            self._tables.append(table.reshape(q * r, d))
            self._valid.append(valid.reshape(q * r))
            self._widths.append(d)
            self._offsets.append(self._offsets[-1] + q * d)
        self.n_features_ = int(self._offsets[-1])

    def _encode(self, X) -> EncodedData:
        return self.network.encode(X)

    def _family_index(self, codes: np.ndarray, i: int) -> np.ndarray:
        cards = self.network.cardinalities
        return configuration_index(codes, self._parent_index[i] + (i,), cards)

    def _check_possible(self, i: int, flat: np.ndarray, codes: np.ndarray) -> None:
        bad = ~self._valid[i][flat]
        if bad.any():
            row = int(np.argmax(bad))
            v = self.network.variables[i]
            raise ValueError(
                f"Row {row} has {v!r} = {self.network.states[v][codes[row, i]]!r}, which has probability 0 "
                "under the network given its parents; the Fisher kernel is undefined there (Theorem 1 assumes "
                "theta > 0). Fit the network with a pseudocount > 0."
            )

    # ------------------------------------------------------------------- rows
    def embed(self, X) -> sp.csr_matrix:
        """Exact feature map: ``embed(X) @ embed(Y).T == gram(X, Y)``.

        Parameters
        ----------
        X : DataFrame, ndarray of int or EncodedData
            Rows to embed (labels in a DataFrame, codes in ``network.variables``
            order in an array).

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_rows, n_features_)
            (For a Dask DataFrame: a Dask array of CSR blocks, one per partition.)
            Column ``offset_i + j * d_i + k`` belongs to variable ``i``, parent
            configuration ``j`` (mixed radix, C order) and state ``k``
            (:meth:`feature_names`).
        """
        if type(X).__module__.startswith("dask"):
            return self._embed_dask(X)
        codes = self._encode(X).codes
        matrix = self._embed_codes(codes)
        if self.normalize:
            norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
            with np.errstate(divide="ignore"):  # zero rows stay zero
                scale = np.where(norms > 0, 1.0 / norms, 0.0)
            matrix = sp.csr_matrix(sp.diags(scale) @ matrix)
        return matrix

    def _embed_dask(self, frame):
        """A Dask array of CSR blocks, one per partition (row-wise work, no counting)."""
        import dask
        import dask.array as da

        parts = frame.to_delayed()
        lengths = dask.compute(*[dask.delayed(len)(part) for part in parts])
        blocks = [
            da.from_delayed(dask.delayed(self.embed)(part), shape=(n, self.n_features_), dtype=np.float64,
                            meta=sp.csr_matrix((0, self.n_features_)))
            for part, n in zip(parts, lengths)
        ]
        return da.concatenate(blocks, axis=0)

    def _embed_codes(self, codes: np.ndarray) -> sp.csr_matrix:
        n_rows = codes.shape[0]
        width = int(sum(self._widths))
        data = np.empty((n_rows, width))
        indices = np.empty((n_rows, width), dtype=np.int64)
        start = 0
        for i, d in enumerate(self._widths):
            if d == 0:
                continue
            flat = self._family_index(codes, i)
            self._check_possible(i, flat, codes)
            r = int(self.network.cardinalities[i])
            config = flat // r
            data[:, start : start + d] = self._tables[i][flat]
            indices[:, start : start + d] = (self._offsets[i] + config * d)[:, None] + np.arange(d)
            start += d
        indptr = np.arange(0, n_rows * width + 1, width, dtype=np.int64)
        return sp.csr_matrix((data.ravel(), indices.ravel(), indptr), shape=(n_rows, self.n_features_))

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
        codes_x = self._encode(X).codes
        codes_y = codes_x if Y is None else self._encode(Y).codes
        if not dense_output:
            EX = self.embed(codes_x)
            EY = EX if Y is None else self.embed(codes_y)
            return (EX @ EY.T).tocsr()
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
        parts = []
        for i in members:
            flat = self._family_index(codes, i)
            self._check_possible(i, flat, codes)
            parts.append(self._tables[i][flat])
        return np.hstack(parts)

    def _raw_gram(self, codes_x: np.ndarray, codes_y: np.ndarray, symmetric: bool) -> np.ndarray:
        cards = self.network.cardinalities
        n_x, n_y = codes_x.shape[0], codes_y.shape[0]
        groups: dict = {}
        for i, d in enumerate(self._widths):
            if d:
                groups.setdefault(tuple(sorted(self._parent_index[i])), []).append(i)
        dense_x, dense_y, scattered = [], [], []
        for parents, members in groups.items():
            features_x = self._group_features(codes_x, members)
            features_y = features_x if symmetric else self._group_features(codes_y, members)
            width = features_x.shape[1]
            config_x = configuration_index(codes_x, parents, cards)
            config_y = config_x if symmetric else configuration_index(codes_y, parents, cards)
            q = int(np.prod([cards[p] for p in parents], dtype=np.int64)) if parents else 1
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

    def _raw_diag(self, codes: np.ndarray) -> np.ndarray:
        E = self._embed_codes(codes)
        return np.asarray(E.multiply(E).sum(axis=1)).ravel()

    def diag(self, X) -> np.ndarray:
        """``K(x, x)`` for every row, without building the Gram matrix."""
        raw = self._raw_diag(self._encode(X).codes)
        return np.where(raw > 0, 1.0, 0.0) if self.normalize else raw

    # -------------------------------------------------------------------- sets
    def mean_embedding(self, X) -> np.ndarray:
        """Mean of the feature map over the rows of ``X``, from count tables.

        Without normalisation this needs only the family counts ``N_ijk``; one
        ``bincount`` per variable.  Returns zeros for an empty ``X``.
        """
        provider = self._as_provider(X)
        if provider is not None:
            return self._mean_embedding_from_provider(provider)
        encoded = self._encode(X)
        codes = encoded.codes
        if codes.shape[0] == 0:
            return np.zeros(self.n_features_)
        if self.normalize:
            return np.asarray(self.embed(encoded).mean(axis=0)).ravel()
        cards = self.network.cardinalities
        counts = [
            count_family(codes, self._parent_index[i] + (i,), cards).reshape(-1) if d else None
            for i, d in enumerate(self._widths)
        ]
        return self.mean_embedding_from_counts(counts, codes.shape[0])

    def _as_provider(self, X):
        """A counts provider for Dask data or providers (None for in-memory rows)."""
        if type(X).__module__.startswith("dask") or (isinstance(X, (str, os.PathLike)) and
                                                      str(X).endswith((".parquet", ".pq"))):
            from .scale import DaskCounts

            return DaskCounts(X, states=self.network.states, variables=self.network.variables)
        if hasattr(X, "counts") and hasattr(X, "variables") and not isinstance(X, EncodedData):
            return X
        return None

    def _mean_embedding_from_provider(self, provider) -> np.ndarray:
        if self.normalize:
            raise ValueError("With normalize=True the mean embedding is not a function of the counts.")
        network = self.network
        column = {v: i for i, v in enumerate(provider.variables)}
        for v in network.variables:
            if v not in column:
                raise ValueError(f"Column {v!r} required by the model is absent from the data.")
            if tuple(provider.states[v]) != tuple(network.states[v]):
                raise ValueError(f"Column {v!r} has states {provider.states[v]} in the data but "
                                 f"{network.states[v]} in the model; build the provider with the model's states.")
        families = [tuple(column[p] for p in network.parents[v]) + (column[v],) for v in network.variables]
        n_rows = provider.n_rows
        if n_rows == 0:
            return np.zeros(self.n_features_)
        return self.mean_embedding_from_counts(provider.counts(families), n_rows)

    def mean_embedding_from_counts(self, family_counts: list, n_rows: int | float) -> np.ndarray:
        """Mean embedding from family count tables.

        Parameters
        ----------
        family_counts : list
            ``family_counts[i]`` is the count table of ``parents + (variable,)`` of
            ``network.variables[i]`` (any shape with ``q_i * r_i`` cells), e.g. from a
            counts provider.
        n_rows : int or float
            Number (or total weight) of rows counted.
        """
        if self.normalize:
            raise ValueError("With normalize=True the mean embedding is not a function of the counts.")
        mean = np.zeros(self.n_features_)
        for i, d in enumerate(self._widths):
            if d == 0:
                continue
            counts = np.asarray(family_counts[i], dtype=np.float64).reshape(-1)
            if np.any(counts[~self._valid[i]] > 0):
                v = self.network.variables[i]
                raise ValueError(
                    f"The data contains a configuration of {v!r} and its parents with probability 0 under the "
                    "network; the Fisher kernel is undefined there. Fit with a pseudocount > 0."
                )
            r = int(self.network.cardinalities[i])
            frequencies = (counts / n_rows).reshape(-1, r)
            table = self._tables[i].reshape(-1, r, d)
            # mu_ij = sum_a (N_ija / N) phi_ij(a): one block of width d per configuration j.
            mean[self._offsets[i] : self._offsets[i + 1]] = np.einsum("ja,jad->jd", frequencies, table).reshape(-1)
        return mean

    def set_kernel(self, X, Y) -> float:
        """Set kernel ``K(X, Y) = (1 / NM) sum_l sum_m K(x_l, y_m)`` (Sec. 6.2).

        Computed as the inner product of mean embeddings (count tables only); 0
        when either set is empty, by the paper's convention.
        """
        mean_x, mean_y = self.mean_embedding(X), self.mean_embedding(Y)
        return float(mean_x @ mean_y)

    def mmd(self, X, Y) -> float:
        """Squared maximum mean discrepancy ``d(X, Y)`` of eq. 10.

        ``d(X, Y) = ||mu_X - mu_Y||^2`` with the mean embeddings computed from count
        tables, so the cost is linear in the number of rows.

        Raises
        ------
        ValueError
            If either set is empty.
        """
        sets = []
        for data in (X, Y):
            provider = self._as_provider(data)
            data = provider if provider is not None else self._encode(data)
            if data.n_rows == 0:
                raise ValueError("MMD needs two non-empty sets of rows.")
            sets.append(data)
        difference = self.mean_embedding(sets[0]) - self.mean_embedding(sets[1])
        return float(difference @ difference)

    # ------------------------------------------------------------------ names
    def feature_names(self) -> list:
        """``(variable, parent configuration as a dict, state label)`` for every feature column."""
        network = self.network
        names = []
        for i, v in enumerate(network.variables):
            parents = network.parents[v]
            parent_cards = [len(network.states[p]) for p in parents]
            for j in range(int(np.prod(parent_cards, dtype=np.int64)) if parents else 1):
                position = np.unravel_index(j, parent_cards) if parents else ()
                config = {p: network.states[p][k] for p, k in zip(parents, position)}
                for k in range(self._widths[i]):
                    names.append((v, config, network.states[v][k]))
        return names

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
    """Place each row's features in its configuration's block of columns (zeros elsewhere);
    rows whose configuration is not shared (block -1) stay zero."""
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


class OverlapKernel:
    """Overlap (Hamming) kernel ``K(x, y) = sum_i [x_i = y_i]``: the inner product of one-hot rows.

    A structure-free baseline for the Fisher kernel: same interface for ``embed``,
    ``gram``, ``mean_embedding`` and ``mmd``; ``network`` only fixes the variables
    and their states.

    Parameters
    ----------
    network : BayesianNetwork
        Supplies the variables and states (its CPTs are not used).

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher import BayesianNetwork
    >>> net = BayesianNetwork({}, {"a": [0.5, 0.5], "b": [0.5, 0.5]}, {"a": [0, 1], "b": [0, 1]})
    >>> OverlapKernel(net).gram(np.array([[0, 1], [0, 0]])).tolist()
    [[2.0, 1.0], [1.0, 2.0]]
    """

    normalize = False

    def __init__(self, network: BayesianNetwork):
        if not isinstance(network, BayesianNetwork):
            raise TypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")
        self.network = network
        cards = network.cardinalities
        self._offsets = np.concatenate([[0], np.cumsum(cards)[:-1]]).astype(np.int64)
        self.n_features_ = int(cards.sum())

    def embed(self, X) -> sp.csr_matrix:
        """One-hot rows, shape (n_rows, sum r_i)."""
        codes = self.network.encode(X).codes
        n_rows, n_vars = codes.shape
        indices = (codes + self._offsets[None, :]).ravel()
        indptr = np.arange(0, n_rows * n_vars + 1, n_vars, dtype=np.int64)
        return sp.csr_matrix((np.ones(n_rows * n_vars), indices, indptr), shape=(n_rows, self.n_features_))

    def gram(self, X, Y=None) -> np.ndarray:
        """``K[a, b]`` = number of variables on which ``X[a]`` and ``Y[b]`` agree."""
        EX = self.embed(X)
        EY = EX if Y is None else self.embed(Y)
        return (EX @ EY.T).toarray()

    def mean_embedding(self, X) -> np.ndarray:
        """Per-variable state frequencies, concatenated."""
        E = self.embed(X)
        return np.asarray(E.mean(axis=0)).ravel() if E.shape[0] else np.zeros(self.n_features_)

    def mmd(self, X, Y) -> float:
        """Squared MMD (eq. 10) under the overlap kernel."""
        difference = self.mean_embedding(X) - self.mean_embedding(Y)
        return float(difference @ difference)
