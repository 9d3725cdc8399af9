r"""The Fisher kernel of a discrete Bayesian network (Theorem 1, eq. 2) as a family kernel.

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
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher._utils.validation import check_option
from bnfisher.bn.inference.exact import DEFAULT_MAX_TABLE_SIZE, INFERENCE_METHODS
from bnfisher.bn.inference.marginals import parent_marginals
from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.counts import configuration_index, n_configurations
from bnfisher.exceptions import DataError, OptionTypeError
from bnfisher.kernels.base import FamilyKernel
from bnfisher.kernels.overlap import _identity_block_features

__all__ = ['FisherKernel']


class FisherKernel(FamilyKernel):
    """Fisher kernel ``K(x, y) = s(x)^T I^{-1} s(y)`` of a discrete Bayesian network.

    Parameters
    ----------
    network : BayesianNetwork
        The model; every CPT entry used by the data must be > 0 (Theorem 1
        assumes ``theta_ijk > 0``).
    inference : {"auto", "exact", "junction-tree", "elimination", "sampling"}, default="auto"
        How the parent marginals ``P(pi_i(D) = j)`` are computed; see
        :func:`bnfisher.bn.inference.parent_marginals`.
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
        # The (q, r, r) feature tables, checked against memory before any is built.
        check_allocation(8.0 * sum(n_configurations(network.cardinalities, p) * int(network.cardinalities[i]) ** 2
                                   for i, p in enumerate(network.parent_indices())),
                         "The Fisher kernel's per-cell feature tables", "limit the parents (`max_parents`) or use "
                         "variables with fewer states.")
        tables, valid = [], []
        for i, v in enumerate(network.variables):
            r = int(network.cardinalities[i])
            theta = np.asarray(network.cpts[v], dtype=np.float64).reshape(-1, r)
            q = theta.shape[0]
            if information == "fisher":
                marginal = np.asarray(self.parent_marginals_[v], dtype=np.float64).reshape(-1)
                _check_cell_probabilities(network, i, theta, marginal)
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


#: Smallest P(parents = j) * theta_jk of a possible cell: the features are 1 / sqrt of it, their products 1 / it.
MIN_CELL_PROBABILITY = 1e-100


def _check_cell_probabilities(network: BayesianNetwork, i: int, theta: np.ndarray, marginal: np.ndarray) -> None:
    """Refuse cells so improbable that the kernel's features overflow (their products would be inf or NaN)."""
    product = marginal[:, None] * theta
    tiny = (product > 0) & (product < MIN_CELL_PROBABILITY)
    if not tiny.any():
        return
    j, k = (int(x[0]) for x in np.nonzero(tiny))
    v = network.variables[i]
    parents = network.parents[v]
    cards = [len(network.states[p]) for p in parents]
    config = np.unravel_index(j, cards) if parents else ()
    where = ", ".join(f"{p}={network.states[p][c]!r}" for p, c in zip(parents, config))
    raise DataError(
        f"Variable {v!r}, state {network.states[v][k]!r}{' given ' + where if where else ''}: P(parents) x theta = "
        f"{product[j, k]:.3g}, below {MIN_CELL_PROBABILITY:g}; the Fisher kernel's features there (1 / sqrt of it) "
        "overflow and every statistic would be inf or NaN. Refit the CPTs with a pseudocount "
        "(BayesianNetwork.from_data(..., pseudocount=1)) or smooth that table.")


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
