"""The overlap (Hamming) kernel as a family kernel: the baseline of the paper's experiments."""

from __future__ import annotations

import numpy as np

from bnfisher.bn.network import BayesianNetwork
from bnfisher.exceptions import OptionTypeError
from bnfisher.kernels.base import FamilyKernel

__all__ = ['OverlapKernel']


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
