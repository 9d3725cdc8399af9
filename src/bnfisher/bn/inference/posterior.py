"""Class posteriors of Bayesian-network classifiers, vectorised over rows."""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import sparse as sp
from bnfisher.data.counts import configuration_index, n_configurations

__all__ = ['ClassPosterior']


class ClassPosterior:
    """Exact class posteriors ``log P(C = c | x)`` of one set of rows under changing CPTs.

    Only the families that contain the class depend on it (the others add the same
    term to every class and cancel).  Their CPTs are read with the class axis moved
    last, so one row gather per family gives ``log theta`` for every class value at
    once.  The configuration indices of the rows are computed once, in the
    constructor; :meth:`log_posterior` then costs one gather per class family.

    Parameters
    ----------
    families : list of tuple
        Column indices ``parents + (child,)`` of every variable.
    cardinalities : sequence of int
    codes : ndarray of shape (n_rows, n_variables)
        The rows; the class column is ignored.
    class_position : int

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0, 0], [1, 0]])          # columns: class, feature
    >>> posterior = ClassPosterior([(0,), (0, 1)], [2, 2], codes, class_position=0)
    >>> log_tables = [np.log([0.5, 0.5]), np.log([0.9, 0.1, 0.2, 0.8])]
    >>> np.round(np.exp(posterior.log_posterior(log_tables)), 3).tolist()
    [[0.818, 0.182], [0.818, 0.182]]
    """

    def __init__(self, families: list, cardinalities, codes: np.ndarray, class_position: int):
        self.cardinalities = np.asarray(cardinalities)
        self.n_classes = int(self.cardinalities[class_position])
        n_rows = codes.shape[0]
        # A design matrix with a row per (row, class value) and a 1 in the cell each class family reads there:
        # the joint log-probabilities of every row and class under m models are one sparse x dense product.
        self.class_families, columns, offset = [], [], 0
        completed = np.array(codes, dtype=np.intp, copy=True)
        for i, family in enumerate(families):
            if class_position not in family:
                continue
            size = n_configurations(self.cardinalities, family)
            per_class = []
            for c in range(self.n_classes):
                completed[:, class_position] = c
                per_class.append(offset + configuration_index(completed, family, self.cardinalities))
            columns.append(np.stack(per_class, axis=1))  # (n_rows, n_classes)
            self.class_families.append((i, offset, size))
            offset += size
        indices = np.stack(columns, axis=2).reshape(-1) if columns else np.zeros(0, dtype=np.intp)
        width = len(columns)
        self._design = sp.csr_matrix((np.ones(indices.size), indices, np.arange(0, indices.size + 1, max(width, 1))
                                      if width else np.zeros(n_rows * self.n_classes + 1, dtype=np.intp)),
                                     shape=(n_rows * self.n_classes, offset))
        self.n_rows = n_rows

    def log_posterior(self, log_tables: list) -> np.ndarray:
        """``(n_rows, n_classes)`` log posteriors from flat log CPTs (one per family).

        Parameters
        ----------
        log_tables : list of ndarray
            ``log theta`` of every family, flat (mixed radix over the family).

        Returns
        -------
        ndarray of shape (n_rows, n_classes)
            ``log P(C = c | x)``; rows impossible under every class are ``nan``
            (the caller decides what that means).
        """
        return self.log_posterior_many([np.asarray(t)[None] for t in log_tables])[:, :, 0]

    def log_posterior_many(self, log_tables: list) -> np.ndarray:
        """Log posteriors under many models at once: one sparse x dense product.

        Parameters
        ----------
        log_tables : list of ndarray
            Per family, ``(n_models, cells)``: the flat log CPT of every model.

        Returns
        -------
        ndarray of shape (n_rows, n_classes, n_models)
        """
        joint = self.log_joint_many(log_tables)
        with np.errstate(invalid="ignore"):  # -inf - -inf where every class is ruled out: nan, as documented
            return joint - self.log_normaliser(joint)[:, None, :]

    @staticmethod
    def log_normaliser(joint: np.ndarray) -> np.ndarray:
        """Return ``log sum_c exp(joint[:, c, :])`` (stable; ``nan`` where every class is ``-inf``).

        Parameters
        ----------
        joint : ndarray of shape (n_rows, n_classes, n_models)
            From :meth:`log_joint_many`.

        Returns
        -------
        ndarray of shape (n_rows, n_models)
        """
        top = joint.max(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return top + np.log(np.exp(joint - top[:, None, :]).sum(axis=1))

    def log_joint_many(self, log_tables: list) -> np.ndarray:
        """Unnormalised ``log P(C = c, x)`` (class families only) under many models: one sparse x dense product.

        Parameters
        ----------
        log_tables : list of ndarray
            Per family, ``(n_models, cells)``.

        Returns
        -------
        ndarray of shape (n_rows, n_classes, n_models)
        """
        n_models = np.asarray(log_tables[0]).shape[0] if log_tables else 1
        if not self.class_families:
            return np.zeros((self.n_rows, self.n_classes, n_models))
        stacked = np.concatenate([np.asarray(log_tables[i], dtype=np.float64).T for i, _, _ in self.class_families])
        return (self._design @ stacked).reshape(self.n_rows, self.n_classes, n_models)
