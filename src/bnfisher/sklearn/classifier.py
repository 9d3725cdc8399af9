"""A scikit-learn classifier backed by a Bayesian network over the features and the class."""

from __future__ import annotations

from typing import Any

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option
from bnfisher.bn.inference.evidence import posteriors_given_rows
from bnfisher.bn.inference.posterior import ClassPosterior
from bnfisher.bn.structure.learn import learn
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.exceptions import DataError, OptionError
from bnfisher.sklearn._base import BaseEstimator, ClassifierMixin, check_is_fitted, require_sklearn
from bnfisher.sklearn._frames import validate_frame, warn_unknown

__all__ = ["BayesianNetworkClassifier"]

_CLASS = "__class__"


class BayesianNetworkClassifier(ClassifierMixin, BaseEstimator):
    """Bayesian network classifier (naive Bayes, TAN, KDB or hill climbing).

    Parameters
    ----------
    structure : {"tan", "kdb", "naive-bayes", "hc"}, default="tan"
        How the network over the features and the class is learned (see
        :func:`bnfisher.learn`); for ``"hc"`` the class is an ordinary variable.
    k : int, default=3
        Maximum feature parents per feature for ``"kdb"``.
    structure_score : str, default="bic"
        Score of ``"hc"`` (named so as not to hide the classifier's ``score`` method).
    max_parents : int, optional
        Parent limit of ``"hc"``.
    pseudocount : float, default=1.0
        Dirichlet pseudocount of the CPTs.
    missing : {"em", "available-case", "error"}, default="em"
        Missing feature values in ``fit`` (see :func:`bnfisher.learn`); at prediction
        time they are always marginalized (exact inference).
    handle_unknown : {"marginalize", "error"}, default="marginalize"
        A feature value not seen in ``fit`` (e.g. a rare category that fell in
        another cross-validation fold) is treated as missing and marginalized, or
        raises.

    Attributes
    ----------
    network_ : BayesianNetwork
        The fitted network; the class variable is named ``"__class__"``.
    classes_ : ndarray
        Class labels, sorted.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Present when ``X`` was a DataFrame.

    Notes
    -----
    ``predict_proba`` is the exact posterior ``P(C | x) ∝ P(x, C)``, computed from
    the joint log-likelihood of every class value and normalised with
    ``logsumexp`` (log space, no underflow).  Every feature value is a label: a
    floating-point column gets one state per distinct value, so bin continuous
    features first (:func:`bnfisher.discretize`).  A value not seen during ``fit``
    is treated as missing and marginalized (the default ``handle_unknown="marginalize"``),
    or, with ``handle_unknown="error"``, is an error naming the column.

    Examples
    --------
    >>> data = load("nursery")
    >>> X, y = data.drop(columns="class"), data["class"]
    >>> clf = BayesianNetworkClassifier(structure="tan").fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    def __init__(self, *, structure: str = "tan", k: int = 3, structure_score: str = "bic", max_parents=None,
                 pseudocount: float = 1.0, missing: str = "em", handle_unknown: str = "marginalize"):
        self.structure = structure
        self.k = k
        self.structure_score = structure_score
        self.max_parents = max_parents
        self.pseudocount = pseudocount
        self.missing = missing
        self.handle_unknown = handle_unknown

    def _frame(self, X, fitting: bool) -> pd.DataFrame:
        return validate_frame(self, X, fitting, reserved=(_CLASS,))

    def fit(self, X, y):
        """Learn the network from features ``X`` and labels ``y``; returns self.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Categorical features (labels).
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self
        """
        if y is None:
            raise DataError("BayesianNetworkClassifier requires y to be passed, but the target y is None.")
        require_sklearn()
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import column_or_1d

        frame = self._frame(X, fitting=True)
        try:
            y = column_or_1d(y, warn=True)
            check_classification_targets(y)
        except (ValueError, TypeError) as exc:  # scikit-learn's own checks (bytes labels are a TypeError there):
            raise DataError(f"`y`: {exc}") from None  # keep their words, in bnfisher's error class
        if len(y) != len(frame):
            raise DataError(f"`y` must be 1-D with one label per row of X ({len(frame)}); got shape {y.shape}.")
        if len(frame) == 0:
            raise DataError("Cannot fit on an empty data set.")
        check_option(self.missing, "missing", ("error", "available-case", "em"))
        check_option(self.handle_unknown, "handle_unknown", ("error", "marginalize"))
        features = Schema.from_data(frame, missing="allow").encode(frame, missing="allow")
        self.classes_, class_codes = np.unique(y, return_inverse=True)
        codes = np.column_stack([features.codes, class_codes])
        states = dict(features.states)
        states[_CLASS] = tuple(c.item() if isinstance(c, np.generic) else c for c in self.classes_)
        encoded = EncodedData(np.asfortranarray(codes), features.variables + (_CLASS,), states)
        # Missing feature values: the structure from available-case counts, the CPTs by EM (or as asked).
        missing = self.missing if codes.min() < 0 else "error"
        common: dict[str, Any] = {"pseudocount": self.pseudocount, "schema": encoded.schema, "missing": missing}
        if self.structure == "hc":
            self.network_ = learn(encoded, "hc", structure_score=self.structure_score, max_parents=self.max_parents,
                                  **common)
        elif self.structure == "kdb":
            self.network_ = learn(encoded, "kdb", class_variable=_CLASS, k=self.k, **common)
        elif self.structure in ("tan", "naive-bayes"):
            self.network_ = learn(encoded, self.structure, class_variable=_CLASS, **common)
        else:
            raise OptionError(f"`structure` must be 'tan', 'kdb', 'naive-bayes' or 'hc'; got {self.structure!r}.")
        return self

    def predict_log_proba(self, X) -> np.ndarray:
        """``log P(C = c | x)`` for every row and class, shape (n_rows, n_classes).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            ``log P(C = c | x)``.

        Raises
        ------
        DataError
            A value unseen in fit (with ``handle_unknown="error"``), or a row impossible under every
            class (``pseudocount=0``).
        """
        check_is_fitted(self, "network_")
        frame = self._frame(X, fitting=False)
        network = self.network_
        features = network.schema.encode(frame, variables=tuple(frame.columns), missing="allow",
                                         handle_unknown=self.handle_unknown)
        if self.handle_unknown == "marginalize":
            warn_unknown(frame, features, network.schema)
        index = {v: i for i, v in enumerate(network.variables)}
        codes = np.empty((features.n_rows, len(network.variables)), dtype=np.intp, order="F")
        for i, v in enumerate(features.variables):
            codes[:, index[v]] = features.codes[:, i]
        incomplete = (codes < 0).any(axis=1)
        codes[:, index[_CLASS]] = 0  # ignored: every class value is scored at once
        families = [parents + (i,) for i, parents in enumerate(network.parent_indices())]
        with np.errstate(divide="ignore"):  # log 0 = -inf for impossible classes
            log_tables = [np.log(network.cpts[v]).reshape(-1) for v in network.variables]
        with np.errstate(invalid="ignore"):  # -inf - (-inf) marks rows impossible under every class; see below
            if incomplete.any():
                log_posterior = self._mixed_log_posterior(families, log_tables, codes, incomplete, index[_CLASS])
            else:
                posterior = ClassPosterior(families, network.cardinalities, codes, index[_CLASS])
                log_posterior = posterior.log_posterior(log_tables)
        impossible = np.isnan(log_posterior).any(axis=1)
        if impossible.any():
            row = int(np.argmax(impossible))
            raise DataError(f"Row {row} of X has probability 0 under every class (a feature configuration never "
                            f"seen with any class in fit, and pseudocount={self.pseudocount}); its class posterior "
                            "is undefined. Fit with a pseudocount > 0.")
        return log_posterior

    def _mixed_log_posterior(self, families, log_tables, codes, incomplete, class_index):
        """Return complete rows' posteriors by table lookups, and the other rows' by exact inference."""
        safe = np.where(codes < 0, 0, codes)  # the lookup path reads every feature; incomplete rows are redone
        out = ClassPosterior(families, self.network_.cardinalities, safe, class_index).log_posterior(log_tables)
        rows = np.flatnonzero(incomplete)
        evidence = codes[rows].copy()
        evidence[:, class_index] = -1
        (found,), _ = posteriors_given_rows(self.network_, evidence, [(class_index,)])
        with np.errstate(divide="ignore"):  # probability 0 classes: log 0 = -inf
            out[rows] = np.log(found)
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing != "error"  # missing features are marginalized
        return tags

    def predict_proba(self, X) -> np.ndarray:
        """Exact class posteriors, shape (n_rows, n_classes).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Raises
        ------
        DataError
            A value unseen in fit (with ``handle_unknown="error"``), or a row impossible under every
            class (``pseudocount=0``).
        """
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """Most probable class of every row.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.

        Raises
        ------
        DataError
            A value unseen in fit (with ``handle_unknown="error"``), or a row impossible under every
            class (``pseudocount=0``).
        """
        log_proba = self.predict_log_proba(X)
        return self.classes_[np.argmax(log_proba, axis=1)]
